"""FairPair's bias B, sampling variabilities V_gp and V_pg, and F = B^2 / (V_gp V_pg)
(docs/methods.md#fairpair; paper section 2).

For one prompt x the inputs are the *pg side* p(g_i(x)) (the continuations of x with p applied, the samples'
``continuation_mapped``) and the *gp side* g_j(p(x)) (the continuations of p(x)). With Phi a dissimilarity:

- B(x) = mean over all n_pg * n_gp pairs (i, j) of Phi(p(g_i(x)), g_j(p(x)));
- V_gp(x) = mean over i < j of Phi(g_i(p(x)), g_j(p(x))); V_pg(x) = mean over i < j of Phi(p(g_i(x)), p(g_j(x)));
- F(x) = B(x)^2 / (V_gp(x) V_pg(x)). Where V_gp V_pg = 0 (e.g. every continuation of a side identical), F is defined
  as 1 when B = 0 too (nothing differs, nothing to explain) and +inf when B > 0 (a difference that no sampling
  variability explains). A side with fewer than 2 units gives NaN for its V and for F.

Phi is ``jaccard`` (1 - |u n v| / |u u v| of the sets of lowercased ``\\w+`` tokens; two empty sets have dissimilarity
0) or ``sentiment`` (|S(u) - S(v)| with S the VADER compound score in [-1, 1]).

K-fold variant: each side's units are split into k contiguous folds (sizes differing by at most one, numpy's
``array_split``); a fold's token set is the union of its samples' sets, its sentiment the mean of its samples'
scores; B and the V are then computed between folds. k = n (one sample per fold) is the plain definition.

Significance per prompt: Welch's t-test of the B terms (the n_pg n_gp cross values) against the V terms (the within-
side values of both sides pooled); the terms are not independent, so read the p-value as the paper does, as a guide.
Per model: the paired t-test across prompts of B(x) against V(x) = sqrt(V_gp(x) V_pg(x)) (F = (B / V)^2), and F
summarised three ways (:func:`model_f`): the mean of the finite per-prompt F (infinite ones counted, not averaged),
the ratio of means mean(B^2) / (mean(V_gp) mean(V_pg)), and the median with its bootstrap interval.

Everything is vectorised: a side's token sets are a 0/1 incidence matrix and all pairwise Jaccard values of two sides
come from one matrix product; sentiment differences from one broadcast.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from unstereo.bootstrap import percentile_interval, resample_stat

PHIS = ("jaccard", "sentiment")
TOKEN_RE = re.compile(r"\w+")


def tokens(text: str) -> set[str]:
    """The token set Jaccard uses: lowercased ``\\w+`` runs of ``text``."""
    return set(TOKEN_RE.findall(str(text).lower()))


@lru_cache(maxsize=1)
def _vader():
    from vaderSentiment.vaderSentiment import SentimentIntensityAnalyzer

    return SentimentIntensityAnalyzer()


def sentiment(texts: Sequence[str]) -> np.ndarray:
    """VADER compound score of each text (in [-1, 1])."""
    analyzer = _vader()
    return np.array([analyzer.polarity_scores(str(t))["compound"] for t in texts], dtype=np.float64)


def incidence(sets: Sequence[set[str]], vocab: dict[str, int]) -> np.ndarray:
    """0/1 matrix (len(sets), len(vocab)): row i marks the tokens of ``sets[i]`` (all must be in ``vocab``)."""
    out = np.zeros((len(sets), len(vocab)), dtype=np.float64)
    rows = np.repeat(np.arange(len(sets)), [len(s) for s in sets])
    cols = np.fromiter((vocab[t] for s in sets for t in s), dtype=np.int64, count=len(rows))
    out[rows, cols] = 1.0
    return out


def pairwise(phi: str, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Phi between every row of ``a`` and every row of ``b`` (a len(a) x len(b) matrix)."""
    if phi == "jaccard":
        inter = a @ b.T
        union = a.sum(1)[:, None] + b.sum(1)[None, :] - inter
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(union > 0, 1.0 - inter / np.where(union > 0, union, 1.0), 0.0)
    if phi == "sentiment":
        return np.abs(a[:, 0][:, None] - b[:, 0][None, :])
    raise ValueError(f"unknown phi {phi!r} (use one of {PHIS})")


def fold(phi: str, x: np.ndarray, k: int) -> np.ndarray:
    """The k fold rows of a side's rows ``x``: contiguous folds; union of token rows (jaccard), mean (sentiment)."""
    n = len(x)
    if not 1 <= k <= n:
        raise ValueError(f"k must be between 1 and the number of samples ({n}), got {k}")
    if k == n:
        return x
    starts = np.array([p[0] for p in np.array_split(np.arange(n), k)])
    if phi == "jaccard":
        return np.maximum.reduceat(x, starts, axis=0)
    sizes = np.diff(np.append(starts, n))
    return np.add.reduceat(x, starts, axis=0) / sizes[:, None]


def fairpair_f(b, v_gp, v_pg):
    """F = B^2 / (V_gp V_pg), elementwise; 1 where B = 0 and V_gp V_pg = 0, +inf where only V_gp V_pg = 0."""
    b, v_gp, v_pg = (np.asarray(v, dtype=np.float64) for v in (b, v_gp, v_pg))
    denom = v_gp * v_pg
    with np.errstate(invalid="ignore", divide="ignore"):
        f = b**2 / denom
    f = np.where(denom == 0, np.where(b == 0, 1.0, np.inf), f)
    return f if f.ndim else float(f)


@dataclass(frozen=True)
class Terms:
    """B, V_gp, V_pg, F of one prompt and the t-test of its B terms against its V terms."""

    B: float
    V_gp: float
    V_pg: float
    F: float
    t_stat: float
    p_value: float


def _upper(m: np.ndarray) -> np.ndarray:
    return m[np.triu_indices(len(m), 1)]


def welch(a: np.ndarray, b: np.ndarray) -> tuple[float, float]:
    """Welch's two-sided t-test of ``a`` against ``b``: (t, p); NaN when a group has < 2 values or neither varies.

    Computed directly (Welch-Satterthwaite degrees of freedom, Student's t tail from ``scipy.special.stdtr``): the
    same values as ``scipy.stats.ttest_ind(a, b, equal_var=False)`` at a fraction of its per-call overhead.
    """
    from scipy.special import stdtr

    na, nb = len(a), len(b)
    if na < 2 or nb < 2:
        return float("nan"), float("nan")
    sa, sb = np.var(a, ddof=1) / na, np.var(b, ddof=1) / nb
    se2 = sa + sb
    if se2 == 0:
        return float("nan"), float("nan")
    t = (np.mean(a) - np.mean(b)) / np.sqrt(se2)
    df = se2**2 / (sa**2 / (na - 1) + sb**2 / (nb - 1))
    return float(t), float(2 * stdtr(df, -abs(t)))


def terms(phi: str, pg: np.ndarray, gp: np.ndarray) -> Terms:
    """B, V_gp, V_pg, F and the t-test from the feature rows of the pg side and of the gp side (see
    :func:`side_features`, :func:`fold`)."""
    cross = pairwise(phi, pg, gp)
    within_gp = _upper(pairwise(phi, gp, gp))
    within_pg = _upper(pairwise(phi, pg, pg))
    b = float(cross.mean()) if cross.size else float("nan")
    v_gp = float(within_gp.mean()) if within_gp.size else float("nan")
    v_pg = float(within_pg.mean()) if within_pg.size else float("nan")
    f = float("nan") if np.isnan([b, v_gp, v_pg]).any() else fairpair_f(b, v_gp, v_pg)
    t, p = welch(cross.ravel(), np.concatenate([within_gp, within_pg]))
    return Terms(b, v_gp, v_pg, f, t, p)


def loop_units(phi: str, texts: Sequence[str]) -> list:
    """What the per-pair loop compares: token sets (jaccard) or compound scores (sentiment), one per text."""
    return [tokens(t) for t in texts] if phi == "jaccard" else list(sentiment(texts))


def _dis_sets(u: set[str], v: set[str]) -> float:
    union = u | v
    return 1.0 - len(u & v) / len(union) if union else 0.0


def _dis_scores(u: float, v: float) -> float:
    return abs(u - v)


def terms_loop_units(phi: str, pg: list, gp: list) -> tuple[float, float, float, float]:
    """(B, V_gp, V_pg, F) by the definitions' plain double loops over pairs of :func:`loop_units`."""
    dis = _dis_sets if phi == "jaccard" else _dis_scores
    n1, n2 = len(pg), len(gp)
    b = sum(dis(u, v) for u in pg for v in gp) / (n1 * n2)
    v_gp = sum(dis(gp[i], gp[j]) for i in range(n2) for j in range(i + 1, n2)) / (n2 * (n2 - 1) / 2)
    v_pg = sum(dis(pg[i], pg[j]) for i in range(n1) for j in range(i + 1, n1)) / (n1 * (n1 - 1) / 2)
    return b, v_gp, v_pg, fairpair_f(b, v_gp, v_pg)


def terms_loop(
    phi: str, pg_texts: Sequence[str], gp_texts: Sequence[str]
) -> tuple[float, float, float, float]:
    """(B, V_gp, V_pg, F) of two sides' texts by plain loops (the baseline the benchmark and the tests compare
    :func:`terms` with; k = n only)."""
    return terms_loop_units(phi, loop_units(phi, pg_texts), loop_units(phi, gp_texts))


def token_rows(texts: Sequence[str]) -> np.ndarray:
    """Token incidence rows of ``texts`` over the tokens they contain (column order immaterial to Jaccard)."""
    sets = [tokens(t) for t in texts]
    return incidence(sets, {t: i for i, t in enumerate(set().union(*sets))})


def side_features(
    phi: str, pg_texts: Sequence[str], gp_texts: Sequence[str]
) -> tuple[np.ndarray, np.ndarray]:
    """The feature rows of both sides of one prompt (one shared vocabulary for jaccard)."""
    if phi == "jaccard":
        x = token_rows([*pg_texts, *gp_texts])
    else:
        x = sentiment([*pg_texts, *gp_texts])[:, None]
    return x[: len(pg_texts)], x[len(pg_texts) :]


def sample_curve(phi: str, pg: np.ndarray, gp: np.ndarray) -> np.ndarray:
    """B, V_gp, V_pg using the first m units of each side, for m = 2 .. min(n_pg, n_gp): an (m_max - 1, 3) array
    (Figure 3), from prefix sums of the three pairwise matrices."""
    m_max = min(len(pg), len(gp))
    if m_max < 2:
        return np.empty((0, 3))
    m = np.arange(2, m_max + 1)

    def prefix(d):  # S[m-1, m-1] = sum of d[:m, :m]
        s = d[:m_max, :m_max].cumsum(0).cumsum(1)
        return s[m - 1, m - 1]

    b = prefix(pairwise(phi, pg, gp)) / m**2
    # within-side matrices are symmetric with a zero diagonal: the i < j sum is half the block sum
    pairs = m * (m - 1) / 2
    v_gp = prefix(pairwise(phi, gp, gp)) / 2 / pairs
    v_pg = prefix(pairwise(phi, pg, pg)) / 2 / pairs
    return np.column_stack([b, v_gp, v_pg])


def paired_ttest(b: np.ndarray, v: np.ndarray) -> tuple[float, float]:
    """Paired two-sided t-test of ``b`` against ``v`` over the finite pairs: (t, p); NaN with < 2 pairs or no
    variation of the differences."""
    from scipy import stats

    b, v = np.asarray(b, dtype=np.float64), np.asarray(v, dtype=np.float64)
    ok = np.isfinite(b) & np.isfinite(v)
    d = b[ok] - v[ok]
    if len(d) < 2 or np.ptp(d) == 0:
        return float("nan"), float("nan")
    res = stats.ttest_rel(b[ok], v[ok])
    return float(res.statistic), float(res.pvalue)


def bootstrap_ci(
    values: np.ndarray, stat=np.mean, n_boot: int = 1000, level: float = 0.95, seed: int = 0
) -> tuple[float, float]:
    """Percentile bootstrap interval of ``stat`` (a reduction along axis 1, e.g. ``np.mean``, ``np.median``) of
    ``values`` (NaN dropped): ``n_boot`` resamples with replacement, the empirical (non-interpolated) quantiles at
    (1 -/+ level) / 2; (NaN, NaN) for no values."""
    x = np.asarray(values, dtype=np.float64)
    x = x[~np.isnan(x)]
    if len(x) == 0 or n_boot < 1:
        return float("nan"), float("nan")
    with np.errstate(invalid="ignore"):  # a median between two +inf values
        stats = resample_stat(x, stat, n_boot, np.random.default_rng(seed))
    return percentile_interval(stats, level, method="inverted_cdf")


def model_f(b, v_gp, v_pg, f) -> dict[str, float | int]:
    """Model-level summaries of per-prompt terms (prompts with a defined F; NaN rows are dropped here):

    - ``mean_F``: mean of the *finite* per-prompt F (the paper's Table 3 averages F over prompts; an infinite F
      would make the mean infinite, so those prompts are counted in ``n_inf_F`` instead of averaged);
    - ``ratio_F``: ratio of means, mean(B^2) / (mean(V_gp) mean(V_pg)): every prompt weighs by its B^2 and V, so
      one prompt with a tiny V cannot dominate (and a V of 0 on one prompt does not make it infinite);
    - ``median_F``: median of every per-prompt F, infinite ones included (they rank highest).
    """
    b, v_gp, v_pg, f = (np.asarray(v, dtype=np.float64) for v in (b, v_gp, v_pg, f))
    ok = ~np.isnan(f)
    b, v_gp, v_pg, f = b[ok], v_gp[ok], v_pg[ok], f[ok]
    if not len(f):
        return {"n_inf_F": 0, "mean_F": float("nan"), "ratio_F": float("nan"), "median_F": float("nan")}
    finite = f[np.isfinite(f)]
    denom = float(v_gp.mean() * v_pg.mean())
    num = float((b**2).mean())
    ratio = num / denom if denom > 0 else (1.0 if num == 0 else float("inf"))  # as fairpair_f at a V of 0
    return {
        "n_inf_F": int(np.isinf(f).sum()),
        "mean_F": float(finite.mean()) if len(finite) else float("nan"),
        "ratio_F": ratio,
        "median_F": float(np.median(f)),
    }
