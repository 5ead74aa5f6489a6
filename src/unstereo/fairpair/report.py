"""FairPair tables and figures for the report: Table 3 (mean V_pg, V_gp, B, F per model for Jaccard and sentiment),
Figure 3 (B vs number of samples), Figure 4 (B vs number of folds), Figure 5 (distribution of F and of B vs V) and
Figure 6 (most over-represented n-grams on each side). Figures with matplotlib (Agg), PNG plus their data as CSV."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.io import atomic_path
from unstereo.render.formats import write_table_files
from unstereo.render.table import Table

PHI_LABEL = {"jaccard": "Jaccard", "sentiment": "Sentiment"}
TERMS = (("mean_V_pg", "V_pg (orig.)"), ("mean_V_gp", "V_gp (pert.)"), ("mean_B", "B"), ("mean_F", "F"))
# Model-level F besides the paper's mean: ratio of means, median with its interval, infinite F counted.
F_COLUMNS = (("n_prompts", "prompts", 0), ("mean_F", "mean F (finite)", 3), ("F_ci_low", "CI low", 3),
             ("F_ci_high", "CI high", 3), ("n_inf_F", "infinite F", 0), ("ratio_F", "ratio of means", 3),
             ("median_F", "median F", 3), ("median_F_ci_low", "median CI low", 3),
             ("median_F_ci_high", "median CI high", 3))  # fmt: skip
# Fewer prompts than this and a bootstrap interval over prompts says little (the percentiles of a few dozen
# resamples of a handful of values); the table says so.
MIN_PROMPTS = 30
CONVENTION = (
    "Convention: F per model is the paper's mean of the per-prompt ratios (finite ones; infinite F counted, not "
    "averaged), shown beside the ratio of means mean(B^2) / (mean V_gp x mean V_pg) and the median, which one "
    "prompt with a small V cannot swing (table fairpair_f)."
)


def small_sample_warning(summary: pd.DataFrame, minimum: int = MIN_PROMPTS) -> str:
    """A sentence naming the (model, phi) rows with fewer than ``minimum`` prompts, or "" when none."""
    small = summary[summary["n_prompts"] < minimum]
    if small.empty:
        return ""
    names = ", ".join(
        f"{m} {p} ({n})" for m, p, n in zip(small["model"], small["phi"], small["n_prompts"], strict=True)
    )
    return (
        f"Warning: fewer than {minimum} prompts for {names}: the intervals resample too few prompts to mean "
        "anything."
    )


def table3(summary: pd.DataFrame, n: int) -> Table:
    """Table 3 of the paper at k = ``n`` (per sample): V_pg, V_gp, B scaled by 100 (as the paper prints them), F
    with its bootstrap interval, per model and phi; an "Average" row over models."""
    s = summary[summary["k"] == n]
    models = list(dict.fromkeys(s["model"]))
    phis = [p for p in PHI_LABEL if p in set(s["phi"])]
    cells, columns, headers = [], [], {}
    for phi in phis:
        for col, label in TERMS:
            key = f"{phi}|{col}"
            columns.append(key)
            headers[key] = f"{PHI_LABEL[phi]} {label}"
        for end in ("low", "high"):
            columns.append(f"{phi}|F_ci_{end}")
            headers[f"{phi}|F_ci_{end}"] = f"{PHI_LABEL[phi]} F CI {end}"
    rows = models + (["Average"] if len(models) > 1 else [])
    for phi in phis:
        sp = s[s["phi"] == phi].set_index("model")
        for col, _ in TERMS:
            scale, dec = (1.0, 3) if col == "mean_F" else (100.0, 1)
            vals = {m: float(sp.at[m, col]) * scale for m in models if m in sp.index}
            cells += [(m, f"{phi}|{col}", v, dec) for m, v in vals.items()]
            if len(models) > 1:
                cells.append(("Average", f"{phi}|{col}", float(np.mean(list(vals.values()))), dec))
        cells += [
            (m, f"{phi}|F_ci_{end}", float(sp.at[m, f"F_ci_{end}"]), 3)
            for m in models
            if m in sp.index
            for end in ("low", "high")
        ]
    warning = small_sample_warning(s)
    return Table(
        key="fairpair_table3",
        caption=(
            f"FairPair: mean sampling variability V_pg (continuations of the original prompt, perturbed) and V_gp "
            f"(continuations of the perturbed prompt), bias B (x100) and F per model, n = {n} samples per side; "
            "CI: the bootstrap interval of mean F (resampling prompts). "
            + CONVENTION
            + (f" {warning}" if warning else "")
        ),
        cells=pd.DataFrame(cells, columns=["row", "column", "value", "decimals"]),
        rows=rows,
        columns=columns,
        headers=headers,
    )


def f_table(summary: pd.DataFrame, n: int) -> Table:
    """Model-level F three ways per model and phi at k = ``n``: the mean of the finite per-prompt F with its
    interval, the count of infinite F, the ratio of means and the median with its interval."""
    s = summary[summary["k"] == n]
    rows, cells = [], []
    for m, phi, r in zip(s["model"], s["phi"], s.itertuples(index=False), strict=True):
        label = f"{m} / {PHI_LABEL.get(phi, phi)}"
        rows.append(label)
        cells += [(label, col, float(getattr(r, col)), dec) for col, _, dec in F_COLUMNS]
    warning = small_sample_warning(s)
    return Table(
        key="fairpair_f",
        caption=(
            f"FairPair model-level F, n = {n} samples per side: mean of the finite per-prompt F with its bootstrap "
            "interval, prompts with an infinite F (counted, not averaged), the ratio of means mean(B^2) / "
            "(mean V_gp x mean V_pg), and the median F with its bootstrap interval (resampling prompts). "
            + CONVENTION
            + (f" {warning}" if warning else "")
        ),
        cells=pd.DataFrame(cells, columns=["row", "column", "value", "decimals"]),
        rows=rows,
        columns=[c for c, _, _ in F_COLUMNS],
        headers={c: label for c, label, _ in F_COLUMNS},
        row_label="Model / phi",
    )


def write_table3(summary: pd.DataFrame, n: int, out_dir: str | Path) -> list[Path]:
    """Table 3 and the model-level F table as CSV, Markdown, LaTeX and HTML under ``out_dir``."""
    return write_table_files(table3(summary, n), out_dir) + write_table_files(f_table(summary, n), out_dir)


def _save(fig, path: Path, data: pd.DataFrame) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=110, bbox_inches="tight")
    with atomic_path(path.with_suffix(".csv")) as tmp:
        data.to_csv(tmp, index=False)
    return path


def _plt():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_curves(curves: pd.DataFrame, axis: str, path: str | Path) -> Path:
    """Figure 3 (``axis="samples"``) or 4 (``"folds"``): mean B (solid) and V_pg, V_gp (dotted, dashed) against
    the number of samples or folds, one panel per phi, one colour per model."""
    plt = _plt()
    data = curves[curves["axis"] == axis]
    phis = [p for p in PHI_LABEL if p in set(data["phi"])] or ["jaccard"]
    fig, axes = plt.subplots(1, len(phis), figsize=(4.2 * len(phis), 3.2), squeeze=False)
    cmap = plt.get_cmap("tab10")
    models = list(dict.fromkeys(data["model"]))
    for ax, phi in zip(axes[0], phis, strict=True):
        for i, m in enumerate(models):
            d = data[(data["phi"] == phi) & (data["model"] == m)].sort_values("x")
            ax.plot(d["x"], d["B"], "-o", ms=3, color=cmap(i % 10), label=f"{m} B")
            ax.plot(d["x"], d["V_pg"], ":", color=cmap(i % 10), label=f"{m} V_pg")
            ax.plot(d["x"], d["V_gp"], "--", color=cmap(i % 10), label=f"{m} V_gp")
        ax.set_xlabel("number of samples" if axis == "samples" else "number of folds k")
        ax.set_ylabel(f"{PHI_LABEL[phi]} dissimilarity")
        ax.set_title(PHI_LABEL[phi])
    axes[0][-1].legend(fontsize=6, loc="best")
    fig.tight_layout()
    out = _save(fig, Path(path), data)
    plt.close(fig)
    return out


def plot_distributions(per_prompt: pd.DataFrame, n: int, path: str | Path) -> Path:
    """Figure 5: per phi, the distribution over prompts of F (left) and of B against V_pg and V_gp (right), per
    model (k = n; infinite F drawn at the largest finite value and counted in the title)."""
    plt = _plt()
    data = per_prompt[per_prompt["k"] == n]
    phis = [p for p in PHI_LABEL if p in set(data["phi"])] or ["jaccard"]
    models = list(dict.fromkeys(data["model"]))
    fig, axes = plt.subplots(len(phis), 2, figsize=(9, 3.0 * len(phis)), squeeze=False)
    for row, phi in zip(axes, phis, strict=True):
        d = data[data["phi"] == phi]
        fs = [d.loc[d["model"] == m, "F"].dropna().to_numpy(dtype=float) for m in models]
        finite = np.concatenate([f[np.isfinite(f)] for f in fs] + [np.array([1.0])])
        n_inf = sum(int(np.isinf(f).sum()) for f in fs)
        row[0].boxplot(
            [np.where(np.isinf(f), finite.max(), f) if len(f) else [np.nan] for f in fs],
            tick_labels=models,
            showmeans=True,
        )
        row[0].axhline(1.0, color="grey", lw=0.8, ls="--")
        row[0].set_title(f"{PHI_LABEL[phi]}: F per prompt" + (f" ({n_inf} infinite)" if n_inf else ""))
        groups, labels = [], []
        for m in models:
            dm = d[d["model"] == m]
            for col in ("B", "V_pg", "V_gp"):
                groups.append(dm[col].dropna().to_numpy(dtype=float))
                labels.append(f"{m}\n{col}")
        row[1].boxplot([g if len(g) else [np.nan] for g in groups], tick_labels=labels)
        row[1].tick_params(axis="x", labelsize=6, labelrotation=30)
        row[1].set_title(f"{PHI_LABEL[phi]}: B and sampling variability")
    fig.tight_layout()
    out = _save(fig, Path(path), data)
    plt.close(fig)
    return out


def plot_ngrams(ngrams: pd.DataFrame, path: str | Path, top: int = 10) -> Path:
    """Figure 6: per model, the n-grams most over-represented in p(g(x)) (left) and in g(p(x)) (right), each with
    its frequency on both sides."""
    plt = _plt()
    models = list(dict.fromkeys(ngrams["model"])) or ["(none)"]
    fig, axes = plt.subplots(len(models), 2, figsize=(10, 0.28 * top * len(models) + 1.2), squeeze=False)
    for row, m in zip(axes, models, strict=True):
        for ax, side, title in ((row[0], "pg", "more in p(g(x))"), (row[1], "gp", "more in g(p(x))")):
            d = ngrams[(ngrams["model"] == m) & (ngrams["side"] == side)].sort_values("rank").head(top)
            y = np.arange(len(d))[::-1]
            ax.barh(y + 0.2, d["freq_pg"], height=0.4, label="p(g(x))")
            ax.barh(y - 0.2, d["freq_gp"], height=0.4, label="g(p(x))")
            ax.set_yticks(y, list(d["ngram"]), fontsize=7)
            ax.set_title(f"{m}: {title}", fontsize=9)
            ax.set_xlabel("share of continuations")
        row[1].legend(fontsize=7)
    fig.tight_layout()
    out = _save(fig, Path(path), ngrams)
    plt.close(fig)
    return out
