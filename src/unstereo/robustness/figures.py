"""Figures of the robustness stage, like the paper's Figures 3 and 4, and its HTML tables.

- :func:`plot_constructions` (Figure 3): one panel per benchmark, the bias score of each model under each
  construction (grouped bars; the original construction first, sub-samples as their mean with the 95 % interval).
- :func:`plot_subsampling` (Figure 4): one panel per (benchmark, fraction), the distribution of each model's score
  over the sub-sampling trials (box plots), the original construction's score as a marker.
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from unstereo.io import atomic_path
from unstereo.robustness.build import ORIGINAL

LABELS = {"us": "US (%)", "pd": "PD (%)", "aufc": "AuFC"}


def _save(fig, out: Path) -> Path:
    import matplotlib.pyplot as plt

    with atomic_path(out) as tmp:
        fig.savefig(tmp, dpi=130, format="png", metadata={"Software": None})
    plt.close(fig)
    return out


def _pyplot():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _order(constructions) -> list[str]:
    names = list(dict.fromkeys(constructions))
    return [ORIGINAL] * (ORIGINAL in names) + [n for n in names if n != ORIGINAL]


def plot_constructions(
    scores: pd.DataFrame, out: str | Path, metric: str = "us", eta: float = math.inf
) -> Path:
    """Figure 3: ``metric`` per construction per model (mean over trials; error bars = 2.5-97.5 percentiles)."""
    plt = _pyplot()
    data = scores[scores["eta"] == eta]
    benches = sorted(set(data["benchmark"]))
    models = sorted(set(data["model"]))
    fig, axes = plt.subplots(
        len(benches) or 1,
        1,
        figsize=(max(6.0, 0.9 * data["construction"].nunique() + 2), 3.2 * max(1, len(benches))),
        squeeze=False,
    )
    cmap = plt.get_cmap("tab10")
    width = 0.8 / max(1, len(models))
    for ax, bench in zip(axes[:, 0], benches, strict=False):
        bd = data[data["benchmark"] == bench]
        order = _order(bd["construction"])
        for k, model in enumerate(models):
            md = bd[bd["model"] == model].groupby("construction")[metric]
            mean = md.mean().reindex(order)
            lo = mean - md.quantile(0.025).reindex(order)
            hi = md.quantile(0.975).reindex(order) - mean
            xs = [i + (k - (len(models) - 1) / 2) * width for i in range(len(order))]
            ax.bar(
                xs, mean, width, yerr=[lo.fillna(0), hi.fillna(0)], color=cmap(k % 10), label=model, capsize=2
            )
        ax.set_xticks(range(len(order)))
        ax.set_xticklabels(order, rotation=35, ha="right", fontsize=7)
        ax.set_ylabel(LABELS.get(metric, metric))
        ax.set_title(bench)
        ax.grid(axis="y", ls=":", color="lightgray")
        ax.legend(fontsize=7)
    fig.tight_layout()
    return _save(fig, Path(out))


def plot_subsampling(
    scores: pd.DataFrame, out: str | Path, metric: str = "us", eta: float = math.inf
) -> Path:
    """Figure 4: distribution over the trials of each sub-sampling fraction, per benchmark and model."""
    plt = _pyplot()
    data = scores[scores["eta"] == eta]
    samples = data[data["construction"].str.startswith("sample_")]
    benches = sorted(set(samples["benchmark"])) or sorted(set(data["benchmark"]))
    fractions = sorted(set(samples["construction"]), key=lambda n: float(n.split("_", 1)[1])) or ["(none)"]
    models = sorted(set(data["model"]))
    fig, axes = plt.subplots(
        max(1, len(benches)),
        len(fractions),
        figsize=(3.2 * len(fractions), 3.0 * max(1, len(benches))),
        squeeze=False,
    )
    for i, bench in enumerate(benches):
        for j, frac in enumerate(fractions):
            ax = axes[i][j]
            sd = samples[(samples["benchmark"] == bench) & (samples["construction"] == frac)]
            values = [sd.loc[sd["model"] == m, metric].dropna().to_numpy() for m in models]
            if any(len(v) for v in values):
                ax.boxplot(values, showfliers=False)
                ax.set_xticks(range(1, len(models) + 1), models, rotation=30, ha="right", fontsize=7)
            ref = data[(data["benchmark"] == bench) & (data["construction"] == ORIGINAL)]
            for k, m in enumerate(models, start=1):
                v = ref.loc[ref["model"] == m, metric]
                if len(v):
                    ax.plot([k], [float(v.iloc[0])], marker="D", color="black", ms=4)
            ax.set_title(f"{bench}: {frac.replace('sample_', '')} %", fontsize=9)
            ax.grid(axis="y", ls=":", color="lightgray")
            if j == 0:
                ax.set_ylabel(LABELS.get(metric, metric))
    fig.tight_layout()
    return _save(fig, Path(out))


def html_table(df: pd.DataFrame, out: str | Path, title: str) -> Path:
    """``df`` as a small standalone HTML page (a report table)."""
    out = Path(out)
    body = df.to_html(index=False, float_format=lambda v: f"{v:.3f}", border=0)
    page = f"<!doctype html><html><head><meta charset='utf-8'><title>{title}</title></head><body><h3>{title}</h3>{body}</body></html>\n"
    with atomic_path(out) as tmp:
        tmp.write_text(page, encoding="utf-8")
    return out
