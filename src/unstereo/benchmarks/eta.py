"""The MaxPMI constraint (SPEC 1.2): keep a pair when -eta <= MaxPMI <= eta; undefined MaxPMI only for eta = inf."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd

PAPER_ETAS = (math.inf, 1.0, 0.8, 0.65, 0.5, 0.3)


def parse_eta(value: float | str) -> float:
    """An eta from a number or a string ("inf", "unconstrained", "0.65"); must be >= 0."""
    if isinstance(value, str) and value.strip().lower() in ("unconstrained", "none"):
        return math.inf
    try:
        eta = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"eta must be a number >= 0 or 'inf', got {value!r}") from None
    if math.isnan(eta) or eta < 0:
        raise ValueError(f"eta must be a number >= 0 or 'inf', got {value!r}")
    return eta


def format_eta(eta: float | str) -> str:
    """The eta as it appears in file names: Python ``str(float(eta))`` (inf, 1.0, 0.8, 0.65, ...)."""
    return str(parse_eta(eta))


def eta_mask(max_pmi: pd.Series, eta: float | str) -> pd.Series:
    """Boolean mask of the pairs kept under ``eta`` (undefined MaxPMI kept only when eta is inf)."""
    eta = parse_eta(eta)
    if math.isinf(eta):
        return pd.Series(True, index=max_pmi.index)
    values = max_pmi.astype(float)
    return (values >= -eta) & (values <= eta)  # NaN compares False: undefined MaxPMI is dropped


def filter_eta(pairs: pd.DataFrame, eta: float | str) -> pd.DataFrame:
    """The rows of a PAIRS table (``max_pmi`` filled) kept under ``eta``, in their original order."""
    if "max_pmi" not in pairs.columns:
        raise ValueError("pairs table has no max_pmi column: run maxpmi first")
    return pairs.loc[eta_mask(pairs["max_pmi"], eta)].reset_index(drop=True)


def eta_sizes(
    pairs: pd.DataFrame | Mapping[str, pd.DataFrame], etas: Iterable[float | str] = PAPER_ETAS
) -> pd.DataFrame:
    """Benchmark size after each eta: columns ``benchmark, eta, n, fraction`` (fraction of the eta=inf size).

    ``pairs`` is one PAIRS table (grouped by its ``benchmark`` column, in order of appearance) or a mapping
    ``{benchmark: PAIRS table}``.
    """
    if isinstance(pairs, pd.DataFrame):
        groups = {name: df for name, df in pairs.groupby("benchmark", sort=False)}
    else:
        groups = dict(pairs)
    etas = [parse_eta(e) for e in etas]
    rows = []
    for name, df in groups.items():
        total = len(df)
        for eta in etas:
            n = int(eta_mask(df["max_pmi"], eta).sum())
            rows.append({"benchmark": name, "eta": eta, "n": n, "fraction": n / total if total else math.nan})
    return pd.DataFrame(rows, columns=["benchmark", "eta", "n", "fraction"])
