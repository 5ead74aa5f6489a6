"""The stage's report figures and table.

- Figure 1 (paper Figure 1): the distribution of one classifier's sentiment scores per attribute value, one panel
  per attribute (box plots: median, quartiles, 1.5 IQR whiskers; the mean as a dot).
- Figure 2 (paper section 3, Figure 2): demographic parity at thresholds, the share of each subgroup's
  continuations with score > tau against tau, one panel per attribute; the fairer the model, the closer the curves.
- ``fairness.html``: I.F. and G.F. per attribute and classifier with their bootstrap intervals.
"""

from __future__ import annotations

import html
from pathlib import Path

import pandas as pd

from unstereo.io import atomic_path, write_text
from unstereo.render.formats import html_table


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _save(fig, path: Path) -> Path:
    with atomic_path(path) as tmp:
        fig.savefig(
            tmp, dpi=130, format="png", metadata={"Software": None}
        )  # fixed metadata: identical reruns
    return path


def figure1(df: pd.DataFrame, classifier: str, path: str | Path, title: str = "") -> Path:
    """Box plots of ``score_<classifier>`` per value, one panel per attribute."""
    plt = _pyplot()
    col = f"score_{classifier}"
    attrs = list(dict.fromkeys(df["attribute"]))
    heights = [max(1.6, 0.22 * df.loc[df["attribute"] == a, "value"].nunique() + 0.8) for a in attrs]
    fig, axes = plt.subplots(
        len(attrs), 1, figsize=(6.5, sum(heights)), squeeze=False, gridspec_kw={"height_ratios": heights}
    )
    for ax, attribute in zip(axes[:, 0], attrs, strict=True):
        d = df[df["attribute"] == attribute]
        values = list(dict.fromkeys(d["value"]))
        data = [d.loc[d["value"] == v, col].to_numpy(float) for v in values]
        ax.boxplot(data, orientation="horizontal", widths=0.6, flierprops={"markersize": 2})
        ax.scatter([x.mean() for x in data], range(1, len(values) + 1), s=10, color="C3", zorder=3)
        ax.set_yticks(range(1, len(values) + 1), values, fontsize=7)
        ax.invert_yaxis()  # the values top-down in file order
        ax.set_xlim(-0.02, 1.02)
        ax.set_title(f"{attribute}", fontsize=9)
        ax.grid(axis="x", ls=":", color="lightgray")
    axes[-1, 0].set_xlabel(f"sentiment score ({classifier}); dot = mean")
    fig.suptitle(f"Sentiment of continuations per value{f' — {title}' if title else ''}", fontsize=10)
    fig.tight_layout(rect=(0, 0, 1, 0.985))
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


def figure2(parity: pd.DataFrame, classifier: str, path: str | Path, title: str = "") -> Path:
    """P(S > tau | subgroup) against tau, one line per subgroup, one panel per attribute."""
    plt = _pyplot()
    p = parity[parity["classifier"] == classifier]
    attrs = list(dict.fromkeys(p["attribute"]))
    fig, axes = plt.subplots(1, len(attrs), figsize=(3.4 * len(attrs), 3.0), squeeze=False, sharey=True)
    for ax, attribute in zip(axes[0], attrs, strict=True):
        d = p[p["attribute"] == attribute]
        for subgroup, g in d.groupby("subgroup", sort=False):
            ax.plot(g["threshold"], g["positive_rate"], lw=1, marker=".", ms=3, label=subgroup)
        ax.set_title(attribute, fontsize=9)
        ax.set_xlabel("threshold τ")
        ax.set_ylim(-0.02, 1.02)
        ax.grid(ls=":", color="lightgray")
        if d["subgroup"].nunique() <= 12:
            ax.legend(fontsize=6)
    axes[0, 0].set_ylabel("P(S > τ | subgroup)")
    fig.suptitle(
        f"Demographic parity at thresholds ({classifier}){f' — {title}' if title else ''}", fontsize=10
    )
    fig.tight_layout()
    out = _save(fig, Path(path))
    plt.close(fig)
    return out


# The bootstrap resamples each prefix's continuations: with fewer than this many per prefix, two empirical
# distributions of a handful of scores and the percentiles of their resampled distances mean little.
MIN_PER_PREFIX = 10
CONVENTION = (
    "Convention: sentiment scores in [0, 1] and I.F., G.F. per attribute, as in the paper (Huang et al. 2020); the "
    "authors' decoding-biases code uses VADER's compound in [-1, 1] (every distance doubled), pools I.F. over all "
    "attributes and averages G.F. over all 41 subgroups."
)


def small_sample_warning(per_prefix: dict[str, int] | None, minimum: int = MIN_PER_PREFIX) -> str:
    """A sentence naming the attributes whose smallest prefix has fewer than ``minimum`` continuations, or ""."""
    small = {a: n for a, n in (per_prefix or {}).items() if n < minimum}
    if not small:
        return ""
    names = ", ".join(f"{a} ({n})" for a, n in small.items())
    return (
        f"Warning: fewer than {minimum} continuations per prefix for {names}: too few for the intervals to mean "
        "anything."
    )


def fairness_html(
    fairness: pd.DataFrame, path: str | Path, title: str = "", per_prefix: dict[str, int] | None = None
) -> Path:
    """The fairness table as an HTML table: one row per (attribute, classifier), I.F. and G.F. with intervals; below
    it the convention sentence and, given ``per_prefix`` (attribute -> fewest continuations of one of its
    prefixes), the small-sample warning."""
    rows = []
    for (attribute, classifier), g in fairness.groupby(["attribute", "classifier"], sort=False):
        cells = [attribute, classifier]
        for metric in ("IF", "GF"):
            r = g[g["metric"] == metric]
            if r.empty:
                cells.append("")
                continue
            r = r.iloc[0]
            ci = "" if pd.isna(r["ci_low"]) else f" [{r['ci_low']:.4f}, {r['ci_high']:.4f}]"
            cells.append(f"{r['value']:.4f}{ci}")
        rows.append(cells)
    head = ["attribute", "classifier", "I.F. [95% CI]", "G.F. [95% CI]"]
    caption = "Counterfactual sentiment bias: individual (I.F.) and group (G.F.) fairness, lower is fairer"
    out = [html_table(head, rows, caption=caption + (f" — {title}" if title else "")).rstrip("\n")]
    out.append(f"<p>{html.escape(CONVENTION)}</p>")
    warning = small_sample_warning(per_prefix)
    if warning:
        out.append(f"<p class='warning'><b>{html.escape(warning)}</b></p>")
    return write_text(path, "\n".join(out) + "\n")


def fewest_per_prefix(df: pd.DataFrame) -> dict[str, int]:
    """Attribute -> the fewest continuations any of its prefixes has."""
    if not {"attribute", "prefix"} <= set(df.columns):
        return {}
    sizes = df.groupby(["attribute", "prefix"], sort=False).size()
    return {str(a): int(n) for a, n in sizes.groupby(level=0, sort=False).min().items()}


def write_figures(
    df: pd.DataFrame,
    fairness: pd.DataFrame,
    parity: pd.DataFrame,
    out_dir: str | Path,
    classifier: str,
    title: str = "",
) -> list[Path]:
    """figure1.png, figure2.png and fairness.html in ``out_dir``."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    return [
        figure1(df, classifier, out_dir / "figure1.png", title),
        figure2(parity, classifier, out_dir / "figure2.png", title),
        fairness_html(fairness, out_dir / "fairness.html", title, fewest_per_prefix(df)),
    ]
