"""Figure 6 of the paper: fairness curves (US as a fraction vs the threshold eps) per model and benchmark.

One panel per (model group, benchmark); a deduplicated Pythia model is drawn dashed in the colour of its original.
The figure is written as PNG and PDF with its data as CSV (one row per model, benchmark, eps).
"""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from unstereo.defaults import PAPER_BENCHMARKS
from unstereo.errors import InputError
from unstereo.io import atomic_path
from unstereo.models.registry import attach
from unstereo.tables import write_table

GROUPS = [
    ("Pythia and GPT-J", {"Pythia", "GPT-J"}),
    ("OPT", {"OPT"}),
    ("Llama-2, MPT, OLMo, Mistral", None),  # None: every other family of the registry
]
OTHER = "models not in the registry"  # e.g. the offline default's GGUF models


def y_label(group: str, groups: list[str]) -> str:
    """The y-axis label of a panel row: "US", with the row's model group when the figure has more than one."""
    return "US" if len(groups) <= 1 else f"US\n{group}"


def figure_data(curves: pd.DataFrame, registry: pd.DataFrame, eta: float = math.inf) -> pd.DataFrame:
    """The curves at ``eta`` with display names, family group and the dashed (deduplicated) flag."""
    need = {"model", "benchmark", "eta", "eps", "us"}
    if not need <= set(curves.columns):
        raise InputError(f"curves table lacks column(s) {sorted(need - set(curves.columns))}", path="curves")
    data = curves[curves["eta"] == eta]
    if data.empty:
        raise InputError(f"curves table has no rows for eta={eta}", path="curves")
    data = attach(data, registry)
    fam = dict(zip(registry["id"], registry["family"], strict=True))
    group = []
    for m in data["model"]:
        f = fam.get(m)
        if f is None:
            group.append(OTHER)
            continue
        group.append(next((g for g, fams in GROUPS if fams is not None and f in fams), GROUPS[-1][0]))
    data = data.assign(group=group)
    data["base_name"] = data["display_name"].str.replace(" (D)", "", regex=False)
    return data.sort_values(["order", "benchmark", "eps"], kind="stable").reset_index(drop=True)


def plot_fairness_curves(data: pd.DataFrame, out_stem: str | Path, title: str | None = None) -> list[Path]:
    """Draw the grid (rows: model groups present; columns: benchmarks present) and write PNG, PDF and CSV."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out_stem = Path(out_stem)
    out_stem.parent.mkdir(parents=True, exist_ok=True)
    benches = [b for b in PAPER_BENCHMARKS if b in set(data["benchmark"])]
    benches += sorted(set(data["benchmark"]) - set(benches))
    groups = [g for g in [*(g for g, _ in GROUPS), OTHER] if g in set(data["group"])]
    fig, axes = plt.subplots(
        len(groups), len(benches), figsize=(3.0 * len(benches), 2.6 * len(groups)), sharey=True, squeeze=False
    )
    cmap = plt.get_cmap("tab10")
    for i, g in enumerate(groups):
        gd = data[data["group"] == g]
        colours = {name: cmap(k % 10) for k, name in enumerate(dict.fromkeys(gd["base_name"]))}
        for j, b in enumerate(benches):
            ax = axes[i][j]
            for _key, cd in gd[gd["benchmark"] == b].groupby(["order", "model"], sort=True):
                first = cd.iloc[0]
                ax.plot(
                    cd["eps"],
                    cd["us"],
                    lw=1.2,
                    color=colours[first["base_name"]],
                    ls="--" if first["deduplicated"] else "-",
                    label=first["display_name"],
                )
            ax.set_ylim(0, 1)
            ax.set_xlim(float(data["eps"].min()), float(data["eps"].max()))
            ax.grid(ls=":", color="lightgray")
            if i == 0:
                ax.set_title(b)
            if i == len(groups) - 1:
                base = set(gd["log_base"]) if "log_base" in gd else {"e"}
                ax.set_xlabel("threshold ε" + (" (log10)" if base == {"10"} else ""))
            if j == 0:
                ax.set_ylabel(y_label(g, groups), fontsize=8)
        axes[i][-1].legend(fontsize=6, loc="lower right", ncol=2)
    if title:
        fig.suptitle(title)
    fig.tight_layout()
    paths = [out_stem.with_suffix(".png"), out_stem.with_suffix(".pdf"), out_stem.with_suffix(".csv")]
    # Fixed metadata so reruns give identical files.
    with atomic_path(paths[0]) as tmp:
        fig.savefig(tmp, dpi=150, format="png", metadata={"Software": None})
    with atomic_path(paths[1]) as tmp:
        fig.savefig(tmp, format="pdf", metadata={"Creator": None, "Producer": None, "CreationDate": None})
    plt.close(fig)
    cols = ["model", "display_name", "group", "deduplicated", "benchmark", "eta", "eps", "us"]
    cols += [c for c in ("log_base",) if c in data.columns]
    write_table(data[cols], paths[2])
    return paths
