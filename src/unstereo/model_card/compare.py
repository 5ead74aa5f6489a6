"""Which models differ, and do the methods agree: the model card's paired tests and findings.

- :func:`paired_permutation`: a paired permutation test of the difference of a headline metric between two models
  over the items both were measured on (within each item the two models' values are swapped at random; exact over
  every swap pattern of the untied items (:func:`untied`) up to :data:`EXACT_MAX` of them, else :data:`N_PERM`
  seeded random patterns; :func:`permutation_min_p`, the smallest p it can reach).
- :func:`paired_bootstrap`: a paired bootstrap test of the same difference for a metric that is a statistic of items
  rather than their mean (Wasserstein distances; AuFC is a mean of per-pair areas and takes the permutation test):
  the same resamples of the shared items for both models, p by inverting the percentile interval of the resampled
  differences (:func:`bootstrap_p`).
- :func:`holm`: Holm's step-down adjustment of a family of p-values.
- :func:`pair_tests`: every pair of models under every headline metric whose method writes per-item values
  (``items(config)`` in its headline module, an :data:`~unstereo.model_card.headline.ITEMS` table: permutation
  test) or a resampling statistic (``resampled(config)``, :class:`~unstereo.model_card.headline.Resampled`:
  bootstrap test), with one Holm family over all of the card's tests (:data:`MODEL_CARD_TESTS`).
- :func:`kendall_min_p`: the smallest two-sided p Kendall's exact test can give with n models (with 4 models it is
  1/12: no agreement between two rankings of 4 models can be significant at 5 %).
- :func:`findings`: sentences chosen by those numbers (templates, no hand-written conclusion).
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from unstereo.headline_metric import HeadlineMetric
from unstereo.model_card.headline import Resampled
from unstereo.tables import TableSchema, columns, validate

ALPHA = 0.05
EXACT_MAX = 16  # 2**16 swap patterns: enumerate them all
N_PERM = 9999
_CHUNK = 500  # random patterns per block (memory: _CHUNK x items)
N_BOOT = 2000  # bootstrap rounds of a paired bootstrap test

MODEL_CARD_TESTS = TableSchema(
    "model_card_tests",
    "a paired test between every two models under every headline metric with per-item values (permutation) or a "
    "resampling statistic (bootstrap), over the items both share; p-values Holm-adjusted over all rows "
    "(`results/model_card_tests.parquet`)",
    columns("""
        method       str     the metric's method
        metric       str     the headline metric
        model_a      str     first model
        model_b      str     second model
        n_items      int     items both models have a value for
        n_untied     int?    permutation tests: the shared items whose two values differ, the only ones a swap
                             can move (empty for a bootstrap test, where every item can)
        value_a      float?  the metric of model_a over the shared items
        value_b      float?  the metric of model_b over the shared items
        diff         float?  bias(a) - bias(b), oriented: > 0 = model_a more biased
        p_value      float?  two-sided permutation or bootstrap p-value
        min_p        float?  the smallest p this test can reach: exact 2 / 2**n_untied (1 with none untied),
                             random 1 / (1 + patterns), bootstrap 1 / (1 + finite rounds)
        p_holm       float?  Holm-adjusted p-value (family: every row of the table)
        differs      bool    p_holm < 0.05
        more_biased  str     the more biased model when `differs`, else empty
        test         str     `exact` (every swap pattern of the untied items), `random (N patterns)`,
                             `bootstrap (B rounds)` or `bootstrap (F of B rounds finite)` (rounds whose
                             statistic is NaN left out)
    """),
    unique=("method", "metric", "model_a", "model_b"),
)


def _stat(values: np.ndarray, weight: np.ndarray, bias: Callable) -> np.ndarray:
    """bias(weighted mean) of each row of ``values`` (shape (..., n))."""
    return np.asarray(bias((values * weight).sum(axis=-1) / weight.sum()), dtype=float)


def untied(a, b) -> int:
    """How many items can move a paired permutation test: those whose two values differ (swapping a tied item leaves
    both models' statistics exactly as they are)."""
    return int(np.sum(np.asarray(a, dtype=float) != np.asarray(b, dtype=float)))


def permutation_min_p(n_untied: int, n_perm: int = N_PERM) -> float:
    """The smallest two-sided p :func:`paired_permutation` can give with ``n_untied`` untied items: exact (up to
    :data:`EXACT_MAX` untied items) 2 / 2**u, since the observed pattern and its mirror (every item swapped, d ->
    -d) always reach |d_obs| (1 with no untied item: the only pattern is the observed one); random, the floor
    1 / (1 + n_perm)."""
    if n_untied <= 0:
        return 1.0
    if n_untied <= EXACT_MAX:
        return 2.0 / 2**n_untied
    return max(1.0 / (1 + n_perm), 2.0 / 2**n_untied)


def paired_permutation(
    a, b, weight=None, bias: Callable | None = None, n_perm: int = N_PERM, seed: int = 0
) -> tuple[float, float, str]:
    """(observed difference, two-sided p, test kind) of ``bias(mean(a)) - bias(mean(b))`` for paired ``a``, ``b``.

    ``weight``: per-item weights of the (weighted) mean (default 1); ``bias``: the orientation of the metric
    (HeadlineMetric.bias; default the identity). Under the null the two models are exchangeable within each item:
    every pattern of swaps is equally likely. Only untied items (a != b, :func:`untied`) can move the statistic, so
    the choice is made on their number u: exact (p = share of the 2**u patterns of swaps of the untied items with
    |d| >= |d_obs|; the same p as over all 2**n patterns, each of which repeats one of them 2**(n - u) times) up to
    :data:`EXACT_MAX` untied items, else ``n_perm`` seeded random patterns over all items with p = (1 + count) /
    (1 + n_perm). Identical models give d = 0 under every pattern, p = 1."""
    a, b = np.asarray(a, dtype=float), np.asarray(b, dtype=float)
    if a.shape != b.shape or a.ndim != 1:
        raise ValueError(f"paired values must be two 1-d arrays of one length, got {a.shape} and {b.shape}")
    n = len(a)
    if n == 0:
        return math.nan, math.nan, ""
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=float)
    bias = bias or (lambda v: v)
    observed = float(_stat(a, w, bias) - _stat(b, w, bias))
    tol = 1e-9 * max(1.0, abs(observed))  # float noise must not split ties (identical models: p = 1)

    def diffs(swap: np.ndarray) -> np.ndarray:
        return _stat(np.where(swap, b, a), w, bias) - _stat(np.where(swap, a, b), w, bias)

    moving = a != b
    u = int(moving.sum())
    if u <= EXACT_MAX:
        # patterns over the untied items only, the tied ones summed once (the same for both models): 2**u x u
        # values, not 2**u x n (a benchmark of thousands of pairs with 16 untied would need gigabytes)
        tied = float((w * a)[~moving].sum())
        am, bm, wm = a[moving], b[moving], w[moving]
        swap = ((np.arange(2**u)[:, None] >> np.arange(u)) & 1).astype(bool)
        total = w.sum()
        sa = (tied + (np.where(swap, bm, am) * wm).sum(axis=-1)) / total
        sb = (tied + (np.where(swap, am, bm) * wm).sum(axis=-1)) / total
        d = np.asarray(bias(sa), dtype=float) - np.asarray(bias(sb), dtype=float)
        return observed, float(np.mean(np.abs(d) >= abs(observed) - tol)), "exact"
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, n_perm, _CHUNK):
        swap = rng.random((min(_CHUNK, n_perm - start), n)) < 0.5
        count += int(np.sum(np.abs(diffs(swap)) >= abs(observed) - tol))
    return observed, (1 + count) / (1 + n_perm), f"random ({n_perm} patterns)"


def bootstrap_indices(n: int, n_boot: int = N_BOOT, seed: int = 0, strata=None) -> np.ndarray:
    """(n_boot, n) positions 0..n-1 drawn with replacement (numpy's default_rng(seed)). With ``strata`` (a label per
    position) the positions of each stratum are drawn among themselves, as many as it has (a stratified bootstrap,
    as a method whose own bootstrap draws per template does)."""
    rng = np.random.default_rng(seed)
    if strata is None:
        return rng.integers(0, n, size=(n_boot, n))
    strata = np.asarray(strata, dtype=object)
    out = np.empty((n_boot, n), dtype=np.int64)
    for stratum in dict.fromkeys(strata.tolist()):
        pos = np.flatnonzero(strata == stratum)
        out[:, pos] = pos[rng.integers(0, len(pos), size=(n_boot, len(pos)))]
    return out


def bootstrap_p(d, tol: float = 0.0) -> float:
    """Two-sided bootstrap p-value of "the difference is 0" from the resampled differences ``d``:
    ``max(1 / (B + 1), min(1, 2 * min(share of d <= 0, share of d >= 0)))`` over the B finite ones; |d| <= ``tol``
    counts as 0 (on both sides, so identical models give p = 1). A round whose difference is NaN (a statistic
    undefined on that resample) is left out, shares and floor alike: counted in B it would sit on neither side and
    lower p. No finite round gives NaN (no test), not the floor.

    This inverts the percentile interval (Efron & Tibshirani 1993, *An Introduction to the Bootstrap*): p is the
    smallest alpha whose equal-tailed (1 - alpha) percentile interval of d reaches 0. Chosen over the centred null
    (Hall & Wilson 1991: the share of |d_b - d_obs| >= |d_obs|) because it needs no symmetry of d around d_obs and
    agrees with the percentile intervals the methods themselves report. The floor 1 / (B + 1): with every d_b on one
    side of 0 the share is 0, but B rounds cannot show a p below about 1 / B (the permutation test's (1 + count) /
    (1 + N) has the same floor), and a p of 0 would pass every Holm threshold."""
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    if d.size == 0:
        return math.nan
    share = min(float(np.mean(d <= tol)), float(np.mean(d >= -tol)))
    return max(1.0 / (d.size + 1), min(1.0, 2.0 * share))


def _bootstrap_result(
    full_a: float, full_b: float, boot_a, boot_b, bias: Callable
) -> tuple[float, float, str, int]:
    """(observed, p, test label, finite rounds) of a paired bootstrap from each model's statistic per round."""
    observed = float(bias(full_a) - bias(full_b))
    d = np.asarray(bias(np.asarray(boot_a, dtype=float)), dtype=float) - np.asarray(
        bias(np.asarray(boot_b, dtype=float)), dtype=float
    )
    tol = 1e-9 * max(1.0, abs(observed)) if np.isfinite(observed) else 0.0  # float noise is no difference
    finite = int(np.isfinite(d).sum())
    kind = (
        f"bootstrap ({len(d)} rounds)"
        if finite == len(d)
        else f"bootstrap ({finite} of {len(d)} rounds finite)"
    )
    return observed, bootstrap_p(d, tol), kind, finite


def paired_bootstrap(
    stat_a: Callable,
    stat_b: Callable,
    n: int,
    bias: Callable | None = None,
    resamples=None,
    n_boot: int = N_BOOT,
    seed: int = 0,
    strata=None,
) -> tuple[float, float, str]:
    """(observed difference, two-sided p, test kind) of ``bias(stat_a) - bias(stat_b)`` over ``n`` shared items.

    ``stat_a``, ``stat_b``: each model's metric on the items at given positions 0..n-1 (repeats allowed; every
    position once = the metric itself); ``bias``: HeadlineMetric.bias (default the identity). Both models get the
    same resamples: ``resamples`` (an (B, n) array of positions, e.g. every resample of a tiny case), else
    :func:`bootstrap_indices` (``n_boot`` rounds, ``seed``, ``strata``). In each round d_b = bias(a) - bias(b) on the
    resample; p by :func:`bootstrap_p`."""
    if n == 0:
        return math.nan, math.nan, ""
    bias = bias or (lambda v: v)
    rs = (
        bootstrap_indices(n, n_boot, seed, strata)
        if resamples is None
        else np.asarray(resamples, dtype=np.int64)
    )
    full = np.arange(n)
    boot_a = [stat_a(r) for r in rs]
    boot_b = [stat_b(r) for r in rs]
    return _bootstrap_result(stat_a(full), stat_b(full), boot_a, boot_b, bias)[:3]


def holm(p_values) -> np.ndarray:
    """Holm's step-down adjusted p-values (same order as given; NaN stays NaN and is not counted in the family):
    the i-th smallest of m gets max over j <= i of min(1, (m - j + 1) p_(j))."""
    p = np.asarray(p_values, dtype=float)
    out = np.full(p.shape, np.nan)
    ok = np.flatnonzero(np.isfinite(p))
    m = len(ok)
    order = ok[np.argsort(p[ok], kind="stable")]
    running = 0.0
    for i, idx in enumerate(order):
        running = max(running, min(1.0, (m - i) * p[idx]))
        out[idx] = running
    return out


def kendall_min_p(n: int) -> float:
    """The smallest two-sided p-value of Kendall's tau (scipy's exact test) with ``n`` items: that of two identical
    rankings; 1 below 3 models (two models' tau is +1 or -1 with p = 1)."""
    if n < 3:
        return 1.0
    from scipy.stats import kendalltau

    return float(kendalltau(np.arange(n), np.arange(n)).pvalue)


def _model_order(card: pd.DataFrame, method: str, metric: str, present) -> list[str]:
    """The models of ``present`` in the card's order (any the card lacks after them, sorted)."""
    sel = (card["method"] == method) & (card["metric"] == metric)
    order = [m for m in dict.fromkeys(card.loc[sel, "model"]) if m in set(present)]
    return order + sorted(set(present) - set(order))


def _bootstrap_rows(
    card: pd.DataFrame, resampled: list[Resampled], info: dict, n_boot: int, seed: int, done: set
) -> list[list]:
    """The rows of :func:`pair_tests` for the metrics with a resampling statistic (and no per-item values)."""
    rows = []
    groups: dict[tuple[str, str], dict[str, Resampled]] = {}
    for r in resampled:
        groups.setdefault((r.method, r.metric), {})[r.model] = r
    # (shared keys, strata) -> resamples, the same for every pair of models sharing them, so each model's statistic
    # per round is computed once: (model, shared keys) -> (on all shared items, per round)
    draws: dict[tuple, np.ndarray] = {}
    values: dict[tuple, tuple[float, np.ndarray]] = {}
    for (method, metric), by_model in groups.items():
        hm = info.get((method, metric))
        if hm is None or not hm.bias_level or (method, metric) in done:
            continue
        for ma, mb in itertools.combinations(_model_order(card, method, metric, by_model), 2):
            ra, rb = by_model[ma], by_model[mb]
            shared = tuple(sorted(set(ra.items) & set(rb.items)))
            pos_a = pd.Series(range(len(ra.items)), index=list(ra.items))[list(shared)].to_numpy()
            pos_b = pd.Series(range(len(rb.items)), index=list(rb.items))[list(shared)].to_numpy()
            strata = None
            if ra.strata is not None or rb.strata is not None:
                sa = tuple(np.asarray(ra.strata, dtype=object)[pos_a]) if ra.strata is not None else None
                sb = tuple(np.asarray(rb.strata, dtype=object)[pos_b]) if rb.strata is not None else None
                if sa is not None and sb is not None and sa != sb:
                    raise ValueError(f"{method}/{metric}: {ma} and {mb} put shared items in different strata")
                strata = sa if sa is not None else sb
            if not shared:
                rows.append(
                    [method, metric, ma, mb, 0, None, math.nan, math.nan, math.nan, math.nan, math.nan, ""]
                )
                continue
            if (shared, strata) not in draws:
                draws[(shared, strata)] = bootstrap_indices(len(shared), n_boot, seed, strata)
            rs = draws[(shared, strata)]
            for r, pos in ((ra, pos_a), (rb, pos_b)):
                if (id(r), shared) not in values:
                    values[(id(r), shared)] = (
                        float(r.statistic(pos)),
                        np.array([r.statistic(pos[i]) for i in rs]),
                    )
            (va, boot_a), (vb, boot_b) = values[(id(ra), shared)], values[(id(rb), shared)]
            diff, p, kind, finite = _bootstrap_result(va, vb, boot_a, boot_b, hm.bias)
            min_p = 1.0 / (finite + 1) if finite else math.nan
            rows.append([method, metric, ma, mb, len(shared), None, va, vb, diff, p, min_p, kind])
    return rows


def pair_tests(
    card: pd.DataFrame,
    items: pd.DataFrame,
    info: dict[tuple[str, str], HeadlineMetric],
    n_perm: int = N_PERM,
    seed: int = 0,
    resampled: list[Resampled] | None = None,
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """The :data:`MODEL_CARD_TESTS` table: for every (method, metric) that is a level of bias, every two of its
    models (in the card's order) over their shared items: a paired permutation test where ``items`` holds per-item
    values, else a paired bootstrap where ``resampled`` holds a statistic (``n_boot`` rounds, ``seed``: the same
    resamples for every pair of models with the same shared items); then Holm over all rows, in the card's order of
    metrics."""
    rows = []
    done = set()
    for (method, metric), group in items.groupby(["method", "metric"], sort=False):
        hm = info.get((method, metric))
        if hm is None or not hm.bias_level:
            continue
        done.add((method, metric))
        order = _model_order(card, method, metric, group["model"])
        by_model = {m: g.set_index("item") for m, g in group.groupby("model")}
        for ma, mb in itertools.combinations(order, 2):
            ga, gb = by_model[ma], by_model[mb]
            shared = sorted(set(ga.index[np.isfinite(ga["value"])]) & set(gb.index[np.isfinite(gb["value"])]))
            xa, xb = ga.loc[shared, "value"].to_numpy(), gb.loc[shared, "value"].to_numpy()
            w = (ga.loc[shared, "weight"].to_numpy() + gb.loc[shared, "weight"].to_numpy()) / 2
            diff, p, kind = paired_permutation(xa, xb, w, hm.bias, n_perm, seed)
            va = float((xa * w).sum() / w.sum()) if shared else math.nan
            vb = float((xb * w).sum() / w.sum()) if shared else math.nan
            u = untied(xa, xb)
            min_p = permutation_min_p(u, n_perm) if shared else math.nan
            rows.append([method, metric, ma, mb, len(shared), u, va, vb, diff, p, min_p, kind])
    rows += _bootstrap_rows(card, resampled or [], info, n_boot, seed, done)
    position = {k: i for i, k in enumerate(dict.fromkeys(zip(card["method"], card["metric"], strict=True)))}
    rows.sort(key=lambda r: position.get((r[0], r[1]), len(position)))  # stable: pairs keep their order
    cols = ["method", "metric", "model_a", "model_b", "n_items", "n_untied", "value_a", "value_b", "diff", "p_value",
            "min_p", "test"]  # fmt: skip
    df = pd.DataFrame(rows, columns=cols).astype({"n_items": "int64", "n_untied": "Int64", "min_p": float})
    df["p_holm"] = holm(df["p_value"]) if len(df) else pd.Series(dtype=float)
    df["differs"] = (df["p_holm"] < ALPHA).astype(bool)
    df["more_biased"] = [
        (a if d > 0 else b) if s else ""
        for a, b, d, s in zip(df["model_a"], df["model_b"], df["diff"], df["differs"], strict=True)
    ]
    return validate(df[MODEL_CARD_TESTS.names], MODEL_CARD_TESTS)


# ---- findings -----------------------------------------------------------------------------------------------------


def fmt_p(p: float) -> str:
    """A p-value as the card prints it: three decimals, `< 0.001` below that, `NaN` for no test."""
    return "NaN" if not np.isfinite(p) else ("< 0.001" if p < 0.001 else f"{p:.3f}")


def _order_sentence(label: str, tests: pd.DataFrame, models: list[str]) -> str | None:
    """'X orders all n models: A > B > C' when every pair differs and the order is consistent."""
    if len(models) < 2 or not tests["differs"].all() or len(tests) != math.comb(len(models), 2):
        return None
    wins = {m: 0 for m in models}
    for r in tests.itertuples(index=False):
        wins[r.more_biased] += 1
    ranked = sorted(models, key=lambda m: -wins[m])
    if sorted(wins.values()) != list(range(len(models))):
        return None  # not a total order
    return f"{label} separates all {len(models)} models: {' > '.join(ranked)} (most biased first)."


def findings(
    card: pd.DataFrame,
    tests: pd.DataFrame,
    tau: pd.DataFrame,
    info: dict[tuple[str, str], HeadlineMetric],
    alpha: float = ALPHA,
) -> list[str]:
    """Sentences stating what the tests and the agreement table show, each chosen by the numbers."""
    out = []
    tested = set(zip(tests["method"], tests["metric"], strict=True))
    for key in dict.fromkeys(zip(card["method"], card["metric"], strict=True)):
        hm = info.get(key)
        if hm is None or not hm.bias_level:
            continue
        label = f"{key[0]}: {hm.label}"
        models = list(
            dict.fromkeys(card.loc[(card["method"] == key[0]) & (card["metric"] == key[1]), "model"])
        )
        if len(models) < 2:  # untested for want of a pair, whatever the metric offers
            out.append(f"{label}: fewer than two models, nothing to compare.")
            continue
        if key not in tested:
            out.append(
                f"{label}: no per-item values or resampling statistic are read for this metric, so no "
                "paired test was run; only the intervals compare the models."
            )
            continue
        t = tests[(tests["method"] == key[0]) & (tests["metric"] == key[1])]
        diff = t[t["differs"]]
        if not len(t):
            out.append(f"{label}: fewer than two models, nothing to compare.")
        elif not len(diff):
            floor = t["min_p"].min()
            why = (f"; no test of this metric can reach p < {alpha:g}: its smallest reachable p is {floor:.2g}"
                   + (f", with at most {int(t['n_untied'].max())} untied items" if t["n_untied"].notna().all() else "")
                   if np.isfinite(floor) and floor >= alpha else "")  # fmt: skip
            out.append(
                f"{label}: no two of the {len(models)} models differ after Holm correction "
                f"(smallest adjusted p = {fmt_p(t['p_holm'].min())}{why})."
            )
        else:
            order = _order_sentence(label, t, models)
            pairs = "; ".join(
                f"{r.more_biased} is more biased than {r.model_b if r.more_biased == r.model_a else r.model_a} "
                f"(adjusted p = {fmt_p(r.p_holm)})"
                for r in diff.itertuples(index=False)
            )
            out.append(
                order
                or f"{label}: {len(diff)} of {len(t)} pairs of models differ after Holm correction: {pairs}."
            )
    rows = tau[tau["method_a"] != tau["method_b"]]
    agree = disagree = unknown = 0
    no_tau: list[str] = []
    for r in rows.itertuples(index=False):
        la = f"{r.method_a}: {info[(r.method_a, r.metric_a)].label}"
        lb = f"{r.method_b}: {info[(r.method_b, r.metric_b)].label}"
        if not np.isfinite(r.kendall_tau):
            no_tau.append(f"{la} and {lb}")  # one sentence for all of them, below
        elif r.p_value < alpha:
            agree, disagree = agree + (r.kendall_tau > 0), disagree + (r.kendall_tau < 0)
            word = "rank the models alike" if r.kendall_tau > 0 else "rank the models in opposite orders"
            out.append(
                f"{la} and {lb} {word} (tau = {r.kendall_tau:.2f}, p = {fmt_p(r.p_value)}, "
                f"{r.n_models} models)."
            )
        else:
            unknown += 1
            floor = kendall_min_p(int(r.n_models))
            why = (
                f"; with {r.n_models} models even identical rankings give p = {fmt_p(floor)}, so no agreement can "
                f"be shown at {alpha:g}"
                if floor >= alpha
                else ""
            )
            out.append(
                f"{la} and {lb}: neither agreement nor disagreement is shown (tau = {r.kendall_tau:.2f}, "
                f"p = {fmt_p(r.p_value)}{why})."
            )
    if no_tau:
        out.append(
            f"{len(no_tau)} pair(s) of metrics have no tau (fewer than 2 shared models, or one ranking all "
            f"ties; see the table): {'; '.join(no_tau)}."
        )
    if len(rows) > len(no_tau):
        out.append(
            f"Of {len(rows) - len(no_tau)} pairs of metrics from different methods with a tau, {agree} agree and {disagree} disagree "
            f"at the {alpha:g} level; {unknown} are inconclusive."
        )
    return out


# ---- presentation -------------------------------------------------------------------------------------------------

_TEST_COLUMNS = ("Metric", "Model A", "Model B", "Items", "Untied", "A", "B", "bias(A) - bias(B)", "p", "Smallest p",
                 "p (Holm)", "Differs", "Test")  # fmt: skip

NOTE = (
    "Paired permutation test (metrics that are a mean of per-item values, AuFC included: the trapezoid area of a "
    "share is the mean of the items' own areas): for each metric and each two models, over the items both were "
    "measured on (pairs of sentences, prompts), the two models' per-item values are swapped at random within items; "
    "p is the share of swap patterns whose difference of the metric (oriented: larger = more biased) is at least as "
    "large in absolute value as the observed one. Only untied items (whose two values differ) can move it: exact "
    "over every pattern of swaps of the untied items up to 16 of them, else 9,999 random patterns, p = (1 + count) "
    "/ (1 + 9,999). Paired bootstrap test (metrics that are another statistic of items, such as a distance between "
    f"distributions): {N_BOOT:,} resamples of the shared items, drawn with replacement (within the method's strata "
    "where its own bootstrap draws so) and the same for both models, seeded by the config's seed; in each the "
    "oriented difference d_b is computed (a resample whose statistic is undefined is left out), and p = min(1, 2 "
    "min(share of d_b <= 0, share of d_b >= 0)), at least 1 / (1 + finite resamples). The smallest p a test can "
    "reach: exact 2 / 2^untied (1 with no untied item), random 1 / 10,000, bootstrap 1 / (1 + finite resamples); a "
    "test whose smallest p is above 0.05 cannot show a difference, whatever the models. Holm's correction is "
    "applied over every test on this page (both kinds), one family; a pair differs when its adjusted p is below "
    "0.05. Kendall's tau-b compares two metrics' rankings of the models; with few models its exact p cannot be "
    "small (4 models: at least 0.083), so an inconclusive tau is not evidence that the methods disagree."
)


def _num(v: float) -> str:
    return "" if v is None or not np.isfinite(v) else (f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}")


def tests_rows(tests: pd.DataFrame, info: dict[tuple[str, str], HeadlineMetric]) -> list[list[str]]:
    return [
        [f"{r.method}: {info[(r.method, r.metric)].label}" if (r.method, r.metric) in info else r.metric,
         r.model_a, r.model_b, str(r.n_items), "" if pd.isna(r.n_untied) else str(int(r.n_untied)),
         _num(r.value_a), _num(r.value_b), _num(r.diff), fmt_p(r.p_value),
         "" if not np.isfinite(r.min_p) else f"{r.min_p:.2g}", fmt_p(r.p_holm),
         (f"yes: {r.more_biased} more biased" if r.differs else "no"), r.test]
        for r in tests.itertuples(index=False)
    ]  # fmt: skip


def comparisons_page(
    tests: pd.DataFrame,
    sentences: list[str],
    tau_rows: list[list[str]],
    tau_columns: tuple[str, ...],
    info: dict[tuple[str, str], HeadlineMetric],
    fmt: str = "html",
    css: str = "",
) -> str:
    """The findings (one bullet a sentence: a paragraph of 20 sentences is unreadable), the paired tests and the
    agreement table as one HTML page or Markdown."""
    from unstereo.render.formats import html_table, markdown_table

    title = "Which models differ, and do the methods agree"
    rows = tests_rows(tests, info)
    if fmt == "md":
        body = (
            markdown_table(_TEST_COLUMNS, rows)
            if rows
            else "No paired test (no per-item values or resampling statistic).\n"
        )
        agreement = markdown_table(tau_columns, tau_rows) if tau_rows else "Fewer than two ranked metrics.\n"
        bullets = "".join(f"- {s}\n" for s in sentences)
        return (
            f"# {title}\n\n## Findings\n\n{bullets}\n## Paired tests\n\n{body}\n"
            f"## Agreement between methods\n\n{agreement}\n{NOTE}\n"
        )
    tests_html = (
        html_table(_TEST_COLUMNS, rows, cell_classes={3: "num", 4: "num", 8: "num", 9: "num", 10: "value"})
        if rows
        else "<p>No paired test (no per-item values or resampling statistic).</p>"
    )
    agreement = (
        html_table(tau_columns, tau_rows, cell_classes={2: "num", 3: "value", 4: "num"})
        if tau_rows
        else "<p>Fewer than two ranked metrics.</p>"
    )
    bullets = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title><style>{css}</style></head>"
        f"<body><h2>{title}</h2>\n<h3>Findings</h3>\n<ul>{bullets}</ul>\n<h3>Paired tests</h3>\n{tests_html}\n"
        f"<h3>Agreement between methods (Kendall tau-b)</h3>\n{agreement}\n<p>{html.escape(NOTE)}</p></body></html>\n"
    )
