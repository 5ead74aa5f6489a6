"""User templates: CSV/TSV/JSONL/parquet with a ``template`` column."""

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


def read_templates(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """User templates (CSV/TSV/JSONL/parquet) with a ``template`` column and placeholders ``{pronoun}``,
    ``{pronoun1}``, ``{pronoun2}`` (``{pronoun2}self``). Optional columns: ``pair_id`` (kept) or ``id``
    (pair id ``{name}:{id}``; without either, ``{name}:{row}``), ``seed_word`` or ``word``; other columns are kept."""
    bad = bad or BadRows(on_bad_row)
    paths = as_paths(paths)
    name = name or paths[0].name.split(".")[0]
    rows: list[TemplateRow] = []
    for path in paths:
        header, records = table_records(path, bad)
        need_columns(path, header, ["template"])
        seed_col = "seed_word" if "seed_word" in header else ("word" if "word" in header else None)
        for i, (line, rec) in enumerate(records):
            if "pair_id" in header:
                pid = rec.get("pair_id")
                pair_id = "" if empty_id(pid) else str(pid).strip()
            elif "id" in header:
                pid = rec.get("id")
                pair_id = "" if empty_id(pid) else f"{name}:{str(pid).strip()}"
            else:
                pair_id = f"{name}:{i}"
            template = rec.get("template")
            extra = {
                k: v for k, v in rec.items() if k not in PAIRS.names and k not in ("id", seed_col) and k != ""
            }
            rows.append(
                TemplateRow(
                    pair_id,
                    template if isinstance(template, str) else "",
                    cell_text(rec.get(seed_col)) if seed_col else None,
                    str(path),
                    line,
                    extra,
                )
            )
    return finish(rows, name, bad, reference_quirks)
