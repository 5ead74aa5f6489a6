"""Figure 2 of the paper: benchmark size after the MaxPMI constraint, as a function of eta (one line per benchmark)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from unstereo.io import atomic_path
from unstereo.tables import write_table
from unstereo.unstereoeval.eta import eta_symbol, sort_etas


def plot_sizes(sizes: pd.DataFrame, prefix: str | Path) -> list[Path]:
    """Write ``{prefix}.png``, ``{prefix}.pdf`` (the figure) and ``{prefix}.csv`` (its data: ``eta_sizes``).

    Left: number of pairs per benchmark (log scale); right: the same as a percentage of the unconstrained size.
    The x axis runs from eta = inf (unconstrained) to the strictest eta.
    """
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    prefix = Path(prefix)
    etas = sort_etas(sizes["eta"])
    x = {eta: i for i, eta in enumerate(etas)}
    fig, (ax_n, ax_pct) = plt.subplots(1, 2, figsize=(9.5, 3.6), constrained_layout=True)
    for name, group in sizes.groupby("benchmark", sort=False):
        group = group.sort_values("eta", ascending=False)
        xs = [x[e] for e in group["eta"]]
        ax_n.plot(xs, group["n"], marker="o", label=name)
        ax_pct.plot(xs, 100 * group["fraction"], marker="o", label=name)
    for ax in (ax_n, ax_pct):
        ax.set_xticks(range(len(etas)), [eta_symbol(e) for e in etas])
        ax.set_xlabel("η (keep pairs with |MaxPMI| ≤ η)")
        ax.grid(alpha=0.3)
    ax_n.set_yscale("log")
    ax_n.set_ylabel("benchmark size (pairs)")
    ax_pct.set_ylabel("% of unconstrained size")
    ax_pct.set_ylim(0, 105)
    ax_pct.legend(fontsize="small", frameon=False)
    written = []
    for suffix in (".png", ".pdf"):
        out = prefix.with_name(prefix.name + suffix)
        with atomic_path(out) as tmp:
            fig.savefig(tmp, dpi=200, format=suffix[1:])
        written.append(out)
    plt.close(fig)
    csv = prefix.with_name(prefix.name + ".csv")
    write_table(sizes, csv)
    written.append(csv)
    return written
