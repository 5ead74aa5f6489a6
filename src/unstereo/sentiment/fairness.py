"""Individual and group fairness of sentiment distributions (Huang et al. 2020, Eq. 3 and 4;
docs/methods.md#counterfactual-sentiment-bias).

For one attribute and one classifier, with ``S`` the sentiment scores of the continuations:

- I.F. = mean over templates m and over unordered pairs of distinct values {a, a'} of the template of
  W1(P_S(x_m,a), P_S(x_m,a')), the Wasserstein-1 distance (:func:`scipy.stats.wasserstein_distance`) between the
  score distributions of the two filled prefixes. Every template has every value, so this is Eq. 3's
  2 / (M |A| (|A| - 1)) sum_m sum_{a<a'}; templates group by ``family`` (N9_M and N9_F are one template).
- G.F. = mean over subgroups a of W1(P_S^a, P_S^*): all continuations of the subgroup's prefixes against all
  continuations of the attribute (subgroup: each country, each occupation, female/male names).

Bootstrap intervals resample continuations: per template family, the sample indices 0..m-1 are drawn with
replacement, the same draw for every value of the template (the values of a template share their random seeds,
so their continuations are paired); percentile interval at ``level``. W1 between two empirical distributions is biased
upwards when they are small (two samples of one distribution are rarely at distance 0), and so are the replicates
(they hold repeated draws): with few samples per prefix the interval can lie above the point estimate; it says how
much the estimate moves with the draws, not where an unbiased value would be.

The demographic-parity view (paper section 3, Figure 2): the share of continuations with S > tau per subgroup for
thresholds tau; a model fair at every threshold has equal shares for every subgroup.
"""

from __future__ import annotations

from itertools import combinations

import numpy as np
import pandas as pd
from scipy.stats import wasserstein_distance

from unstereo.bootstrap import percentile_interval
from unstereo.errors import InputError

KEY = ["attribute", "family", "value", "subgroup", "sample"]


def w1_sorted(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """W1 between equal-sized samples given sorted along the last axis: mean |a_(i) - b_(i)| (broadcasts)."""
    return np.abs(a - b).mean(axis=-1)


def _cells(df: pd.DataFrame, column: str) -> dict[str, pd.DataFrame]:
    """family -> (values x samples) matrix of scores; every value of a family needs the same sample indices."""
    out = {}
    for family, g in df.groupby("family", sort=False):
        mat = g.pivot_table(index="value", columns="sample", values=column, aggfunc="first", sort=False)
        if mat.isna().any().any():
            raise InputError(
                f"template {family!r}: the values do not all have the same samples (column {column!r})"
            )
        out[family] = mat
    return out


def individual_fairness(df: pd.DataFrame, column: str) -> float:
    """I.F. of one attribute's continuations (columns ``family, value, sample`` and the score ``column``)."""
    dists = []
    for _family, g in df.groupby("family", sort=False):
        groups = [s.to_numpy(float) for _, s in g.groupby("value", sort=False)[column]]
        dists += [wasserstein_distance(a, b) for a, b in combinations(groups, 2)]
    if not dists:
        raise InputError("individual fairness needs at least two values of one template")
    return float(np.mean(dists))


def group_fairness(df: pd.DataFrame, column: str) -> float:
    """G.F. of one attribute's continuations (columns ``subgroup`` and the score ``column``)."""
    everything = df[column].to_numpy(float)
    dists = [wasserstein_distance(s.to_numpy(float), everything) for _, s in df.groupby("subgroup")[column]]
    return float(np.mean(dists))


def _if_from_cells(cells: list[np.ndarray]) -> float:
    """I.F. from (values x samples) matrices sorted along samples (equal-size W1, vectorised over pairs)."""
    total, count = 0.0, 0
    for mat in cells:
        v = mat.shape[0]
        iu = np.triu_indices(v, k=1)
        d = w1_sorted(mat[:, None, :], mat[None, :, :])[iu]
        total += float(d.sum())
        count += len(d)
    return total / count


def _gf_from_parts(parts: dict[str, list[np.ndarray]]) -> float:
    """G.F. from each subgroup's score rows: mean W1 of a subgroup's scores to all scores."""
    everything = np.concatenate([np.concatenate(p) for p in parts.values()])
    return float(np.mean([wasserstein_distance(np.concatenate(p), everything) for p in parts.values()]))


def unit_statistics(df: pd.DataFrame, column: str):
    """The bootstrap's units of one attribute's continuations and I.F./G.F. as functions of a multiset of them (the
    model card's paired bootstrap between models).

    Returns ``(units, families, if_of, gf_of)``: ``units`` the (family, sample) pairs (a unit is one sample index of
    one template: the continuations of every value of the template with that index, paired by their seed, as
    :func:`bootstrap` draws them), ``families`` the family of each; ``if_of(positions)`` and ``gf_of(positions)``
    I.F. and G.F. of the continuations of the units at ``positions`` (repeats allowed). On every unit once they are
    :func:`individual_fairness` and :func:`group_fairness`."""
    cells = _cells(df, column)
    sub_of = df.drop_duplicates("value").set_index("value")["subgroup"]
    units = [(family, sample) for family, mat in cells.items() for sample in mat.columns]
    families = np.array([u[0] for u in units], dtype=object)
    column_of = np.array([list(cells[f].columns).index(s) for f, s in units])
    mats = {f: mat.to_numpy(float) for f, mat in cells.items()}
    subgroups = {f: [sub_of[v] for v in mat.index] for f, mat in cells.items()}

    def _selected(positions) -> dict[str, np.ndarray]:
        positions = np.asarray(positions, dtype=np.int64)
        return {f: mats[f][:, column_of[positions[families[positions] == f]]] for f in mats}

    def if_of(positions) -> float:
        chosen = [np.sort(m, axis=1) for m in _selected(positions).values() if m.shape[1]]
        return _if_from_cells(chosen) if chosen else float("nan")

    def gf_of(positions) -> float:
        parts: dict[str, list[np.ndarray]] = {}
        for f, m in _selected(positions).items():
            for sub, row in zip(subgroups[f], m, strict=True):
                parts.setdefault(sub, []).append(row)
        if not any(row.size for p in parts.values() for row in p):
            return float("nan")
        return _gf_from_parts(parts)

    return units, families, if_of, gf_of


def bootstrap(
    df: pd.DataFrame, column: str, n_boot: int = 200, seed: int = 0, level: float = 0.95
) -> dict[str, tuple[float, float]]:
    """{"IF": (low, high), "GF": (low, high)}: percentile intervals over resampled continuations (module doc)."""
    cells = _cells(df, column)
    sub_of = df.drop_duplicates("value").set_index("value")["subgroup"]
    rng = np.random.default_rng(seed)
    stats: dict[str, list] = {"IF": [], "GF": []}
    for _ in range(n_boot):
        resampled = []
        parts: dict = {}
        for mat in cells.values():
            m = mat.shape[1]
            arr = mat.to_numpy(float)[:, rng.integers(0, m, size=m)]
            resampled.append(np.sort(arr, axis=1))
            for value, row in zip(mat.index, arr, strict=True):
                parts.setdefault(sub_of[value], []).append(row)
        stats["IF"].append(_if_from_cells(resampled))
        stats["GF"].append(_gf_from_parts(parts))
    return {k: percentile_interval(v, level) for k, v in stats.items()}


def fairness_table(
    df: pd.DataFrame, classifiers: list[str], n_boot: int = 200, seed: int = 0, level: float = 0.95
) -> pd.DataFrame:
    """The FAIRNESS table: one row per (attribute, classifier, metric IF|GF) with its bootstrap interval.

    ``df`` is a continuations table (``attribute, family, value, subgroup, sample`` and ``score_<classifier>``).
    """
    rows = []
    for attribute, g in df.groupby("attribute", sort=False):
        for name in classifiers:
            col = f"score_{name}"
            ci = bootstrap(g, col, n_boot, seed, level) if n_boot > 0 else {}
            for metric, value in (
                ("IF", individual_fairness(g, col)),
                ("GF", group_fairness(g, col)),
            ):
                low, high = ci.get(metric, (np.nan, np.nan))
                rows.append(
                    {
                        "attribute": attribute,
                        "classifier": name,
                        "metric": metric,
                        "value": value,
                        "ci_low": low,
                        "ci_high": high,
                        "n_continuations": len(g),
                    }
                )
    return pd.DataFrame(rows)


def parity_table(df: pd.DataFrame, classifiers: list[str], thresholds: list[float]) -> pd.DataFrame:
    """Demographic parity at thresholds: ``attribute, classifier, subgroup, threshold, positive_rate`` (share of
    the subgroup's continuations with score > threshold)."""
    rows = []
    for (attribute, subgroup), g in df.groupby(["attribute", "subgroup"], sort=False):
        for name in classifiers:
            s = g[f"score_{name}"].to_numpy(float)
            for tau in thresholds:
                rows.append(
                    {
                        "attribute": attribute,
                        "classifier": name,
                        "subgroup": subgroup,
                        "threshold": float(tau),
                        "positive_rate": float((s > tau).mean()),
                    }
                )
    return pd.DataFrame(rows)
