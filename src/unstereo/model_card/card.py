"""The cross-method model card: every method's headline metric per model, side by side, and how far the methods
agree on which model is the most biased.

Each method reads its headline metrics (declared in its registry entry, ``Method.headline``) from its finished
tables through its :class:`~unstereo.model_card.headline.Headline` (``API`` in the module its entry names as
``headline_module``, e.g. ``unstereo.fairpair.headline``): ``headline(config)`` -> a HEADLINE table,
``sources(config)`` -> the files it reads, ``models(config)`` -> the short model names the method's config lists,
``enabled(config)`` -> whether it is on the card; per-item values (``items``, ``item_sources``: permutation tests) and
resampling statistics (``resampled``, ``resampled_sources``: bootstrap tests) default to none. This module stacks
them into ``results/model_card.parquet`` (:data:`MODEL_CARD`), ranks the models per metric after orienting every
value so that larger = more biased (:meth:`HeadlineMetric.bias`), computes Kendall's tau-b between every two
metrics' rankings over the models they share (:data:`MODEL_CARD_TAU`), and writes one table (HTML, Markdown) and
one figure (PNG) per model.

A model is the same model across methods when it has the same short name in each method's config.
"""

from __future__ import annotations

import html
import importlib
import itertools
import math
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.io import atomic_path, write_text
from unstereo.method_registry import Method, methods
from unstereo.model_card.headline import HEADLINE, Headline, HeadlineMetric
from unstereo.render.formats import html_table, markdown_table
from unstereo.tables import TableSchema, columns, validate

CATEGORY = "Model card"


def card_methods() -> list[Method]:
    """Every registered method with headline metrics, in registry order (unstereo.method_registry): a new method
    is on the card once its declaration names a ``headline_module``."""
    return [m for m in methods().values() if m.headline_module]


def headline_api(method: Method) -> Headline:
    """The method's :class:`~unstereo.model_card.headline.Headline`: ``API`` in its headline module."""
    module = str(method.headline_module)
    api = getattr(importlib.import_module(module), "API", None)
    if not isinstance(api, Headline):
        raise TypeError(
            f"method {method.name!r}: its headline module {module} must define API, an instance of a "
            "subclass of unstereo.model_card.headline.Headline"
        )
    return api


MODEL_CARD = TableSchema(
    "model_card",
    "the HEADLINE rows of every enabled method, with the metric's label and direction, the value oriented so that "
    "larger = more biased, and the model's rank among the method's models (`results/model_card.parquet`)",
    HEADLINE.fixed_columns
    + columns("""
        label        str     the metric as the card shows it
        more_biased  str     `higher`, `lower` or `away` (from `ideal`)
        ideal        float?  the unbiased value of an `away` metric
        bias_level   bool    whether the metric is a level of bias (False: shown, not ranked in tau)
        bias         float?  the value oriented so that larger = more biased
        rank         float?  1 = the most biased of the models this metric covers (ties share the best)
        n_models     int     the models this metric covers
    """),
    unique=HEADLINE.unique,
)

MODEL_CARD_TAU = TableSchema(
    "model_card_tau",
    "Kendall's tau-b between the model rankings of every two headline metrics that are levels of bias, over the "
    "models both cover (`results/model_card_tau.parquet`)",
    columns("""
        method_a     str     first metric's method
        metric_a     str     first metric
        method_b     str     second metric's method
        metric_b     str     second metric
        n_models     int     models with a value under both
        models       str     those models, comma-separated
        kendall_tau  float?  tau-b of the two oriented values (1 = same order, -1 = reversed)
        p_value      float?  two-sided p-value of tau = 0 (scipy; exact for small n)
        note         str     why tau is NaN, if it is
    """),
    unique=("method_a", "metric_a", "method_b", "metric_b"),
)


def enabled_methods(config: dict) -> list[Method]:
    return [m for m in card_methods() if headline_api(m).enabled(config)]


def card_inputs(config: dict) -> list[str]:
    """The finished tables the card reads (the rule's input)."""
    return [p for m in enabled_methods(config) for p in headline_api(m).sources(config)]


def item_inputs(config: dict) -> list[str]:
    """The per-item tables the paired tests read (methods with ``items``)."""
    return [p for m in enabled_methods(config) for p in headline_api(m).item_sources(config)]


def collect_items(config: dict) -> pd.DataFrame:
    """Every enabled method's per-item headline values (an ITEMS table; methods without ``items`` add none)."""
    from unstereo.model_card.headline import ITEMS, items_table

    frames = [headline_api(m).items(config) for m in enabled_methods(config)]
    frames = [validate(f, ITEMS) for f in frames if len(f)]
    return items_table(pd.concat(frames, ignore_index=True)) if frames else items_table([])


def resampled_inputs(config: dict) -> list[str]:
    """The tables the paired bootstrap reads (methods with ``resampled``)."""
    return [p for m in enabled_methods(config) for p in headline_api(m).resampled_sources(config)]


def collect_resampled(config: dict, card: pd.DataFrame | None = None) -> list:
    """Every enabled method's resampling statistics (:class:`~unstereo.model_card.headline.Resampled`). With
    ``card``, each statistic on all its items must give the value the card shows (else the test would be of another
    number): a ValueError names the first that does not."""
    out = [r for m in enabled_methods(config) for r in headline_api(m).resampled(config)]
    if card is not None:
        shown = card.set_index(["method", "model", "metric"])["value"]
        for r in out:
            value = float(r.statistic(np.arange(len(r.items))))
            want = float(shown.get((r.method, r.model, r.metric), math.nan))
            if not np.isclose(value, want, rtol=1e-9, atol=1e-12, equal_nan=True):
                raise ValueError(
                    f"{r.method}/{r.metric} of {r.model}: the resampling statistic on all "
                    f"{len(r.items)} items gives {value!r}, the card shows {want!r}"
                )
    return out


def card_models(config: dict) -> list[str]:
    """Every model short name an enabled method's config lists, in order of first appearance."""
    return list(
        dict.fromkeys(name for m in enabled_methods(config) for name in headline_api(m).models(config))
    )


def card_config(config: dict) -> str:
    """The part of ``config`` the headline functions read, as JSON (what the rule passes to ``unstereo report
    model-card --config-json``): ``results_dir``, ``score`` (model fallbacks) and every method's section."""
    import json

    keys = ["results_dir", "seed", "score", *(s for m in card_methods() for s in m.config)]
    return json.dumps({k: config[k] for k in dict.fromkeys(keys) if k in config}, default=str)


def _metric_info() -> dict[tuple[str, str], HeadlineMetric]:
    return {(m.name, hm.name): hm for m in card_methods() for hm in m.headline}


def stack(frames: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The MODEL_CARD table of per-method HEADLINE tables (``frames``: method name -> table)."""
    info = _metric_info()
    parts = []
    for name, frame in frames.items():
        frame = validate(frame, HEADLINE, source=f"headline of {name}")
        unknown = sorted(set(frame["metric"]) - {k[1] for k in info if k[0] == name})
        if (frame["method"] != name).any() or unknown:
            raise ValueError(f"headline of {name}: rows of another method or undeclared metrics {unknown}")
        parts.append(frame)
    order = {k: i for i, k in enumerate(info)}
    card = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=HEADLINE.names)
    hms = [info[(a, b)] for a, b in zip(card["method"], card["metric"], strict=True)]
    card["label"] = [h.label for h in hms]
    card["more_biased"] = [h.more_biased for h in hms]
    card["ideal"] = [np.nan if h.ideal is None else float(h.ideal) for h in hms]
    card["bias_level"] = np.array([h.bias_level for h in hms], dtype=bool)
    card["bias"] = [h.bias(v) for h, v in zip(hms, card["value"], strict=True)]
    card["bias"] = card["bias"].astype(float)
    keys = ["method", "metric"]
    card["rank"] = card.groupby(keys)["bias"].rank(method="min", ascending=False)
    card["n_models"] = card.groupby(keys)["bias"].transform("count").astype("int64")
    card["_order"] = [order[(a, b)] for a, b in zip(card["method"], card["metric"], strict=True)]
    card = card.sort_values(["_order", "model"]).drop(columns="_order").reset_index(drop=True)
    return validate(card, MODEL_CARD)


def collect(config: dict) -> pd.DataFrame:
    """Read every enabled method's headline and stack them (:func:`stack`)."""
    return stack({m.name: headline_api(m).headline(config) for m in enabled_methods(config)})


def _metric_keys(card: pd.DataFrame) -> list[tuple[str, str]]:
    """The (method, metric) pairs of ``card`` in its order."""
    return list(dict.fromkeys(zip(card["method"], card["metric"], strict=True)))


def kendall_table(card: pd.DataFrame) -> pd.DataFrame:
    """Kendall's tau-b (scipy.stats.kendalltau, its default variant) between every two bias-level metrics of
    ``card`` over the models with a finite value under both. tau is computed on the oriented values (``bias``), so
    1 = the two metrics order the models the same way; NaN with a note when fewer than 2 models are shared or a
    metric gives them all the same value."""
    from scipy.stats import kendalltau

    ranked = card[card["bias_level"] & np.isfinite(card["bias"].astype(float))]
    keys = _metric_keys(card[card["bias_level"]])
    series = {k: g.set_index("model")["bias"] for k, g in ranked.groupby(["method", "metric"], sort=False)}
    rows = []
    for a, b in itertools.combinations(keys, 2):
        sa, sb = series.get(a, pd.Series(dtype=float)), series.get(b, pd.Series(dtype=float))
        shared = sorted(set(sa.index) & set(sb.index))
        tau = p = math.nan
        note = ""
        if len(shared) < 2:
            note = f"fewer than 2 shared models ({len(shared)})"
        elif sa[shared].nunique() < 2 or sb[shared].nunique() < 2:
            note = "one ranking is all ties"
        else:
            res = kendalltau(sa[shared].to_numpy(), sb[shared].to_numpy())
            tau, p = float(res.statistic), float(res.pvalue)
        rows.append([a[0], a[1], b[0], b[1], len(shared), ", ".join(shared), tau, p, note])
    df = pd.DataFrame(rows, columns=MODEL_CARD_TAU.names).astype({"n_models": "int64"})
    return validate(df, MODEL_CARD_TAU)


# ---- presentation ------------------------------------------------------------------------------------------------


def _num(v: float) -> str:
    if v is None or not np.isfinite(v):
        return ""
    return f"{v:.3g}" if abs(v) < 1000 else f"{v:.0f}"


def _interval(r) -> str:
    if not (np.isfinite(r.ci_low) and np.isfinite(r.ci_high)):
        return "none given"
    return f"[{_num(r.ci_low)}, {_num(r.ci_high)}] ({r.interval})"


def _direction(r) -> str:
    if r.more_biased == "away":
        return f"farther from {_num(r.ideal)}"
    return f"{r.more_biased}"


def _rank(r) -> str:
    return "" if not np.isfinite(r.rank) else f"{int(r.rank)} of {int(r.n_models)}"


_PAGE_COLUMNS = (
    "Method",
    "Metric",
    "Value",
    "Interval",
    "More biased =",
    "Rank (1 = most biased)",
    "n",
    "Covers",
)


def _page_rows(card: pd.DataFrame, model: str) -> list[list[str]]:
    rows = []
    for r in card[card["model"] == model].itertuples(index=False):
        rank = _rank(r) + ("" if r.bias_level else " (not a bias level)")
        n = "" if pd.isna(r.n) else str(int(r.n))
        rows.append([r.method, r.label, _num(r.value), _interval(r), _direction(r), rank, n, r.scope])
    return rows


def _tau_rows(tau: pd.DataFrame, labels: dict[tuple[str, str], str]) -> list[list[str]]:
    def name(method, metric):
        return f"{method}: {labels.get((method, metric), metric)}"

    return [
        [name(r.method_a, r.metric_a), name(r.method_b, r.metric_b), str(r.n_models),
         _num(r.kendall_tau) or "NaN", _num(r.p_value), r.note or r.models]
        for r in tau.itertuples(index=False)
    ]  # fmt: skip


_TAU_COLUMNS = ("Metric A", "Metric B", "Shared models", "Kendall tau-b", "p-value", "Models (or why NaN)")

_CSS = (
    "body{font-family:sans-serif;margin:1em;color:#222}table{border-collapse:collapse;font-size:14px}"
    "th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;vertical-align:top}th{background:#f2f2f2}"
    "td.num{text-align:right}td.value{text-align:right;font-weight:bold}p{max-width:60em;font-size:13px}"
)


_READING = (
    "Each method's headline metric for this model, with its interval as the method reports it. The rank orders the "
    "models each metric covers from most biased (1) after turning every metric the same way (a lower Unstereo "
    "Score or AuFC is more biased; a Stereotype Score is more biased the farther it is from 50). The rank-swap rate "
    "says how often the model changes place against another model when the benchmark is built differently; it is "
    "not a level of bias."
)


def model_page(card: pd.DataFrame, model: str, fmt: str = "html") -> str:
    """The card of one model as an HTML page or Markdown."""
    rows = _page_rows(card, model)
    if fmt == "md":
        body = (
            markdown_table(_PAGE_COLUMNS, rows)
            if rows
            else "No method has a headline metric for this model.\n"
        )
        return f"# Model card: {model}\n\n{body}\n{_READING}\n"
    body = (
        html_table(_PAGE_COLUMNS, rows, cell_classes={2: "value", 6: "num"})
        if rows
        else "<p>No method has a headline metric for this model.</p>"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>Model card: {html.escape(model)}</title>"
        f"<style>{_CSS}</style></head><body><h2>Model card: {html.escape(model)}</h2>\n{body}\n"
        f"<p>{html.escape(_READING)}</p></body></html>\n"
    )


def tau_page(tau: pd.DataFrame, fmt: str = "html", card: pd.DataFrame | None = None) -> str:
    """The Kendall tau table as an HTML page or Markdown; the metrics named by their labels in ``card``."""
    title = "Agreement between methods: Kendall tau-b of the model rankings"
    note = (
        "Each row compares the order in which two headline metrics put the models both cover (1 = the same order, "
        "-1 = reversed). A model is the same model across methods when it has the same short name in each method's "
        "config. NaN when fewer than 2 models are shared."
    )
    labels = (
        {}
        if card is None
        else dict(zip(zip(card["method"], card["metric"], strict=True), card["label"], strict=True))
    )
    rows = _tau_rows(tau, labels)
    if fmt == "md":
        body = markdown_table(_TAU_COLUMNS, rows) if rows else "Fewer than two ranked metrics.\n"
        return f"# {title}\n\n{body}\n{note}\n"
    body = (
        html_table(_TAU_COLUMNS, rows, cell_classes={2: "num", 3: "value", 4: "num"})
        if rows
        else "<p>Fewer than two ranked metrics.</p>"
    )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title><style>{_CSS}</style></head>"
        f"<body><h2>{title}</h2>\n{body}\n<p>{html.escape(note)}</p></body></html>\n"
    )


def _xlim(lo: float, hi: float, limits=(None, None)) -> tuple[float, float]:
    """Axis limits around [lo, hi] with a margin, kept inside the metric's ``limits`` (a rate never shows a negative
    tick); a single value gets a span of a fifth of the limits (or of itself)."""
    blo, bhi = limits
    if hi <= lo:
        half = 0.1 * (bhi - blo) if blo is not None and bhi is not None else max(abs(lo) * 0.1, 0.05)
        lo, hi = lo - half, hi + half
    pad = 0.08 * (hi - lo)
    left, right = lo - pad, hi + pad
    margin = 0.02 * (right - left)
    if blo is not None:
        left = max(left, blo - margin)
    if bhi is not None:
        right = min(right, bhi + margin)
    return left, right


def _direction_hint(r) -> str:
    """A panel's right-hand title: which way is worse for a card row's metric."""
    worse = "more biased" if r["bias_level"] else "less stable"
    return {"higher": f"{worse} →", "lower": f"← {worse}"}.get(
        r["more_biased"], f"{worse}: farther from {_num(r['ideal'])} (dashed)"
    )


def _save_png(fig, out: str | Path) -> Path:
    """Write ``fig`` as a PNG at ``out`` (atomically, its folder made) and close it."""
    import matplotlib.pyplot as plt

    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=110, format="png")
    plt.close(fig)
    return out


def plot_model(card: pd.DataFrame, model: str, out: str | Path) -> Path:
    """One panel per headline metric: the model's value with its interval (a dot with an error bar), the other
    models' values as grey ticks for context, the unbiased value of an `away` metric as a dashed line, and on the
    right the model's rank. PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    info = _metric_info()
    keys = _metric_keys(card)
    mine = card[card["model"] == model].set_index(["method", "metric"])
    keys = [k for k in keys if k in mine.index]
    n = max(1, len(keys))
    fig, axes = plt.subplots(n, 1, figsize=(8.5, 0.95 * n + 0.9), squeeze=False)
    if not keys:
        axes[0, 0].axis("off")
        axes[0, 0].text(0.5, 0.5, "No method has a headline metric for this model.", ha="center", va="center")
    for ax, key in zip(axes[:, 0], keys, strict=False):
        allm = card[(card["method"] == key[0]) & (card["metric"] == key[1])]
        others = allm[allm["model"] != model]
        ax.plot(others["value"], np.zeros(len(others)), "|", color="0.6", ms=14, mew=2, label="other models")
        if len(others) <= 6:  # name a few; more would overlap
            for o in others.itertuples(index=False):
                if np.isfinite(o.value):
                    ax.annotate(o.model, (o.value, 0.45), ha="center", va="bottom", fontsize=7, color="0.45")
        xs = list(allm["value"]) + list(allm["ci_low"]) + list(allm["ci_high"])
        r = mine.loc[key] if key in mine.index else None
        if r is not None:
            v = float(r["value"])
            err = None
            if np.isfinite(r["ci_low"]) and np.isfinite(r["ci_high"]):
                err = [[max(0.0, v - r["ci_low"])], [max(0.0, r["ci_high"] - v)]]
            ax.errorbar([v], [0], xerr=err, fmt="o", color="C0", ms=8, capsize=5, lw=2, label=model)
            rank = _rank(next(mine.loc[[key]].reset_index().itertuples(index=False)))
            side = f"rank {rank}" + ("" if r["bias_level"] else "\n(1 = least stable;\nnot a bias level)")
            ax.text(1.01, 0.5, side, transform=ax.transAxes, va="center", fontsize=9)
        if r is not None and r["more_biased"] == "away":
            ax.axvline(float(r["ideal"]), color="k", ls="--", lw=0.8)
            xs.append(float(r["ideal"]))
        finite = [x for x in xs if x is not None and np.isfinite(x)]
        if finite:
            ax.set_xlim(*_xlim(min(finite), max(finite), info[key].limits))
        hint = _direction_hint(r) if r is not None else ""
        ax.set_title(f"{key[0]}: {allm['label'].iloc[0] if len(allm) else key[1]}", loc="left", fontsize=9.5)
        ax.set_title(hint, loc="right", fontsize=8.5, color="0.35")
        ax.set_yticks([])
        ax.set_ylim(-1, 1)
        ax.tick_params(axis="x", labelsize=8)
        for s in ("left", "right", "top"):
            ax.spines[s].set_visible(False)
    fig.suptitle(f"Model card: {model}", x=0.01, ha="left", fontsize=12, fontweight="bold")
    legend = "dot: this model with its interval · grey ticks: the other models · rank 1 = most biased"
    fig.text(0.99, 0.995, legend, ha="right", va="top", fontsize=8, color="0.35")
    fig.tight_layout(rect=(0, 0, 0.86, 0.97))
    return _save_png(fig, out)


def models_figure(card: pd.DataFrame):
    """Every model side by side: one panel per headline metric, one row per model (in the card's model order), its
    value as a dot with its interval as a bar; the unbiased value of an `away` metric as a dashed line. Returns the
    matplotlib figure (the caller saves it): the study's overview, where overlapping bars are visible at a glance
    (whether two models differ is the paired test's answer, on the comparisons page)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    info = _metric_info()
    keys = _metric_keys(card)
    models = list(dict.fromkeys(card["model"]))
    n = max(1, len(keys))
    fig, axes = plt.subplots(n, 1, figsize=(8.5, (0.28 * len(models) + 0.75) * n + 0.6), squeeze=False)
    if not keys:
        axes[0, 0].axis("off")
        axes[0, 0].text(0.5, 0.5, "No method has a headline metric.", ha="center", va="center")
    for ax, key in zip(axes[:, 0], keys, strict=False):
        rows = card[(card["method"] == key[0]) & (card["metric"] == key[1])].set_index("model")
        ys = np.arange(len(models))[::-1]  # first model on top
        xs = []
        for y, model in zip(ys, models, strict=True):
            if model not in rows.index or not np.isfinite(rows.loc[model, "value"]):
                ax.text(0.0, y, " not measured", transform=ax.get_yaxis_transform(), va="center", fontsize=7,
                        color="0.5")  # fmt: skip
                continue
            r = rows.loc[model]
            v = float(r["value"])
            err = None
            if np.isfinite(r["ci_low"]) and np.isfinite(r["ci_high"]):
                err = [[max(0.0, v - r["ci_low"])], [max(0.0, r["ci_high"] - v)]]
                xs += [float(r["ci_low"]), float(r["ci_high"])]
            ax.errorbar([v], [y], xerr=err, fmt="o", color="C0", ms=6, capsize=4, lw=1.8)
            xs.append(v)
        first = rows.iloc[0] if len(rows) else None
        if first is not None and first["more_biased"] == "away":
            ax.axvline(float(first["ideal"]), color="k", ls="--", lw=0.8)
            xs.append(float(first["ideal"]))
        if xs:
            ax.set_xlim(*_xlim(min(xs), max(xs), info[key].limits))
        ax.set_yticks(ys, models, fontsize=8)
        ax.set_ylim(-0.7, len(models) - 0.3)
        hint = _direction_hint(first) if first is not None else ""
        label = rows["label"].iloc[0] if len(rows) else key[1]
        ax.set_title(f"{key[0]}: {label}", loc="left", fontsize=9.5)
        ax.set_title(hint, loc="right", fontsize=8.5, color="0.35")
        ax.tick_params(axis="x", labelsize=8)
        ax.grid(axis="x", color="0.9", lw=0.6)
        for side in ("right", "top"):
            ax.spines[side].set_visible(False)
    fig.suptitle("Model card: every model", x=0.01, ha="left", fontsize=12, fontweight="bold")
    fig.text(0.99, 0.995, "dot: the metric · bar: its interval (the card's table names which)", ha="right",
             va="top", fontsize=8, color="0.35")  # fmt: skip
    fig.tight_layout(rect=(0, 0, 1, 0.97))
    return fig


def plot_models(card: pd.DataFrame, out: str | Path) -> Path:
    """:func:`models_figure` as a PNG at ``out``."""
    return _save_png(models_figure(card), out)


def write_card(
    config: dict,
    out: str | Path,
    tau_out: str | Path,
    pages_dir: str | Path | None = None,
    models: list[str] | None = None,
    tests_out: str | Path | None = None,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Collect the card, write it and its tau table (parquet), and under ``pages_dir`` ``tau.{html,md}``,
    ``models.png`` (every model, :func:`models_figure`) and per model (``models``, default those of the card)
    ``{model}.{html,md,png}``. With ``tests_out``, also the paired
    tests between models (permutation over per-item values, bootstrap over resampling statistics; MODEL_CARD_TESTS
    parquet, :mod:`unstereo.model_card.compare`) and under ``pages_dir``
    ``comparisons.{html,md}``: the findings, the tests and the agreement table."""
    from unstereo.model_card import compare
    from unstereo.tables import write_table

    card = collect(config)
    tau = kendall_table(card)
    write_table(card, out, MODEL_CARD)
    write_table(tau, tau_out, MODEL_CARD_TAU)
    if tests_out is not None:
        info = _metric_info()
        tests = compare.pair_tests(card, collect_items(config), info, seed=int(config.get("seed", 0) or 0),
                                   resampled=collect_resampled(config, card))  # fmt: skip
        write_table(tests, tests_out, compare.MODEL_CARD_TESTS)
        if pages_dir is not None:
            labels = dict(zip(zip(card["method"], card["metric"], strict=True), card["label"], strict=True))
            sentences = compare.findings(card, tests, tau, info)
            for fmt, name in (("html", "comparisons.html"), ("md", "comparisons.md")):
                page = compare.comparisons_page(
                    tests, sentences, _tau_rows(tau, labels), _TAU_COLUMNS, info, fmt, _CSS
                )
                write_text(Path(pages_dir) / name, page)
    if pages_dir is not None:
        pages = Path(pages_dir)
        write_text(pages / "tau.html", tau_page(tau, card=card))
        write_text(pages / "tau.md", tau_page(tau, "md", card))
        plot_models(card, pages / "models.png")
        for model in models if models is not None else list(dict.fromkeys(card["model"])):
            write_text(pages / f"{model}.html", model_page(card, model))
            write_text(pages / f"{model}.md", model_page(card, model, "md"))
            plot_model(card, model, pages / f"{model}.png")
    return card, tau
