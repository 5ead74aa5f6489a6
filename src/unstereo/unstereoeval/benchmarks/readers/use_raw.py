"""A released raw USE file (``data/datasets/raw/USE-{5,10,20}.csv``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.pairs import TemplateRow
from unstereo.unstereoeval.benchmarks.readers.common import (
    as_bool,
    as_paths,
    cell_text,
    finish,
    log,
    need_columns,
)
from unstereo.unstereoeval.benchmarks.textio import csv_records

_USE_EXTRA_BOOL = ("is_natural", "is_revised", "has_word", "has_placeholder")


def read_use_raw(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    natural_only: bool = True,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """A released raw USE file (``data/datasets/raw/USE-5.csv``): pair id ``{name}:{row}`` (0-based row of the
    file); with ``natural_only`` only ``is_natural`` rows (the released benchmark; 4405/4740/4839 rows)."""
    bad = bad or BadRows(on_bad_row)
    paths = as_paths(paths)
    name = name or paths[0].name.split(".")[0]
    rows: list[TemplateRow] = []
    for path in paths:
        header, records = csv_records(path, bad)
        need_columns(path, header, ["template"] + (["is_natural"] if natural_only else []))
        skipped = 0
        for i, (line, rec) in enumerate(records):
            natural = as_bool(rec.get("is_natural"))
            if natural_only and natural is not True:
                if natural is None:
                    bad.report(path, line, f"malformed is_natural value {rec.get('is_natural')!r}")
                skipped += 1
                continue
            extra = {c: as_bool(rec[c]) for c in _USE_EXTRA_BOOL if c in rec}
            extra["target_word"] = cell_text(rec.get("target_word"))
            extra["sentence"] = cell_text(rec.get("sentence"))
            if "" in rec:  # the unnamed index column of the released file (has gaps in USE-10/20)
                extra["raw_label"] = rec[""]
            rows.append(
                TemplateRow(
                    f"{name}:{i}", rec["template"], cell_text(rec.get("word")), str(path), line, extra
                )
            )
        if natural_only:
            log.info(
                "%s: kept %d natural row(s), left out %d unnatural one(s)",
                path,
                len(records) - skipped,
                skipped,
            )
    return finish(rows, name, bad, reference_quirks)
