"""Which models differ, and do the methods agree: the model card's paired tests and findings.

- :func:`paired_permutation`: a paired permutation test of the difference of a headline metric between two models
  over the items both were measured on (within each item the two models' values are swapped at random; exact over
  every swap pattern up to :data:`EXACT_MAX` items, else :data:`N_PERM` seeded random patterns).
- :func:`holm`: Holm's step-down adjustment of a family of p-values.
- :func:`pair_tests`: every pair of models under every headline metric whose method writes per-item values
  (``items(config)`` in its headline module, an :data:`~unstereo.model_card.headline.ITEMS` table), with one Holm
  family over all of the card's tests (:data:`MODEL_CARD_TESTS`).
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
from unstereo.tables import Column, TableSchema, validate

ALPHA = 0.05
EXACT_MAX = 16  # 2**16 swap patterns: enumerate them all
N_PERM = 9999
_CHUNK = 500  # random patterns per block (memory: _CHUNK x items)

MODEL_CARD_TESTS = TableSchema(
    "model_card_tests",
    "a paired permutation test between every two models under every headline metric with per-item values, over "
    "the items both share; p-values Holm-adjusted over all rows (`results/model_card_tests.parquet`)",
    (
        Column("method", "str", "the metric's method"),
        Column("metric", "str", "the headline metric"),
        Column("model_a", "str", "first model"),
        Column("model_b", "str", "second model"),
        Column("n_items", "int", "items both models have a value for"),
        Column("value_a", "float", "the metric of model_a over the shared items", nullable=True),
        Column("value_b", "float", "the metric of model_b over the shared items", nullable=True),
        Column("diff", "float", "bias(a) - bias(b), oriented: > 0 = model_a more biased", nullable=True),
        Column("p_value", "float", "two-sided permutation p-value", nullable=True),
        Column("p_holm", "float", "Holm-adjusted p-value (family: every row of the table)", nullable=True),
        Column("differs", "bool", "p_holm < 0.05"),
        Column("more_biased", "str", "the more biased model when `differs`, else empty"),
        Column("test", "str", "`exact` (every swap pattern) or `random` (with the number of patterns)"),
    ),
    unique=("method", "metric", "model_a", "model_b"),
)


def _stat(values: np.ndarray, weight: np.ndarray, bias: Callable) -> np.ndarray:
    """bias(weighted mean) of each row of ``values`` (shape (..., n))."""
    return np.asarray(bias((values * weight).sum(axis=-1) / weight.sum()), dtype=float)


def paired_permutation(
    a, b, weight=None, bias: Callable | None = None, n_perm: int = N_PERM, seed: int = 0
) -> tuple[float, float, str]:
    """(observed difference, two-sided p, test kind) of ``bias(mean(a)) - bias(mean(b))`` for paired ``a``, ``b``.

    ``weight``: per-item weights of the (weighted) mean (default 1); ``bias``: the orientation of the metric
    (HeadlineMetric.bias; default the identity). Under the null the two models are exchangeable within each item:
    every pattern of swaps is equally likely. Exact (p = share of the 2**n patterns with |d| >= |d_obs|) up to
    :data:`EXACT_MAX` items, else ``n_perm`` seeded random patterns with p = (1 + count) / (1 + n_perm). Identical
    models give d = 0 under every pattern, p = 1."""
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

    if n <= EXACT_MAX:
        swap = ((np.arange(2**n)[:, None] >> np.arange(n)) & 1).astype(bool)
        return observed, float(np.mean(np.abs(diffs(swap)) >= abs(observed) - tol)), "exact"
    rng = np.random.default_rng(seed)
    count = 0
    for start in range(0, n_perm, _CHUNK):
        swap = rng.random((min(_CHUNK, n_perm - start), n)) < 0.5
        count += int(np.sum(np.abs(diffs(swap)) >= abs(observed) - tol))
    return observed, (1 + count) / (1 + n_perm), f"random ({n_perm} patterns)"


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


def pair_tests(
    card: pd.DataFrame,
    items: pd.DataFrame,
    info: dict[tuple[str, str], HeadlineMetric],
    n_perm: int = N_PERM,
    seed: int = 0,
) -> pd.DataFrame:
    """The :data:`MODEL_CARD_TESTS` table: for every (method, metric) of ``items`` that is a level of bias, every
    two of its models (in the card's order) over their shared items, then Holm over all rows."""
    rows = []
    for (method, metric), group in items.groupby(["method", "metric"], sort=False):
        hm = info.get((method, metric))
        if hm is None or not hm.bias_level:
            continue
        order = [m for m in dict.fromkeys(card.loc[(card["method"] == method) & (card["metric"] == metric),
                                                   "model"]) if m in set(group["model"])]  # fmt: skip
        order += sorted(set(group["model"]) - set(order))
        by_model = {m: g.set_index("item") for m, g in group.groupby("model")}
        for ma, mb in itertools.combinations(order, 2):
            ga, gb = by_model[ma], by_model[mb]
            shared = sorted(set(ga.index[np.isfinite(ga["value"])]) & set(gb.index[np.isfinite(gb["value"])]))
            xa, xb = ga.loc[shared, "value"].to_numpy(), gb.loc[shared, "value"].to_numpy()
            w = (ga.loc[shared, "weight"].to_numpy() + gb.loc[shared, "weight"].to_numpy()) / 2
            diff, p, kind = paired_permutation(xa, xb, w, hm.bias, n_perm, seed)
            va = float((xa * w).sum() / w.sum()) if shared else math.nan
            vb = float((xb * w).sum() / w.sum()) if shared else math.nan
            rows.append([method, metric, ma, mb, len(shared), va, vb, diff, p, kind])
    cols = [
        "method",
        "metric",
        "model_a",
        "model_b",
        "n_items",
        "value_a",
        "value_b",
        "diff",
        "p_value",
        "test",
    ]
    df = pd.DataFrame(rows, columns=cols).astype({"n_items": "int64"})
    df["p_holm"] = holm(df["p_value"]) if len(df) else pd.Series(dtype=float)
    df["differs"] = (df["p_holm"] < ALPHA).astype(bool)
    df["more_biased"] = [
        (a if d > 0 else b) if s else "" for a, b, d, s in zip(df["model_a"], df["model_b"], df["diff"],
                                                              df["differs"], strict=True)
    ]  # fmt: skip
    return validate(df[MODEL_CARD_TESTS.names], MODEL_CARD_TESTS)


# ---- findings -----------------------------------------------------------------------------------------------------


def _p(p: float) -> str:
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
        if key not in tested:
            out.append(f"{label}: no per-item values are read for this metric, so no paired test was run; only "
                       "the intervals compare the models.")  # fmt: skip
            continue
        t = tests[(tests["method"] == key[0]) & (tests["metric"] == key[1])]
        diff = t[t["differs"]]
        if not len(t):
            out.append(f"{label}: fewer than two models, nothing to compare.")
        elif not len(diff):
            out.append(f"{label}: no two of the {len(models)} models differ after Holm correction "
                       f"(smallest adjusted p = {_p(t['p_holm'].min())}).")  # fmt: skip
        else:
            order = _order_sentence(label, t, models)
            pairs = "; ".join(
                f"{r.more_biased} is more biased than {r.model_b if r.more_biased == r.model_a else r.model_a} "
                f"(adjusted p = {_p(r.p_holm)})"
                for r in diff.itertuples(index=False)
            )
            out.append(order or f"{label}: {len(diff)} of {len(t)} pairs of models differ after Holm correction: "
                       f"{pairs}.")  # fmt: skip
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
            out.append(f"{la} and {lb} {word} (tau = {r.kendall_tau:.2f}, p = {_p(r.p_value)}, "
                       f"{r.n_models} models).")  # fmt: skip
        else:
            unknown += 1
            floor = kendall_min_p(int(r.n_models))
            why = (f"; with {r.n_models} models even identical rankings give p = {_p(floor)}, so no agreement can "
                   f"be shown at {alpha:g}" if floor >= alpha else "")  # fmt: skip
            out.append(f"{la} and {lb}: neither agreement nor disagreement is shown (tau = {r.kendall_tau:.2f}, "
                       f"p = {_p(r.p_value)}{why}).")  # fmt: skip
    if no_tau:
        out.append(f"{len(no_tau)} pair(s) of metrics have no tau (fewer than 2 shared models, or one ranking all "
                   f"ties; see the table): {'; '.join(no_tau)}.")  # fmt: skip
    if len(rows) > len(no_tau):
        out.append(f"Of {len(rows) - len(no_tau)} pairs of metrics from different methods with a tau, {agree} agree and {disagree} disagree "
                   f"at the {alpha:g} level; {unknown} are inconclusive.")  # fmt: skip
    return out


# ---- presentation -------------------------------------------------------------------------------------------------

_TEST_COLUMNS = ("Metric", "Model A", "Model B", "Items", "A", "B", "bias(A) - bias(B)", "p", "p (Holm)", "Differs",
                 "Test")  # fmt: skip

NOTE = (
    "Paired permutation test: for each metric and each two models, over the items both were measured on (pairs of "
    "sentences, prompts), the two models' per-item values are swapped at random within items; p is the share of "
    "swap patterns whose difference of the metric (oriented: larger = more biased) is at least as large in absolute "
    "value as the observed one (exact over every pattern up to 16 items, else 9,999 random patterns, p = (1 + "
    "count) / (1 + 9,999)). Holm's correction is applied over every test on this page, one family; a pair differs "
    "when its adjusted p is below 0.05. Metrics whose method writes only aggregate values are not tested. Kendall's "
    "tau-b compares two metrics' rankings of the models; with few models its exact p cannot be small (4 models: at "
    "least 0.083), so an inconclusive tau is not evidence that the methods disagree."
)


def _num(v: float) -> str:
    return "" if v is None or not np.isfinite(v) else (f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}")


def tests_rows(tests: pd.DataFrame, info: dict[tuple[str, str], HeadlineMetric]) -> list[list[str]]:
    return [
        [f"{r.method}: {info[(r.method, r.metric)].label}" if (r.method, r.metric) in info else r.metric,
         r.model_a, r.model_b, str(r.n_items), _num(r.value_a), _num(r.value_b), _num(r.diff), _p(r.p_value),
         _p(r.p_holm), (f"yes: {r.more_biased} more biased" if r.differs else "no"), r.test]
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
        body = markdown_table(_TEST_COLUMNS, rows) if rows else "No paired test (no per-item values).\n"
        agreement = markdown_table(tau_columns, tau_rows) if tau_rows else "Fewer than two ranked metrics.\n"
        bullets = "".join(f"- {s}\n" for s in sentences)
        return (f"# {title}\n\n## Findings\n\n{bullets}\n## Paired tests\n\n{body}\n"
                f"## Agreement between methods\n\n{agreement}\n{NOTE}\n")  # fmt: skip
    tests_html = html_table(_TEST_COLUMNS, rows, cell_classes={3: "num", 7: "num", 8: "value"}) if rows else (
        "<p>No paired test (no per-item values).</p>")  # fmt: skip
    agreement = html_table(tau_columns, tau_rows, cell_classes={2: "num", 3: "value", 4: "num"}) if tau_rows else (
        "<p>Fewer than two ranked metrics.</p>")  # fmt: skip
    bullets = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title><style>{css}</style></head>"
        f"<body><h2>{title}</h2>\n<h3>Findings</h3>\n<ul>{bullets}</ul>\n<h3>Paired tests</h3>\n{tests_html}\n"
        f"<h3>Agreement between methods (Kendall tau-b)</h3>\n{agreement}\n<p>{html.escape(NOTE)}</p></body></html>\n"
    )
