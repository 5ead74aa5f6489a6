"""The paper's appendix A from a delta table: Table 4, Figure 4 (PMI she/he, delta histogram), Figure 5 (Kendall tau).

- Table 4: per gendered pair, the number of words whose delta is defined (absolute) and that number as a percent
  of the words in the delta table (relative; the table's rows are every counted word with c(w) >= min_count).
- Figure 4 (a): marginal distributions of PMI(w, she) and PMI(w, he) and their joint distribution (words where
  both are defined); (b): histogram of delta with its median.
- Figure 5: Kendall tau (``scipy.stats.kendalltau``, default tau-b) between the delta rankings of every two pairs,
  over the words where both deltas are defined (NaN with fewer than 2 such words).

Every figure is written as PNG and PDF, with the plotted numbers as CSV beside it.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.io import atomic_path, write_json, write_text
from unstereo.render.formats import markdown_table
from unstereo.unstereoeval.corpus.delta import pair_column
from unstereo.unstereoeval.lexicon import Pair


def table4(delta: pd.DataFrame, pairs: Sequence[Pair]) -> pd.DataFrame:
    """Words with a defined delta per pair: absolute and relative (percent of the table's words)."""
    n = len(delta)
    rows = []
    for p in pairs:
        col = pair_column(p)
        k = int(delta[col].notna().sum()) if col in delta else 0
        rows.append(
            {"female": p.female, "male": p.male, "absolute": k, "relative": 100.0 * k / n if n else np.nan}
        )
    return pd.DataFrame(rows)


def kendall_matrix(delta: pd.DataFrame, pairs: Sequence[Pair]) -> pd.DataFrame:
    """Kendall tau between the pairs' delta columns (pairwise complete words)."""
    from scipy.stats import kendalltau

    names = [p.name for p in pairs]
    cols = [delta[pair_column(p)].to_numpy(np.float64) for p in pairs]
    out = np.full((len(pairs), len(pairs)), np.nan)
    for i in range(len(pairs)):
        for j in range(i, len(pairs)):
            both = ~np.isnan(cols[i]) & ~np.isnan(cols[j])
            if both.sum() >= 2:
                tau = kendalltau(cols[i][both], cols[j][both]).statistic
                out[i, j] = out[j, i] = tau
    return pd.DataFrame(out, index=pd.Index(names, name="pair"), columns=names)


def _save(fig, out_dir: Path, stem: str) -> list[Path]:
    import matplotlib.pyplot as plt

    paths = []
    for ext in ("png", "pdf"):
        path = out_dir / f"{stem}.{ext}"
        with atomic_path(path) as tmp:
            fig.savefig(tmp, format=ext, dpi=150, bbox_inches="tight")
        paths.append(path)
    plt.close(fig)
    return paths


def _csv(df: pd.DataFrame, path: Path, index: bool = False) -> Path:
    with atomic_path(path) as tmp:
        df.to_csv(tmp, index=index)
    return path


def _markdown(t4: pd.DataFrame) -> str:
    rows = [[r.female, r.male, str(r.absolute), f"{r.relative:.2f}"] for r in t4.itertuples()]
    return markdown_table(["Female", "Male", "Absolute Counts", "Relative Counts (%)"], rows)


def write_appendix(
    delta: pd.DataFrame,
    pairs: Sequence[Pair],
    out_dir: str | Path,
    main_pair: tuple[str, str] = ("she", "he"),
    bins: int = 60,
) -> list[Path]:
    """Write Table 4, Figures 4 and 5 and their data under ``out_dir``; returns the files written."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written: list[Path] = []
    f, m = main_pair

    t4 = table4(delta, pairs)
    written.append(_csv(t4, out / "table4.csv"))
    written.append(write_text(out / "table4.md", _markdown(t4)))

    # Figure 4 (a): marginal and joint distributions of PMI(w, she), PMI(w, he)
    pf, pm = delta[f"pmi_{f}"].to_numpy(np.float64), delta[f"pmi_{m}"].to_numpy(np.float64)
    finite = np.concatenate([pf[~np.isnan(pf)], pm[~np.isnan(pm)]])
    lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 1.0)
    edges = np.linspace(lo, hi if hi > lo else lo + 1, bins + 1)
    hf, _ = np.histogram(pf[~np.isnan(pf)], edges)
    hm, _ = np.histogram(pm[~np.isnan(pm)], edges)
    written.append(
        _csv(
            pd.DataFrame({"bin_left": edges[:-1], "bin_right": edges[1:], f"pmi_{f}": hf, f"pmi_{m}": hm}),
            out / "fig4a_marginal_hist.csv",
        )
    )
    both = ~np.isnan(pf) & ~np.isnan(pm)
    joint, _, _ = np.histogram2d(pf[both], pm[both], bins=[edges, edges])
    jf, jm = np.meshgrid(edges[:-1], edges[:-1], indexing="ij")
    jdf = pd.DataFrame(
        {f"pmi_{f}_left": jf.ravel(), f"pmi_{m}_left": jm.ravel(), "words": joint.ravel().astype(int)}
    )
    written.append(_csv(jdf[jdf["words"] > 0], out / "fig4a_joint_hist.csv"))
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.2))
    axes[0].hist(pf[~np.isnan(pf)], edges, alpha=0.6, label=f"PMI(w, {f})")
    axes[0].hist(pm[~np.isnan(pm)], edges, alpha=0.6, label=f"PMI(w, {m})")
    axes[0].set_xlabel("PMI")
    axes[0].set_ylabel("words")
    axes[0].legend()
    axes[0].set_title("marginal distributions")
    im = axes[1].pcolormesh(edges, edges, np.log10(joint.T + 1), cmap="viridis")
    axes[1].plot([lo, hi], [lo, hi], color="white", lw=0.8, ls="--")
    axes[1].set_xlabel(f"PMI(w, {f})")
    axes[1].set_ylabel(f"PMI(w, {m})")
    axes[1].set_title("joint distribution")
    fig.colorbar(im, ax=axes[1], label="log10(1 + words)")
    written += _save(fig, out, "fig4a_pmi")

    # Figure 4 (b): histogram of delta
    d = delta["delta"].to_numpy(np.float64)
    d = d[~np.isnan(d)]
    dedges = (
        np.linspace(float(d.min()), float(d.max()) if d.max() > d.min() else float(d.min()) + 1, bins + 1)
        if d.size
        else np.linspace(-1, 1, bins + 1)
    )
    hd, _ = np.histogram(d, dedges)
    written.append(
        _csv(
            pd.DataFrame({"bin_left": dedges[:-1], "bin_right": dedges[1:], "words": hd}),
            out / "fig4b_delta_hist.csv",
        )
    )
    median = float(np.median(d)) if d.size else float("nan")
    fig, ax = plt.subplots(figsize=(6, 4))
    ax.hist(d, dedges, color="tab:purple")
    ax.axvline(median, color="black", ls="--", label=f"median {median:.3f}")
    ax.set_xlabel(f"delta(w) = PMI(w, {f}) - PMI(w, {m})")
    ax.set_ylabel("words")
    ax.legend()
    written += _save(fig, out, "fig4b_delta")

    # Figure 5: Kendall tau between pairs
    tau = kendall_matrix(delta, pairs)
    written.append(_csv(tau, out / "fig5_kendall_tau.csv", index=True))
    k = len(pairs)
    fig, ax = plt.subplots(figsize=(max(6, 0.28 * k + 2), max(5, 0.28 * k + 1)))
    im = ax.imshow(tau.to_numpy(), cmap="RdBu_r", vmin=-1, vmax=1)
    labels = [f"{p.female}/{p.male}" for p in pairs]
    ax.set_xticks(range(k), labels, rotation=90, fontsize=7)
    ax.set_yticks(range(k), labels, fontsize=7)
    fig.colorbar(im, ax=ax, label="Kendall tau")
    written += _save(fig, out, "fig5_kendall_tau")

    n = len(delta)
    summary = {
        "words": n,
        f"share_cooccurring_{m}": float((delta[f"cooc_{m}"] > 0).mean()) if n else None,
        f"share_cooccurring_{f}": float((delta[f"cooc_{f}"] > 0).mean()) if n else None,
        "share_cooccurring_both": float(((delta[f"cooc_{m}"] > 0) & (delta[f"cooc_{f}"] > 0)).mean())
        if n
        else None,
        "words_with_delta": int(d.size),
        "median_delta": median,
    }
    written.append(write_json(out / "summary.json", json.loads(json.dumps(summary))))
    return written
