"""What every reader shares: the row checks and pair-table assembly (``finish``), file and cell helpers."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.pairs import TemplateRow, to_pairs
from unstereo.unstereoeval.benchmarks.textio import csv_records, jsonl_records

log = get_logger("unstereoeval.benchmarks")

SPLITS = ("dev", "test")


def as_bool(value: Any) -> bool | None:
    """A cell as a boolean (true/1/yes, false/0/no); None when it is neither."""
    if isinstance(value, bool | np.bool_):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    return None


def as_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    """One path or several, as a list of paths."""
    if isinstance(paths, str | Path):
        return [Path(paths)]
    return [Path(p) for p in paths]


def need_columns(path: Path, header: Sequence[str], needed: Sequence[str]) -> None:
    """InputError naming ``path`` (line 1) when ``header`` lacks a column of ``needed``."""
    missing = [c for c in needed if c not in header]
    if missing:
        raise InputError(f"missing column(s) {missing}; has {list(header)}", path=path, line=1)


def table_records(path: Path, bad: BadRows) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """Header and ``(line, record)`` of a CSV/TSV(.gz), JSONL(.gz) or parquet file (parquet: line = 1-based row)."""
    name = path.name
    if name.endswith((".jsonl", ".jsonl.gz", ".json")):
        records = jsonl_records(path, bad)
        header = list(dict.fromkeys(k for _, r in records for k in r))
        return header, records
    if name.endswith(".parquet"):
        if not path.is_file():
            raise InputError("file not found", path=path)
        try:
            df = pd.read_parquet(path)
        except Exception as exc:
            raise InputError(f"cannot read parquet: {exc}", path=path) from exc
        records = [(i + 1, rec) for i, rec in enumerate(df.to_dict("records"))]
        return list(df.columns), records
    if name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
        return csv_records(path, bad)
    raise InputError("unsupported file type (use .csv, .tsv, .jsonl or .parquet; optionally .gz)", path=path)


def cell_text(value: Any) -> str | None:
    """A cell as text (None when missing or blank)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    text = str(value)
    return text if text.strip() else None


def finish(rows: list[TemplateRow], name: str, bad: BadRows, reference_quirks: bool) -> pd.DataFrame:
    """The rows checked and filled into a PAIRS table
    (:func:`~unstereo.unstereoeval.benchmarks.pairs.to_pairs`); logs the bad rows and the count."""
    df = to_pairs(rows, name, bad, reference_quirks)
    bad.log_summary(name)
    log.info("%s: %d pair(s)", name, len(df))
    return df
