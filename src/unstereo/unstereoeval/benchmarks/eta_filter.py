"""The MaxPMI constraint on pair tables (docs/methods.md#maxpmi-and-eta): the kept rows and the size table
(rules in :mod:`unstereo.unstereoeval.eta`)."""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping

import pandas as pd

from unstereo.unstereoeval.eta import PAPER_ETAS, eta_label, eta_mask, parse_eta, parse_etas

# format_eta: the name this module has always exported for the file-name label.
format_eta = eta_label

__all__ = ["PAPER_ETAS", "eta_sizes", "filter_eta", "format_eta", "parse_eta"]


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
    etas = parse_etas(etas)
    rows = []
    for name, df in groups.items():
        total = len(df)
        for eta in etas:
            n = int(eta_mask(df["max_pmi"], eta).sum())
            rows.append({"benchmark": name, "eta": eta, "n": n, "fraction": n / total if total else math.nan})
    return pd.DataFrame(rows, columns=["benchmark", "eta", "n", "fraction"])
