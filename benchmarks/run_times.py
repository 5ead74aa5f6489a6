"""Where a workflow run spent its time: every job's Snakemake ``benchmark:`` file, summed per stage and per model.

    python benchmarks/run_times.py RESULTS_DIR/logs [--models m1,m2,...] [--top 15]

Every rule writes its wall time (``s``) and peak RSS (``max_rss``, MB) to a TSV under the logs folder; a job's
stage is the first folder of its path (``bench/`` skipped) and its model is the configured model name found among
its path's parts or file-name words (``score-qwen-coder.tsv``, ``biastest/qwen-coder.score.tsv``). Prints Markdown:
the total, one row per stage, one per (stage, model) and the slowest jobs. The total is the sum of job times, which
equals the wall time of a run whose jobs ran one after another (``--cores`` equal to each job's threads).
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path

import pandas as pd


def job_times(logs: Path, models: list[str] | None = None) -> pd.DataFrame:
    """One row per benchmark TSV under ``logs``: job (path without suffix), stage, model, seconds, max_rss_mb."""
    rows = []
    # Longest names first, so that "qwen-coder-1.5b" is found before its prefix "qwen-coder".
    names = sorted(models or [], key=len, reverse=True)
    for tsv in sorted(logs.rglob("*.tsv")):
        rel = tsv.relative_to(logs)
        parts = [p for p in rel.parts if p != "bench"]
        job = re.sub(r"(\.benchmark)?\.tsv$", "", "/".join(parts))
        table = pd.read_csv(tsv, sep="\t")
        if "s" not in table.columns or table.empty:
            continue
        model = next((m for m in names if any(_names(part, m) for part in parts)), "")
        rows.append(
            {
                "job": job,
                "stage": parts[0] if len(parts) > 1 else "",
                "model": model,
                "seconds": float(table["s"].iloc[-1]),
                "max_rss_mb": float(table["max_rss"].iloc[-1])
                if "max_rss" in table.columns
                else float("nan"),
            }
        )
    return pd.DataFrame(rows, columns=["job", "stage", "model", "seconds", "max_rss_mb"])


def _names(part: str, model: str) -> bool:
    """Whether a path part (folder or file name) is, or starts with, the model name: ``m``, ``m.score.tsv``,
    ``score-m.tsv``."""
    return re.match(rf"^(score-)?{re.escape(model)}(\.|$)", part) is not None


def summary(times: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """Per stage and per (stage, model): jobs, seconds and the largest peak RSS, slowest first."""

    def agg(keys: list[str]) -> pd.DataFrame:
        out = times.groupby(keys, as_index=False).agg(
            jobs=("job", "size"), seconds=("seconds", "sum"), max_rss_mb=("max_rss_mb", "max")
        )
        return out.sort_values("seconds", ascending=False, kind="stable").reset_index(drop=True)

    return {"stage": agg(["stage"]), "stage_model": agg(["stage", "model"])}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("logs", type=Path)
    parser.add_argument("--models", default="", help="comma-separated model names of the config")
    parser.add_argument("--top", type=int, default=15, help="slowest jobs to list")
    args = parser.parse_args(argv)
    times = job_times(args.logs, [m for m in args.models.split(",") if m])
    tables = summary(times)
    print(f"{len(times)} jobs, {times['seconds'].sum():,.0f} s in all\n")
    for name, table in tables.items():
        print(f"### per {name.replace('_', ' and ')}\n\n{table.to_markdown(index=False, floatfmt='.1f')}\n")
    slow = times.sort_values("seconds", ascending=False, kind="stable").head(args.top)
    print(f"### slowest {args.top} jobs\n\n{slow.to_markdown(index=False, floatfmt='.1f')}")


if __name__ == "__main__":
    main()
