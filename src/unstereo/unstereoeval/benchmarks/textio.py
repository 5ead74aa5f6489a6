"""Line-aware reading of text, CSV/TSV and JSONL files, so that every bad row can be named by file and line.

Each reader decodes the file line by line (UTF-8, optional BOM): an undecodable line is a bad row (error, or dropped
and counted, see :class:`~unstereo.unstereoeval.benchmarks.badrows.BadRows`). Files ending in ``.gz`` are decompressed.
"""

from __future__ import annotations

import csv
import gzip
import json
from collections.abc import Iterator
from pathlib import Path

from unstereo.errors import InputError
from unstereo.unstereoeval.benchmarks.badrows import BadRows


def read_bytes(path: str | Path) -> bytes:
    """Raw bytes of ``path`` (gunzipped when it ends in .gz); InputError when missing or unreadable."""
    path = Path(path)
    if not path.is_file():
        raise InputError("file not found", path=path)
    try:
        data = path.read_bytes()
        return gzip.decompress(data) if path.name.endswith(".gz") else data
    except (OSError, EOFError) as exc:
        raise InputError(f"cannot read file: {exc}", path=path) from exc


def decoded_lines(path: str | Path, bad: BadRows) -> Iterator[tuple[int, str]]:
    """Yield ``(line_number, text)`` (1-based, line ending kept) for every line that decodes as UTF-8."""
    data = read_bytes(path)
    if data.startswith(b"\xef\xbb\xbf"):
        data = data[3:]
    for number, raw in enumerate(data.splitlines(keepends=True), start=1):
        try:
            yield number, raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            bad.report(path, number, f"undecodable line: not valid UTF-8 ({exc.reason} at byte {exc.start})")


def csv_records(
    path: str | Path, bad: BadRows, delimiter: str | None = None
) -> tuple[list[str], list[tuple[int, dict[str, str]]]]:
    """Header and ``(line, record)`` pairs of a CSV (or TSV: ``.tsv`` or ``delimiter="\\t"``) file.

    ``line`` is the file line on which the record starts. A record with the wrong number of fields is a bad row.
    """
    path = Path(path)
    if delimiter is None:
        delimiter = "\t" if ".tsv" in path.suffixes else ","
    kept = list(decoded_lines(path, bad))
    numbers = [n for n, _ in kept]
    reader = csv.reader((text for _, text in kept), delimiter=delimiter)
    header: list[str] | None = None
    records: list[tuple[int, dict[str, str]]] = []
    while True:
        start = reader.line_num  # lines consumed so far = index of the record's first line in `kept`
        try:
            row = next(reader)
        except StopIteration:
            break
        except csv.Error as exc:
            bad.report(path, numbers[min(start, len(numbers) - 1)], f"malformed CSV: {exc}")
            continue
        line = numbers[start]
        if header is None:
            header = row
            continue
        if not row or (len(row) == 1 and not row[0].strip()):
            continue  # blank line
        if len(row) != len(header):
            bad.report(path, line, f"malformed row: {len(row)} field(s), header has {len(header)}")
            continue
        records.append((line, dict(zip(header, row, strict=True))))
    if header is None:
        raise InputError("empty file (no header line)", path=path)
    return header, records


def jsonl_records(path: str | Path, bad: BadRows) -> list[tuple[int, dict]]:
    """``(line, object)`` for every non-blank line of a JSONL file; a line that is not a JSON object is bad."""
    records = []
    for number, text in decoded_lines(path, bad):
        if not text.strip():
            continue
        try:
            obj = json.loads(text)
        except json.JSONDecodeError as exc:
            bad.report(path, number, f"malformed JSON: {exc.msg}")
            continue
        if not isinstance(obj, dict):
            bad.report(path, number, f"malformed JSON: expected an object, got {type(obj).__name__}")
            continue
        records.append((number, obj))
    return records
