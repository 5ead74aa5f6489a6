"""Check that a finished workflow's outputs exist and are well-formed (used by CI on the `.test` run).

    python -m unstereo.workflow.outputs_check --configfile .test/config.yaml [--snakefile Snakefile]

It asks Snakemake for every output file of the DAG (``--summary``), then checks each by type: parquet and CSV tables
load, JSON parses, PNG/PDF files carry their magic bytes, nothing is empty; and every table of a registered method
(UnStereoEval, FairPair, counterfactual sentiment, robustness, BiasTestGPT and any other in
:mod:`unstereo.method_registry`) validates against the schema its code declares (:func:`tables`: the method's
results folder -> path pattern -> schema), as do the tables at the results folder's top: the model card, its tau
and tests, the occupation leans and their correlations, the variants against their bases (:data:`ROOT_TABLES`). Finally the metrics table must hold a
finite Unstereo Score for every (model, benchmark) the config scores.
Exit status 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import json
import math
import subprocess
import sys
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

import pandas as pd

from unstereo import method_registry
from unstereo.config import load_config
from unstereo.errors import InputError
from unstereo.tables import TableSchema, validate

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


def tables() -> dict[str, tuple[tuple[str, str], ...]]:
    """Where each method writes its tables: results folder -> (path pattern below it, schema) pairs, first match
    wins, from the method registry (each method's ``Method.tables``; module attribute ``TABLES``).

    A pattern matches part by part (``*`` stays within one folder or file name). The schema is named as
    ``module:NAME`` and read from the method's own code when a table is checked, so a method that changes its schema
    needs no edit here, and one whose output drifts from its schema fails the check.
    """
    return method_registry.tables()


#: The tables at the top of the results folder, written across methods: the model card (unstereo.model_card.card).
ROOT_TABLES: dict[str, str] = {
    "model_card.parquet": "unstereo.model_card.card:MODEL_CARD",
    "model_card_tau.parquet": "unstereo.model_card.card:MODEL_CARD_TAU",
    "model_card_tests.parquet": "unstereo.model_card.compare:MODEL_CARD_TESTS",
    "occupation_leans.parquet": "unstereo.model_card.occupations:OCCUPATION_LEANS",
    "occupation_correlations.parquet": "unstereo.model_card.occupations:OCCUPATION_CORRELATIONS",
    "model_card_variants.parquet": "unstereo.model_card.variant_effects:VARIANT_CHANGES",
    "model_card_variant_dose.parquet": "unstereo.model_card.variant_effects:VARIANT_DOSE",
    "model_card_variant_together.parquet": "unstereo.model_card.variant_effects:VARIANT_TOGETHER",
    "model_card_variant_occupations.parquet": "unstereo.model_card.variant_occupations:VARIANT_OCCUPATIONS",
}


def __getattr__(name: str):
    if name == "TABLES":  # read when asked, so that a method registered since import counts
        return tables()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def resolve_schema(ref: str) -> TableSchema:
    """The schema a ``module:NAME`` entry of :func:`tables` names (e.g. ``unstereo.tables:PAIRS``)."""
    schema = method_registry.load_ref(ref)
    if not isinstance(schema, TableSchema):
        raise TypeError(f"outputs_check.TABLES: {ref} is a {type(schema).__name__}, not a TableSchema")
    return schema


def _matches(parts: tuple[str, ...], pattern: str) -> bool:
    pat = PurePosixPath(pattern).parts
    return len(parts) == len(pat) and all(fnmatchcase(p, q) for p, q in zip(parts, pat, strict=True))


def schema_ref(path: Path, results_dir: str | Path | None = None) -> str | None:
    """The :func:`tables` entry a workflow output follows, by its place in the results tree (None if it has none).
    With ``results_dir`` only paths below it count; without, the first results folder in the path that matches."""
    parts = Path(path).parts
    if results_dir is not None:
        try:  # as the rules write it; else one side absolute, the other relative to the working directory
            parts = Path(path).relative_to(results_dir).parts
        except ValueError:
            try:
                parts = Path(path).resolve().relative_to(Path(results_dir).resolve()).parts
            except ValueError:
                return None
    if (len(parts) == 1 or results_dir is None) and parts and parts[-1] in ROOT_TABLES:
        return ROOT_TABLES[parts[-1]]
    known = tables()
    for i in range(len(parts)) if results_dir is None else range(min(len(parts), 1)):
        for pattern, ref in known.get(parts[i], ()):
            if _matches(parts[i + 1 :], pattern):
                return ref
    return None


def schema_of(path: Path, results_dir: str | Path | None = None) -> TableSchema | None:
    """The table schema a workflow output follows (None if it has none); see :func:`schema_ref`."""
    ref = schema_ref(path, results_dir)
    return None if ref is None else resolve_schema(ref)


def check_file(path: Path, results_dir: str | Path | None = None) -> str | None:
    """None when ``path`` is well-formed (a table: it loads and matches the schema of :func:`tables` for its place
    below ``results_dir``), else what is wrong with it."""
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
        elif path.suffix == ".csv":
            pd.read_csv(path)
    except Exception as exc:  # report, do not stop at the first bad file
        return f"unreadable: {exc}"
    ref = schema_ref(path, results_dir) if path.suffix == ".parquet" else None
    if ref is not None:
        try:
            validate(df, resolve_schema(ref))
        except InputError as exc:
            return f"does not match its schema ({ref}): {exc}"
    return None


def check_files(files: list[Path], results_dir: str | Path | None = None) -> list[str]:
    """One ``path: what is wrong`` line per file of ``files`` that is not well-formed (see :func:`check_file`)."""
    return [f"{p}: {why}" for p in files if (why := check_file(p, results_dir))]


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
    problems = check_files(files, config["results_dir"])
    problems += check_metrics(config)
    for line in problems:
        print(f"outputs_check: {line}", file=sys.stderr)
    print(f"outputs_check: {len(files)} outputs checked, {len(problems)} problem(s)")
    return 1 if problems or not files else 0


if __name__ == "__main__":
    sys.exit(main())
