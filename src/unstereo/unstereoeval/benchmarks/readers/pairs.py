"""An existing PAIRS table (e.g. the generate stage's ``pairs.parquet``)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from unstereo.tables import PAIRS
from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.pairs import TemplateRow, empty_id
from unstereo.unstereoeval.benchmarks.readers.common import (
    as_paths,
    cell_text,
    finish,
    need_columns,
    table_records,
)


def read_pairs(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """An existing PAIRS table (parquet/CSV/JSONL), e.g. from the generate stage. Rows are checked like templates;
    the sentences, MaxPMI, source and benchmark it has are kept (filled where missing); ``name`` renames the
    benchmark and the prefix of its pair ids (``USE-5:3`` -> ``NAME:3``; default: the table's own ``benchmark``
    column, else the file stem)."""
    bad = bad or BadRows(on_bad_row)
    rows = []
    kept = ("sentence_female", "sentence_male", "max_pmi", "max_pmi_word", "source")
    for path in as_paths(paths):
        header, records = table_records(path, bad)
        need_columns(path, header, ["pair_id", "template"])
        for line, rec in records:
            pid = rec.get("pair_id")
            template = rec.get("template")
            given = {k: rec.get(k) for k in kept if k in rec}
            if not name:
                given["benchmark"] = cell_text(rec.get("benchmark")) or path.name.split(".")[0]
            pid = "" if empty_id(pid) else str(pid)
            if name and pid:
                # Renamed benchmark: its ids carry the new name, so that one pair table can be used under two
                # names (e.g. with two delta tables) and the metrics still see unique pair ids.
                pid = f"{name}:{pid.split(':', 1)[1]}" if ":" in pid else f"{name}:{pid}"
            rows.append(
                TemplateRow(
                    pid,
                    template if isinstance(template, str) else "",
                    cell_text(rec.get("seed_word")),
                    str(path),
                    line,
                    {k: v for k, v in rec.items() if k not in PAIRS.names},
                    given,
                )
            )
    return finish(rows, name or "pairs", bad, reference_quirks)
