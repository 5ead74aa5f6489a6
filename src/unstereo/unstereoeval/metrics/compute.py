"""Metrics for every (model, benchmark, eta) of a score table joined with its pair table.

The pair table (PAIRS) supplies the benchmark of each pair and its MaxPMI; the eta filter keeps a pair when
-eta <= max_pmi <= eta (a pair with undefined MaxPMI only for eta = inf, docs/methods.md#maxpmi-and-eta).
Scores of pairs the pair table does not list (e.g. the released score files also hold the pairs the
naturalness filter removed) are left out and logged; a pair without a score for a model is an error.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.tables import METRICS, PAIRS, SCORES, validate
from unstereo.unstereoeval.eta import INF, eta_mask, parse_eta, parse_etas
from unstereo.unstereoeval.metrics import registry
from unstereo.unstereoeval.metrics.core import DEFAULT_EPS, aufc_in_log10, default_eps_grid, fairness_curve

log = get_logger("unstereoeval.metrics")

ETA_INF = INF


def join_scores(scores_df: pd.DataFrame, pairs_df: pd.DataFrame) -> pd.DataFrame:
    """Scores with each pair's benchmark and max_pmi, and ``fm`` = logp_female - logp_male.

    Raises InputError when a model lacks the score of a pair of a benchmark it was scored on.
    """
    validate(scores_df, SCORES, source="scores")
    validate(pairs_df, PAIRS, source="pairs")
    pairs = pairs_df[["pair_id", "benchmark", "max_pmi"]]
    if "template" in scores_df.columns:
        _check_templates(scores_df, pairs_df)
    known = scores_df["pair_id"].isin(pairs["pair_id"])
    if not known.all():
        dropped = scores_df.loc[~known]
        log.info(
            "left out %d score rows of pairs not in the pair table (e.g. %s)",
            len(dropped),
            dropped["pair_id"].iloc[0],
        )
    # Only the columns the metrics read (the registered metrics' inputs): the sentences and metadata would make
    # every group selection slow.
    inputs = ["logp_female", "logp_male"]
    inputs += [
        c for m in registry.all_metrics() for c in m.inputs if c in scores_df.columns and c not in inputs
    ]
    slim = scores_df.loc[known, ["pair_id", "model", *inputs]]
    joined = slim.merge(pairs, on="pair_id", how="inner", validate="many_to_one")
    joined["fm"] = joined["logp_female"].astype(float) - joined["logp_male"].astype(float)
    # Every model must have scored every pair of each benchmark it appears in.
    expected = pairs.groupby("benchmark")["pair_id"].nunique()
    got = joined.groupby(["model", "benchmark"])["pair_id"].nunique()
    for (model, bench), count in got.items():
        if count != expected[bench]:
            have = set(joined.loc[(joined["model"] == model) & (joined["benchmark"] == bench), "pair_id"])
            missing = sorted(set(pairs.loc[pairs["benchmark"] == bench, "pair_id"]) - have)
            raise InputError(
                f"model {model!r} has scores for {count} of the {expected[bench]} pairs of benchmark {bench!r}; "
                f"missing e.g. {missing[:3]}",
                path="scores",
            )
    return joined


def _norm(text: pd.Series) -> pd.Series:
    return text.astype(str).str.replace(r"\s+", " ", regex=True).str.strip()


def _check_templates(scores_df: pd.DataFrame, pairs_df: pd.DataFrame) -> None:
    """Guard against misaligned pair ids: where the score table carries the template it was computed on, it must
    be the pair table's template for (nearly) every pair."""
    have = scores_df[["pair_id", "template"]].dropna().drop_duplicates("pair_id")
    both = have.merge(pairs_df[["pair_id", "template"]], on="pair_id", suffixes=("_scores", "_pairs"))
    if both.empty:
        return
    differ = _norm(both["template_scores"]) != _norm(both["template_pairs"])
    if differ.any():
        ex = both[differ].iloc[0]
        msg = (
            f"{int(differ.sum())} of {len(both)} pairs have another template in the scores than in the pair table, "
            f"e.g. {ex['pair_id']}: {ex['template_scores']!r} vs {ex['template_pairs']!r}"
        )
        if differ.mean() > 0.01:
            raise InputError(msg + " (pair ids misaligned?)", path="scores")
        log.warning(msg)


def _groups(joined: pd.DataFrame, etas: Sequence[float]) -> Iterable[tuple[str, str, float, np.ndarray]]:
    """(model, benchmark, eta, row positions of the pairs kept by eta) for every group, in order of first
    appearance."""
    pmi_all = joined["max_pmi"].to_numpy(dtype=float)
    for (model, bench), idx in joined.groupby(["model", "benchmark"], sort=False).indices.items():
        pmi = pmi_all[idx]
        for eta in etas:
            yield model, bench, eta, idx[eta_mask(pmi, eta)]


def _grid(eps_grid: np.ndarray | None) -> np.ndarray:
    return default_eps_grid() if eps_grid is None else np.asarray(eps_grid, dtype=float)


def compute_metrics(
    scores_df: pd.DataFrame,
    pairs_df: pd.DataFrame,
    etas: Sequence[float | str] = (ETA_INF,),
    eps: float = DEFAULT_EPS,
    eps_grid: np.ndarray | None = None,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """METRICS rows for every (model, benchmark, eta): n, us, us_std, aufc, pd, male_rel_ratio (+ n_female, n_male).

    ``us``, ``us_std``, ``pd`` and ``male_rel_ratio`` are percentages; ``aufc`` integrates US as a fraction over
    ``eps_grid`` (default linspace(0, 6, 101)). ``reference_quirks=True`` reproduces the published numbers: the
    unconstrained AuFC integrates |FM| in log10 (docs/methods.md#quirk-2-log10-aufc), and the thresholds are
    applied in log10 as the reference code does (the same pairs pass: |log10 e^x| <= log10 e^eps <=> |x| <=
    eps).
    """
    return metrics_from_joined(join_scores(scores_df, pairs_df), etas, eps, eps_grid, reference_quirks)


def metrics_from_joined(
    joined: pd.DataFrame,
    etas: Sequence[float | str],
    eps: float = DEFAULT_EPS,
    eps_grid: np.ndarray | None = None,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """:func:`compute_metrics` on the output of :func:`join_scores` (join once, compute metrics and curves).

    Every registered metric (:mod:`unstereo.unstereoeval.metrics.registry`) is computed on each group; one whose input columns
    ``joined`` lacks is NaN.
    """
    params = {"eps": eps, "eps_grid": _grid(eps_grid), "reference_quirks": bool(reference_quirks)}
    metrics = registry.all_metrics()
    missing = {m.name: [c for c in m.inputs if c not in joined.columns] for m in metrics}
    for name, cols in missing.items():
        if cols:
            log.info("metric %s not computed: the scores lack column(s) %s", name, cols)
    arrays = {c: joined[c].to_numpy() for m in metrics if not missing[m.name] for c in m.inputs}
    rows = []
    for model, bench, eta, idx in _groups(joined, parse_etas(etas)):
        row = {"model": model, "benchmark": bench, "eta": eta, "n": len(idx)}
        for m in metrics:
            if missing[m.name]:
                row.update(m.undefined())
            else:
                a, b = (arrays[c][idx] for c in m.inputs)
                row.update(m.compute(a, b, eta=eta, **params))
        row.update(eps=eps, reference_quirks=bool(reference_quirks))
        rows.append(row)
    extra = [n for m in metrics for n in m.extra]
    out = pd.DataFrame(rows, columns=METRICS.names + extra + ["eps", "reference_quirks"])
    out["n"] = out["n"].astype("int64")
    return validate(out, METRICS, source="metrics")


def compute_curves(
    scores_df: pd.DataFrame,
    pairs_df: pd.DataFrame,
    etas: Sequence[float | str] = (ETA_INF,),
    eps_grid: np.ndarray | None = None,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """Fairness curves in long form: model, benchmark, eta, eps, us (fraction), log_base ("e" or "10")."""
    return curves_from_joined(join_scores(scores_df, pairs_df), etas, eps_grid, reference_quirks)


def curves_from_joined(
    joined: pd.DataFrame,
    etas: Sequence[float | str],
    eps_grid: np.ndarray | None = None,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """:func:`compute_curves` on the output of :func:`join_scores`."""
    grid = _grid(eps_grid)
    fm_all = joined["fm"].to_numpy(dtype=float)
    parts = []
    for model, bench, eta, idx in _groups(joined, parse_etas(etas)):
        fm = fm_all[idx]
        in_log10 = aufc_in_log10(eta, reference_quirks)
        parts.append(
            pd.DataFrame(
                {
                    "model": model,
                    "benchmark": bench,
                    "eta": eta,
                    "eps": grid,
                    "us": fairness_curve(fm, grid, log10=in_log10),
                    "log_base": "10" if in_log10 else "e",
                }
            )
        )
    cols = ["model", "benchmark", "eta", "eps", "us", "log_base"]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=cols)


def fairness_gap(
    metrics_df: pd.DataFrame, eta: float | str, reference_eta: float | str = ETA_INF, metric: str = "us"
) -> pd.DataFrame:
    """Fairness gap per (model, benchmark): ``metric`` at ``eta`` minus ``metric`` at ``reference_eta``.

    Returns columns model, benchmark, eta, reference_eta, gap (NaN where either value is missing).
    """
    eta, ref = parse_eta(eta), parse_eta(reference_eta)
    key = ["model", "benchmark"]
    at = metrics_df.loc[metrics_df["eta"] == eta, key + [metric]]
    base = metrics_df.loc[metrics_df["eta"] == ref, key + [metric]]
    if at.empty or base.empty:
        raise InputError(f"metrics table has no rows for eta={eta} and/or eta={ref}", path="metrics")
    merged = base.merge(at, on=key, how="outer", suffixes=("_ref", "_eta"))
    merged["gap"] = merged[f"{metric}_eta"] - merged[f"{metric}_ref"]
    merged["eta"], merged["reference_eta"] = eta, ref
    return merged[key + ["eta", "reference_eta", "gap"]]
