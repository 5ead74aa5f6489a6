"""From a model's SAMPLES table to its FairPair tables: per-prompt terms, curves (Figures 3-4), over-represented
n-grams (Figure 6); and the per-model summary with bootstrap intervals (Table 3)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import numpy as np
import pandas as pd

from unstereo.fairpair.metrics import (
    PHIS,
    TOKEN_RE,
    bootstrap_ci,
    fold,
    model_f,
    paired_ttest,
    sample_curve,
    sentiment,
    terms,
    token_rows,
)
from unstereo.fairpair.schemas import CURVES, NGRAMS, PER_PROMPT, SUMMARY
from unstereo.tables import validate


def fold_grid(n: int, points: int = 12) -> list[int]:
    """Fold counts for the B-vs-k curve: every k in 2..n for n <= ``points``, else about ``points`` values spaced
    geometrically from 2 to n."""
    if n < 2:
        return []
    if n <= points:
        return list(range(2, n + 1))
    return sorted({int(round(v)) for v in np.geomspace(2, n, points)})


class _Features:
    """Feature rows per (prompt, phi): token incidence (one vocabulary per prompt) or VADER scores (each distinct
    text scored once)."""

    def __init__(self, samples: pd.DataFrame, phis: Sequence[str]):
        self.groups = {}
        for pid, one in samples.groupby("prompt_id", sort=False):
            one = one.sort_values("sample", kind="stable")
            pg = [t for t in one.loc[one["side"] == "original", "continuation_mapped"] if isinstance(t, str)]
            gp = list(one.loc[one["side"] == "perturbed", "continuation"])
            self.groups[pid] = (pg, gp)
        self.scores: dict[str, float] = {}
        if "sentiment" in phis:
            texts = sorted({t for pg, gp in self.groups.values() for t in (*pg, *gp)})
            self.scores = dict(zip(texts, sentiment(texts), strict=True))

    def get(self, pid: str, phi: str) -> tuple[np.ndarray, np.ndarray]:
        pg, gp = self.groups[pid]
        if phi == "sentiment":
            x = np.array([self.scores[t] for t in (*pg, *gp)], dtype=np.float64)[:, None]
        else:
            x = token_rows([*pg, *gp])
        return x[: len(pg)], x[len(pg) :]


def per_prompt(
    samples: pd.DataFrame,
    model: str,
    n: int,
    folds: Sequence[int] = (),
    phis: Sequence[str] = PHIS,
    curve_points: int = 12,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(PER_PROMPT, CURVES) of one model's SAMPLES. ``n``: the configured samples per side (the k of the per-sample
    rows); ``folds``: further k values (each <= n; a prompt with fewer usable samples than k gets no row)."""
    feats = _Features(samples, phis)
    ks = sorted({int(n), *(int(k) for k in folds if 1 < int(k) < n)})
    rows, curve_rows = [], []
    grid = fold_grid(n, curve_points)
    for phi in phis:
        by_m: dict[int, list[np.ndarray]] = {}
        by_k: dict[int, list[tuple[float, float, float]]] = {}
        for pid in feats.groups:
            pg, gp = feats.get(pid, phi)
            for k in ks:
                if k == n:
                    a, b = pg, gp
                elif k <= min(len(pg), len(gp)):
                    a, b = fold(phi, pg, k), fold(phi, gp, k)
                else:
                    continue
                t = terms(phi, a, b)
                rows.append(
                    (model, pid, phi, k, t.B, t.V_gp, t.V_pg, t.F, t.t_stat, t.p_value, len(pg), len(gp))
                )
            curve = sample_curve(phi, pg, gp)
            for i, vals in enumerate(curve):
                by_m.setdefault(i + 2, []).append(vals)
            for k in grid:
                if k <= min(len(pg), len(gp)):
                    t = terms(phi, fold(phi, pg, k), fold(phi, gp, k))
                    by_k.setdefault(k, []).append((t.B, t.V_gp, t.V_pg))
        for axis, data in (("samples", by_m), ("folds", by_k)):
            for x, vals in sorted(data.items()):
                b, v_gp, v_pg = np.nanmean(np.asarray(vals, dtype=np.float64), axis=0)
                curve_rows.append((model, phi, axis, x, b, v_gp, v_pg))
    per = pd.DataFrame(rows, columns=PER_PROMPT.names)
    curves = pd.DataFrame(curve_rows, columns=CURVES.names)
    return validate(per, PER_PROMPT), validate(curves, CURVES)


def summarize(per: pd.DataFrame, n_boot: int = 1000, level: float = 0.95, seed: int = 0) -> pd.DataFrame:
    """The SUMMARY table: per (model, phi, k) over the prompts with a defined F: the means of B, V_gp, V_pg, F as
    :func:`~unstereo.fairpair.metrics.model_f` defines them (finite F averaged, infinite ones counted), the ratio
    of means, the median F, the bootstrap intervals of mean and median F (resampling prompts, ``n_boot`` times,
    seeded) and the paired t-test of B against sqrt(V_gp V_pg)."""
    rows = []
    for (model, phi, k), g in per.groupby(["model", "phi", "k"], sort=True):
        g = g[g["F"].notna()]
        f = g["F"].to_numpy(dtype=np.float64)
        lo, hi = bootstrap_ci(f[np.isfinite(f)], np.mean, n_boot, level, seed)
        med_lo, med_hi = bootstrap_ci(f, np.median, n_boot, level, seed)
        v = np.sqrt(g["V_gp"].to_numpy(dtype=np.float64) * g["V_pg"].to_numpy(dtype=np.float64))
        t, p = paired_ttest(g["B"].to_numpy(dtype=np.float64), v)
        means = [float(g[c].mean()) if len(g) else float("nan") for c in ("B", "V_gp", "V_pg")]
        mf = model_f(g["B"], g["V_gp"], g["V_pg"], f)
        rows.append((model, phi, int(k), len(g), *means, mf["mean_F"], lo, hi, t, p, mf["n_inf_F"],
                     mf["ratio_F"], mf["median_F"], med_lo, med_hi))  # fmt: skip
    return validate(pd.DataFrame(rows, columns=SUMMARY.names), SUMMARY)


def ngram_sets(text: str, max_n: int) -> set[str]:
    """The distinct 1..max_n-grams of a text's lowercased ``\\w+`` tokens."""
    toks = TOKEN_RE.findall(str(text).lower())
    return {" ".join(toks[i : i + m]) for m in range(1, max_n + 1) for i in range(len(toks) - m + 1)}


def over_represented(samples: pd.DataFrame, model: str, max_n: int = 4, top: int = 15) -> pd.DataFrame:
    """The ``top`` n-grams most over-represented on each side (Figure 6): document frequencies over the p(g(x))
    continuations (``continuation_mapped`` of the original side) and over the g(p(x)) ones; a side's n-grams are
    ranked by its frequency minus the other side's (ties: longer n-gram, then alphabetical), only positive
    differences kept."""
    pg = [t for t in samples.loc[samples["side"] == "original", "continuation_mapped"] if isinstance(t, str)]
    gp = list(samples.loc[samples["side"] == "perturbed", "continuation"])
    c_pg = Counter(g for t in pg for g in ngram_sets(t, max_n))
    c_gp = Counter(g for t in gp for g in ngram_sets(t, max_n))
    grams = sorted(set(c_pg) | set(c_gp))
    f_pg = np.array([c_pg[g] / max(len(pg), 1) for g in grams])
    f_gp = np.array([c_gp[g] / max(len(gp), 1) for g in grams])
    lengths = np.array([g.count(" ") + 1 for g in grams])
    rows = []
    for side, diff in (("pg", f_pg - f_gp), ("gp", f_gp - f_pg)):
        # lexsort: last key first -> by -diff, then -length, then the (already sorted) alphabetical position
        order = np.lexsort((np.arange(len(grams)), -lengths, -diff))
        order = [i for i in order if diff[i] > 0][:top]
        rows += [
            (model, side, r + 1, grams[i], int(lengths[i]), f_pg[i], f_gp[i]) for r, i in enumerate(order)
        ]
    return validate(pd.DataFrame(rows, columns=NGRAMS.names), NGRAMS)
