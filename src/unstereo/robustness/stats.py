"""Robustness statistics over a score table (one row per model, benchmark, construction, trial, eta):
distributions with intervals, model rankings, Kendall tau between rankings and how often two models swap order.

The reference of every comparison is the ``original`` construction (trial 0) of the same benchmark and eta. Models
are ranked by one metric column (``us`` by default: higher US = fewer stereotyped pairs). Two models "swap" in a
trial when the sign of their score difference differs from its sign on the original construction (a tie on one side
and a strict order on the other counts as a swap); ``swap_rate`` is the share of the construction's trials where
they swap. A missing (NaN) score is no evidence of a swap: a trial where either model has none is left out of the
pair's trials, and a pair without both original scores gets no row (its order on the original is unknown).
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from unstereo.bootstrap import percentile_interval
from unstereo.errors import InputError

ORIGINAL = "original"
KEYS = ["benchmark", "construction", "trial", "eta"]
SWAP_COLUMNS = ["benchmark", "construction", "eta", "metric", "model_a", "model_b", "swap_rate", "trials"]
RANKING_COLUMNS = [
    "benchmark",
    "construction",
    "trial",
    "eta",
    "metric",
    "n_models",
    "ranking",
    "kendall_tau",
]
SUMMARY_COLUMNS = ["model", "benchmark", "construction", "eta", "metric", "trials", "mean", "std", "lo", "hi"]


def kendall_tau(x: np.ndarray, y: np.ndarray) -> float:
    """Kendall's tau-b between two score vectors over the same items (NaN with fewer than two items or when one
    side is all ties)."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    n = len(x)
    if n < 2:
        return math.nan
    i, j = np.triu_indices(n, k=1)
    sx, sy = np.sign(x[i] - x[j]), np.sign(y[i] - y[j])
    n0 = len(i)
    tx, ty = int((sx == 0).sum()), int((sy == 0).sum())
    denom = math.sqrt((n0 - tx) * (n0 - ty))
    return float((sx * sy).sum() / denom) if denom else math.nan


def _reference(scores: pd.DataFrame, metric: str) -> pd.DataFrame:
    ref = scores[(scores["construction"] == ORIGINAL) & (scores["trial"] == 0)]
    if ref.empty:
        raise InputError(
            "the score table has no 'original' construction (trial 0) to compare with", path="scores"
        )
    return ref.set_index(["benchmark", "eta", "model"])[metric]


def rank_swaps(scores: pd.DataFrame, metric: str = "us") -> pd.DataFrame:
    """One row per (benchmark, construction, eta, pair of models): the share of trials whose order differs from
    the original's. Models are taken in sorted order (``model_a`` < ``model_b``)."""
    ref = _reference(scores, metric)
    rows = []
    for (bench, cons, eta), group in scores.groupby(["benchmark", "construction", "eta"], sort=True):
        wide = group.pivot_table(index="trial", columns="model", values=metric, aggfunc="first")
        for a, b in itertools.combinations(sorted(wide.columns), 2):
            try:
                ref_sign = np.sign(ref.loc[(bench, eta, a)] - ref.loc[(bench, eta, b)])
            except KeyError:
                continue
            if np.isnan(ref_sign):  # NaN != anything: every trial would count as a swap
                continue
            diff = (wide[a] - wide[b]).dropna()
            if diff.empty:
                continue
            swaps = (np.sign(diff.to_numpy()) != ref_sign).mean()
            rows.append([bench, cons, eta, metric, a, b, float(swaps), len(diff)])
    return pd.DataFrame(rows, columns=SWAP_COLUMNS).astype({"trials": "int64"})


def rankings(scores: pd.DataFrame, metric: str = "us") -> pd.DataFrame:
    """Per (benchmark, construction, trial, eta): the models ranked by ``metric`` (``ranking``: highest first,
    "a > b", ties "a = b") and Kendall tau-b between their scores and the original's."""
    ref = _reference(scores, metric)
    rows = []
    for (bench, cons, trial, eta), group in scores.groupby(KEYS, sort=True):
        models = [m for m in sorted(group["model"]) if (bench, eta, m) in ref.index]
        got = group.set_index("model").loc[models, metric].to_numpy(dtype=float)
        want = np.array([ref.loc[(bench, eta, m)] for m in models], dtype=float)
        rows.append(
            [bench, cons, trial, eta, metric, len(models), _ranking(models, got), kendall_tau(want, got)]
        )
    return pd.DataFrame(rows, columns=RANKING_COLUMNS).astype({"trial": "int64", "n_models": "int64"})


def _ranking(models: list[str], values: np.ndarray) -> str:
    order = sorted(zip(values, models, strict=True), key=lambda t: (-t[0], t[1]))
    text = order[0][1] if order else ""
    for (prev, _), (value, model) in itertools.pairwise(order):
        text += f" {'=' if value == prev else '>'} {model}"
    return text


def summary(
    scores: pd.DataFrame, metrics: tuple[str, ...] = ("us", "pd", "aufc"), level: float = 0.95
) -> pd.DataFrame:
    """Per (model, benchmark, construction, eta, metric): trials, mean, std (ddof 1; 0 for one trial) and the
    central ``level`` percentile interval over the trials."""
    rows = []
    for (model, bench, cons, eta), group in scores.groupby(
        ["model", "benchmark", "construction", "eta"], sort=True
    ):
        for metric in metrics:
            v = group[metric].dropna().to_numpy(dtype=float)
            if not len(v):
                continue
            std = float(v.std(ddof=1)) if len(v) > 1 else 0.0
            lo, hi = percentile_interval(v, level)
            rows.append([model, bench, cons, eta, metric, len(v), float(v.mean()), std, lo, hi])
    return pd.DataFrame(rows, columns=SUMMARY_COLUMNS).astype({"trials": "int64"})
