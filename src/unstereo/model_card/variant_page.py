"""The card's section on model variants: the figure (bias change from the base against strength, one panel per
headline metric, interventions as colours, paired-bootstrap intervals), the page (findings, then the tables) and
:func:`write`, which collects everything from a finished results tree.
"""

from __future__ import annotations

import html
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.model_card import variant_effects as E
from unstereo.model_card import variant_occupations as O
from unstereo.model_card.compare import fmt_p

TITLE = "Model variants against their bases"
_COLOURS = {"control": "0.45", "cda": "C0", "embedding": "C2", "sentiment": "C3"}
_MARKERS = "osD^v"


def figure(changes: pd.DataFrame, info: dict):
    """One panel per headline metric (``method: label``; a method with two metrics has two panels, their units
    differ): each variant's bias change from its base (> 0 = more biased) against its strength, with its 95 %
    paired-bootstrap interval; interventions as colours (the control at strength 0), bases as markers, a
    variant that moves (Holm p < 0.05) as a filled marker, one that does not as an open one. Returns the figure."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = list(dict.fromkeys(zip(changes["method"], changes["metric"], strict=True)))
    n = max(1, len(keys))
    cols = min(3, n)
    rows = -(-n // cols)
    fig, axes = plt.subplots(rows, cols, figsize=(4.1 * cols + 0.4, 2.9 * rows + 0.9), squeeze=False)
    for ax in axes.ravel()[len(keys) :]:
        ax.axis("off")
    if not keys:
        axes[0, 0].text(0.5, 0.5, "No variant was measured with its base.", ha="center", va="center")
    bases = list(dict.fromkeys(changes["base"]))
    interventions = list(dict.fromkeys(changes["intervention"]))
    for ax, key in zip(axes.ravel(), keys, strict=False):
        g = changes[(changes["method"] == key[0]) & (changes["metric"] == key[1])]
        ax.axhline(0, color="k", lw=0.8)
        for (base, intervention), h in g.groupby(["base", "intervention"], sort=False):
            h = h.sort_values("strength")
            colour = _COLOURS.get(intervention, f"C{4 + interventions.index(intervention) % 5}")
            marker = _MARKERS[bases.index(base) % len(_MARKERS)]
            x, y = h["strength"].to_numpy(float), h["bias_change"].to_numpy(float)
            lo, hi = h["ci_low"].to_numpy(float), h["ci_high"].to_numpy(float)
            err = np.vstack([np.where(np.isfinite(lo), y - lo, 0), np.where(np.isfinite(hi), hi - y, 0)])
            ax.errorbar(x, y, yerr=np.clip(err, 0, None), fmt="none", ecolor=colour, capsize=4, lw=1.4)
            if len(h) > 1:
                ax.plot(x, y, "-", color=colour, lw=1)
            moved = (h["moves"] != E.STILL).to_numpy()
            ax.plot(x[moved], y[moved], marker, color=colour, ms=7, ls="none")
            ax.plot(x[~moved], y[~moved], marker, mfc="white", mec=colour, ms=7, ls="none")
        hm = info.get(key)
        ax.set_title(f"{key[0]}: {hm.label if hm else key[1]}", loc="left", fontsize=9)
        ax.set_xlabel("strength (control = 0)", fontsize=8)
        ax.set_ylabel("bias(variant) − bias(base)\n↑ more biased", fontsize=8)
        ax.tick_params(labelsize=7.5)
        strengths = g["strength"].to_numpy(float)
        span = max(0.1, float(np.ptp(strengths))) if len(strengths) else 1.0
        ax.set_xlim(float(strengths.min()) - 0.15 * span, float(strengths.max()) + 0.15 * span)
        for s in ("right", "top"):
            ax.spines[s].set_visible(False)
    handles = [
        plt.Line2D([], [], color=_COLOURS.get(i, "C5"), marker="o", ls="-", label=i) for i in interventions
    ]
    handles += [plt.Line2D([], [], color="0.3", marker=_MARKERS[i % len(_MARKERS)], ls="none", label=f"base {b}")
                for i, b in enumerate(bases)]  # fmt: skip
    handles += [
        plt.Line2D([], [], color="0.3", marker="o", mfc="white", ls="none", label="does not move (Holm)")
    ]
    fig.legend(handles=handles, loc="lower center", ncol=min(6, len(handles)), fontsize=8, frameon=False)
    fig.suptitle(f"{TITLE}: change of each headline metric (95 % paired-bootstrap intervals)", x=0.01, ha="left",
                 fontsize=11, fontweight="bold")  # fmt: skip
    fig.tight_layout(rect=(0, 0.07, 1, 0.95))
    return fig


def _n(v) -> str:
    return "" if v is None or pd.isna(v) or not np.isfinite(float(v)) else f"{float(v):.3g}"


_CHANGE_COLUMNS = ("Metric", "Variant", "Base", "Intervention", "Strength", "Items", "Base value", "Variant value",
                   "Bias change [95 % CI]", "p", "Smallest p", "p (Holm)", "Moves", "Test")  # fmt: skip
_DOSE_COLUMNS = ("Metric", "Base", "Intervention", "Strengths", "Spearman rho", "p", "Smallest p", "p (Holm)",
                 "Verdict")  # fmt: skip
_TOGETHER_COLUMNS = ("Intervention", "Metric", "Base", "Variants", "Moves", "Same on every base")
_OCC_COLUMNS = ("Measure", "Share", "Variant", "Base", "Intervention", "n", "Slope (base)", "Slope (variant)",
                "|variant| − |base| [95 % CI]", "p (Holm)", "Verdict")  # fmt: skip


def _label(info, method, metric) -> str:
    return E._label(info, method, metric)


def tables(changes, dose, moved, slopes, info) -> list[tuple[str, tuple[str, ...], list[list[str]]]]:
    """(title, header, rows) of each table of the page."""
    ch = [[_label(info, r.method, r.metric), r.variant, r.base, r.intervention, f"{r.strength:g}", str(r.n_items),
           _n(r.value_base), _n(r.value_variant), f"{_n(r.bias_change)} [{_n(r.ci_low)}, {_n(r.ci_high)}]",
           fmt_p(r.p_value), _n(r.min_p), fmt_p(r.p_holm), r.moves, r.test]
          for r in changes.itertuples(index=False)]  # fmt: skip
    do = [[_label(info, r.method, r.metric), r.base, r.intervention, r.strengths, _n(r.spearman), fmt_p(r.p_value),
           _n(r.min_p), fmt_p(r.p_holm), r.verdict] for r in dose.itertuples(index=False)]  # fmt: skip
    to = [[r.intervention, _label(info, r.method, r.metric), r.base, str(r.n_variants), r.moves, r.same_across_bases]
          for r in moved.itertuples(index=False)]  # fmt: skip
    oc = [[r.measure, r.yardstick, r.variant, r.base, r.intervention, str(r.n), _n(r.slope_base),
           _n(r.slope_variant), f"{_n(r.steepness)} [{_n(r.ci_low)}, {_n(r.ci_high)}]", fmt_p(r.p_holm), r.verdict]
          for r in slopes.itertuples(index=False)]  # fmt: skip
    return [
        ("Each variant against its base (paired tests, Holm over this table)", _CHANGE_COLUMNS, ch),
        ("Dose-response over strength (Spearman, exact permutation p)", _DOSE_COLUMNS, do),
        ("Do the methods move together?", _TOGETHER_COLUMNS, to),
        ("Per-occupation leans: slope against the share of women", _OCC_COLUMNS, oc),
    ]


NOTE = (
    "Each variant (a model the variants stage fine-tuned from a base; which base, intervention and strength is read "
    "from its variant.json) is compared with its base on the items both were measured on, by the card's paired "
    "tests: the permutation test for a metric that is a mean of per-item values, the paired bootstrap for another "
    "statistic of items. The change is oriented as on the card: bias(variant) - bias(base), > 0 = the variant is "
    "more biased (a Stereotype Score is more biased the farther from 50). Its interval is the 95 % percentile "
    "interval of the same change over paired bootstrap resamples of the items. Holm's correction runs over every "
    "variant test (one family, apart from the card's comparisons of models). The dose-response series of an "
    "intervention holds its variants only: neither the base nor the control is counted as strength 0. The "
    "control (the same fine-tune without the intervention) shows what fine-tuning on this text does by itself."
)


def page(sentences: list[str], table_list, fmt: str = "html", css: str = "") -> str:
    """The findings (a bullet a sentence) and the tables as one HTML page or Markdown."""
    from unstereo.render.formats import html_table, markdown_table

    if fmt == "md":
        body = "".join(f"- {s}\n" for s in sentences)
        parts = [f"# {TITLE}\n\n## Findings\n\n{body}"]
        for title, header, rows in table_list:
            parts.append(f"## {title}\n\n" + (markdown_table(header, rows) if rows else "None.\n"))
        return "\n".join(parts) + f"\n{NOTE}\n"
    bullets = "".join(f"<li>{html.escape(s)}</li>" for s in sentences)
    parts = [f"<h3>Findings</h3>\n<ul>{bullets}</ul>"]
    for title, header, rows in table_list:
        parts.append(
            f"<h3>{html.escape(title)}</h3>\n" + (html_table(header, rows) if rows else "<p>None.</p>")
        )
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{TITLE}</title><style>{css}</style></head>"
        f"<body><h2>{TITLE}</h2>\n" + "\n".join(parts) + f"\n<p>{html.escape(NOTE)}</p></body></html>\n"
    )


def write(
    config: dict,
    out: str | Path,
    dose_out: str | Path,
    together_out: str | Path,
    occupations_out: str | Path,
    pages_dir: str | Path,
    leans: str | Path | None = None,
    perplexity: str | Path | None = None,
) -> pd.DataFrame:
    """Collect the card (:func:`unstereo.model_card.card.collect`, its per-item values and resampling statistics)
    and the variants among its models (:func:`unstereo.model_card.variant_models.find_variants`), and write the
    VARIANT_CHANGES, VARIANT_DOSE, VARIANT_TOGETHER and VARIANT_OCCUPATIONS tables (the last from the
    OCCUPATION_LEANS table ``leans``; empty without one) and under ``pages_dir`` ``variants.{html,md,png}``
    (findings from :func:`unstereo.model_card.variant_effects.findings` and
    :func:`unstereo.model_card.variant_occupations.findings`, with each variant's perplexity ratio from the
    variants stage's PERPLEXITY table ``perplexity`` where given). Returns the changes."""
    from unstereo.io import write_text
    from unstereo.model_card import card as C
    from unstereo.model_card.occupations import OCCUPATION_LEANS
    from unstereo.model_card.variant_models import find_variants
    from unstereo.tables import read_table, write_table

    seed = int(config.get("seed", 0) or 0)
    card = C.collect(config)
    info = C._metric_info()
    variants = find_variants(config, list(dict.fromkeys(card["model"])))
    changes = E.change_tests(
        card, C.collect_items(config), info, variants, C.collect_resampled(config, card), seed
    )
    dose = E.dose_response(changes, seed=seed)
    moved = E.together(changes)
    lean_table = read_table(leans, OCCUPATION_LEANS) if leans else None
    slopes = O.variant_slopes(lean_table, variants, seed) if lean_table is not None else O.variant_slopes(
        pd.DataFrame(columns=OCCUPATION_LEANS.names), [], seed
    )  # fmt: skip
    ppl = pd.read_parquet(perplexity) if perplexity and Path(perplexity).is_file() else None
    write_table(changes, out, E.VARIANT_CHANGES)
    write_table(dose, dose_out, E.VARIANT_DOSE)
    write_table(moved, together_out, E.VARIANT_TOGETHER)
    write_table(slopes, occupations_out, O.VARIANT_OCCUPATIONS)
    sentences = E.findings(changes, dose, moved, info, variants, ppl)
    if lean_table is not None:
        sentences += O.findings(slopes)
    pages = Path(pages_dir)
    parts = tables(changes, dose, moved, slopes, info)
    write_text(pages / "variants.html", page(sentences, parts, "html", C._CSS))
    write_text(pages / "variants.md", page(sentences, parts, "md"))
    C._save_png(figure(changes, info), pages / "variants.png")
    return changes
