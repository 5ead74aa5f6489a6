"""The report figure of a biastest run: Stereotype Score per specification, model and source, with intervals."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from unstereo.io import atomic_path


def plot_scores(summary: pd.DataFrame, out: str | Path) -> Path:
    """Horizontal bars (one panel per source) of the whole-specification Stereotype Score of every model, with
    the bootstrap interval and the 50 % line; PNG."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    whole = summary[summary["attribute"] == "*"]
    sources = sorted(whole["source"].unique())
    specs = sorted(whole["spec"].unique())
    models = sorted(whole["model"].unique())
    height = max(2.5, 0.28 * len(specs) * max(1, len(models)) + 1.0)
    fig, axes = plt.subplots(1, max(1, len(sources)), figsize=(4.2 * max(1, len(sources)) + 2.5, height),
                             sharey=True, squeeze=False)  # fmt: skip
    step = 0.8 / max(1, len(models))
    for ax, source in zip(axes[0], sources, strict=False):
        df = whole[whole["source"] == source].set_index(["spec", "model"])
        for k, model in enumerate(models):
            ys, xs, lo, hi = [], [], [], []
            for i, spec in enumerate(specs):
                if (spec, model) in df.index:
                    r = df.loc[(spec, model)]
                    ys.append(i + k * step)
                    xs.append(r["stereotype_score"])
                    lo.append(r["stereotype_score"] - r["ci_low"])
                    hi.append(r["ci_high"] - r["stereotype_score"])
            ax.barh(ys, xs, height=step * 0.9, xerr=[lo, hi], label=model, capsize=2)
        ax.axvline(50, color="k", lw=0.8, ls="--")
        ax.set_xlim(0, 100)
        ax.set_title(source)
        ax.set_xlabel("Stereotype Score (%)")
    axes[0][0].set_yticks([i + step * (len(models) - 1) / 2 for i in range(len(specs))])
    axes[0][0].set_yticklabels([s if len(s) <= 42 else s[:40] + "…" for s in specs], fontsize=7)
    axes[0][0].invert_yaxis()
    axes[0][-1].legend(fontsize=7, loc="lower right")
    fig.tight_layout()
    out = Path(out)
    with atomic_path(out) as tmp:
        fig.savefig(tmp, format="png", dpi=110)
    plt.close(fig)
    return out
