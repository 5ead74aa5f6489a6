"""Histogram of delta over the vocabulary with the selection bins and the sampled region (paper figure 4b style)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.io import atomic_path


def delta_histogram(
    vocab: pd.DataFrame,
    seeds: pd.DataFrame,
    edges: np.ndarray,
    region: tuple[float, float],
    out_prefix: str | Path,
    title: str | None = None,
) -> list[Path]:
    """Write ``<out_prefix>.png`` and ``.pdf``: delta histogram (5 bars per selection bin), the selection-bin edges
    (dotted), the sampled region (shaded) and the seed words' deltas (rug). Returns the written paths."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    delta = vocab["delta"].to_numpy(dtype=float)
    delta = delta[np.isfinite(delta)]
    fine = np.linspace(edges[0], edges[-1], 5 * (len(edges) - 1) + 1)
    fig, ax = plt.subplots(figsize=(6.4, 4.0))
    ax.hist(delta, bins=fine, color="#4c72b0", alpha=0.85, label=f"vocabulary ({len(delta):,} words)")
    for e in edges:
        ax.axvline(e, color="0.4", lw=0.6, ls=":", zorder=0)
    lo, hi = region
    in_region = int(((delta >= lo) & (delta <= hi)).sum())
    ax.axvspan(
        lo, hi, color="#dd8452", alpha=0.3, label=f"sampled region [{lo:.3g}, {hi:.3g}] ({in_region:,} words)"
    )
    if len(delta):
        ax.axvline(
            float(np.median(delta)), color="k", lw=1.0, ls="--", label=f"median {np.median(delta):.3f}"
        )
    if len(seeds):
        ymax = ax.get_ylim()[1]
        ax.plot(
            seeds["delta"].to_numpy(dtype=float),
            np.full(len(seeds), -0.02 * ymax),
            "|",
            color="#c44e52",
            ms=8,
            label=f"seed words ({len(seeds)})",
        )
    ax.set_xlabel(r"$\delta(w) = \mathrm{PMI}(w, she) - \mathrm{PMI}(w, he)$")
    ax.set_ylabel("number of words")
    ax.set_xlim(edges[0], edges[-1])
    ax.set_title(
        title or f"delta over the English vocabulary; {len(edges) - 1} equal-width bins", fontsize=10
    )
    ax.legend(fontsize=7, loc="upper right")
    fig.tight_layout()
    written = []
    out_prefix = Path(out_prefix)
    for ext in ("png", "pdf"):
        path = out_prefix.with_name(f"{out_prefix.name}.{ext}")
        with atomic_path(path) as tmp:
            fig.savefig(tmp, dpi=150, format=ext)
        written.append(path)
    plt.close(fig)
    return written
