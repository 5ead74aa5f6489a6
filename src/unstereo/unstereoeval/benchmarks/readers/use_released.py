"""The released preprocessed benchmark files (``*-no-maxpmi-constraint.csv.gz``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.pairs import TemplateRow, empty_id
from unstereo.unstereoeval.benchmarks.readers.common import (
    SPLITS,
    as_bool,
    as_paths,
    cell_text,
    finish,
    need_columns,
)
from unstereo.unstereoeval.benchmarks.textio import csv_records


def _raw_positions(
    pre_path: Path, raw: Path | None, dataset: str, bad: BadRows
) -> tuple[Path, list[int], list[str]]:
    """Row positions (and templates) of the natural rows of the raw USE file that belongs to a preprocessed one."""
    raw = raw or pre_path.parent.parent / "raw" / f"{dataset}.csv"
    if not raw.is_file():
        raise InputError(
            f"pair ids of {dataset} are rows of the raw file, which was not found at {raw}: pass raw=... "
            "(CLI --raw); the preprocessed orig_index counts rows after the naturalness filter",
            path=pre_path,
        )
    header, records = csv_records(raw, bad)
    need_columns(raw, header, ["template", "is_natural"])
    positions = [i for i, (_, rec) in enumerate(records) if as_bool(rec["is_natural"]) is True]
    templates = [records[i][1]["template"] for i in positions]
    return raw, positions, templates


def read_use_released(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    raw: str | Path | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """Released preprocessed files (``*-no-maxpmi-constraint.csv.gz``, USE-5/10/20, Winobias-dev/test, Winogender).

    The benchmark name comes from the ``dataset`` column (``Winobias-dev`` -> ``Winobias``) unless ``name`` is
    given. The released ``max_gender_pmi`` is kept as column ``released_max_pmi``. USE pair ids are rows of the raw
    file (``raw``, default ``../raw/{dataset}.csv`` beside the preprocessed folder).
    """
    bad = bad or BadRows(on_bad_row)
    rows: list[TemplateRow] = []
    benchmark = name
    for path in as_paths(paths):
        header, records = csv_records(path, bad)
        need_columns(path, header, ["template", "dataset", "orig_index"])
        datasets = {rec["dataset"] for _, rec in records}
        if len(datasets) > 1:
            raise InputError(f"several datasets in one file: {sorted(datasets)}", path=path)
        dataset = datasets.pop() if datasets else path.name.split("-no-maxpmi")[0]
        base, _, split = dataset.rpartition("-")
        if split not in SPLITS:
            base, split = dataset, None
        bench = name or base
        if benchmark not in (None, bench):
            raise InputError(f"files of different benchmarks ({benchmark}, {bench}) in one build", path=path)
        benchmark = bench
        positions = templates = None
        if base.startswith("USE"):
            raw_path, positions, templates = _raw_positions(path, Path(raw) if raw else None, dataset, bad)
            if len(positions) != len(records):
                raise InputError(
                    f"{len(records)} rows but the raw file {raw_path} has {len(positions)} natural rows",
                    path=path,
                )
        for j, (line, rec) in enumerate(records):
            if positions is not None:
                if templates[j] != rec["template"]:
                    raise InputError(
                        f"template differs from natural row {positions[j]} of the raw file",
                        path=path,
                        line=line,
                    )
                pair_id = f"{bench}:{positions[j]}"
            elif "example_id" in rec:
                pair_id = f"{bench}:{rec['example_id']}" if not empty_id(rec["example_id"]) else ""
            else:
                pair_id = f"{bench}:{split}:{rec['orig_index']}" if split else f"{bench}:{rec['orig_index']}"
            extra: dict[str, Any] = {
                "orig_index": rec["orig_index"],
                "sentence": cell_text(rec.get("sentence")),
                "target_word": cell_text(rec.get("target_word")),
            }
            if split:
                extra["split"] = split
            if "example_id" in rec:
                extra["example_id"] = rec["example_id"]
            value = rec.get("max_gender_pmi")
            extra["released_max_pmi"] = float(value) if cell_text(value) else np.nan
            rows.append(
                TemplateRow(pair_id, rec["template"], cell_text(rec.get("word")), str(path), line, extra)
            )
    return finish(rows, benchmark or "benchmark", bad, reference_quirks)
