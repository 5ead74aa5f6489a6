"""Check that a finished workflow's outputs exist and are well-formed (used by CI on the `.test` run).

    python -m unstereo.outputs_check --configfile .test/config.yaml [--snakefile Snakefile]

It asks Snakemake for every output file of the DAG (``--summary``), then checks each by type: parquet and CSV tables
load (and tables with a known schema validate), JSON parses, PNG/PDF files carry their magic bytes, nothing is empty.
Finally the metrics table must hold a finite Unstereo Score for every (model, benchmark) the config scores.
Exit status 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd

from .config import load_config
from .tables import SCHEMAS, validate

MAGIC = {".png": b"\x89PNG", ".pdf": b"%PDF"}


def dag_outputs(configfile: str, snakefile: str) -> list[Path]:
    """Every output file of the workflow's DAG, from ``snakemake --summary``."""
    out = subprocess.run(
        ["snakemake", "-s", snakefile, "--configfile", configfile, "--summary", "--nolock", "--quiet", "all"],
        capture_output=True,
        text=True,
        check=True,
        timeout=600,  # a summary of the DAG takes seconds; a hang must not block CI
    ).stdout
    files = []
    for line in out.splitlines()[1:]:
        parts = line.split("\t")
        if parts and parts[0] and not parts[0].startswith(("output_file", "Building")):
            files.append(Path(parts[0]))
    return files


def schema_of(path: Path):
    """The table schema a workflow output follows, by its place in the results tree (None if it has none)."""
    if "biastest" in path.parts:  # the biastest stage's own pair, score and summary tables
        from .biastest.schemas import PAIRS as BT_PAIRS
        from .biastest.schemas import SCORES as BT_SCORES
        from .biastest.schemas import SUMMARY as BT_SUMMARY

        return {"pairs.parquet": BT_PAIRS, "scores.parquet": BT_SCORES, "summary.parquet": BT_SUMMARY}.get(
            path.name
        )
    if path.name == "pairs.parquet" or path.stem.startswith("eta-"):
        return SCHEMAS["pairs"]
    if path.parent.parent.name == "scores":
        return SCHEMAS["scores"]
    if (
        path.stem in ("metrics", "unigrams", "cooccurrence") and path.parent.name != "curves"
    ):  # curves/metrics: US vs eps
        return SCHEMAS[path.stem]
    return None


def check_file(path: Path) -> str | None:
    """None when ``path`` is well-formed, else what is wrong with it."""
    if path.is_dir():
        return None if any(path.iterdir()) else "empty directory"
    if not path.is_file():
        return "missing"
    if path.stat().st_size == 0 and path.suffix not in {".log", ".tsv"}:
        return "empty file"
    try:
        if path.suffix in MAGIC:
            with open(path, "rb") as fh:
                if not fh.read(8).startswith(MAGIC[path.suffix]):
                    return f"not a {path.suffix[1:].upper()} file"
        elif path.suffix == ".json":
            json.loads(path.read_text())
        elif path.suffix == ".parquet":
            df = pd.read_parquet(path)
            schema = schema_of(path)
            if schema is not None:
                validate(df, schema, source=path)
        elif path.suffix == ".csv":
            pd.read_csv(path)
    except Exception as exc:  # report, do not stop at the first bad file
        return f"unreadable: {exc}"
    return None


def check_metrics(config: dict) -> list[str]:
    """The metrics table has a finite US for each scored (model, benchmark) at eta = inf."""
    if not (config["score"].get("enabled") and config["metrics"].get("enabled")):
        return []
    path = Path(config["results_dir"]) / "metrics" / "metrics.parquet"
    if not path.is_file():
        return [f"{path}: missing"]
    df = pd.read_parquet(path)
    problems = []
    for model in config["score"].get("models", {}):
        for bench in config["score"].get("benchmarks", []):
            rows = df[(df["model"] == model) & (df["benchmark"] == bench) & (df["eta"] == math.inf)]
            if rows.empty or not rows["us"].map(math.isfinite).all() or int(rows["n"].iloc[0]) == 0:
                problems.append(f"{path}: no finite US for model {model!r} on {bench!r} (eta inf)")
    return problems


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configfile", required=True)
    parser.add_argument("--snakefile", default="Snakefile")
    args = parser.parse_args(argv)
    config = load_config(args.configfile)
    files = dag_outputs(args.configfile, args.snakefile)
    problems = [f"{p}: {why}" for p in files if (why := check_file(p))]
    problems += check_metrics(config)
    for line in problems:
        print(f"outputs_check: {line}", file=sys.stderr)
    print(f"outputs_check: {len(files)} outputs checked, {len(problems)} problem(s)")
    return 1 if problems or not files else 0


if __name__ == "__main__":
    sys.exit(main())
