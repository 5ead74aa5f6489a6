"""Count directories (``unigrams.parquet``, ``cooccurrence.parquet``, ``stats.json``) and their bounded-memory sum.

Summing many count tables would need memory for the whole vocabulary at once; instead rows are split by a hash of
the word into partitions (temporary arrow files), and each partition is summed on its own, in arrow and numpy (no
Python object per row; the part layer, shared with the runs' sum, is :mod:`~unstereo.unstereoeval.corpus.parts`). Memory then
scales with ``rows_per_partition``, not with the vocabulary.
"""

from __future__ import annotations

import dataclasses
import json
import math
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from unstereo.errors import InputError
from unstereo.io import atomic_path, write_json
from unstereo.log import get_logger
from unstereo.tables import COOCCURRENCE, UNIGRAMS, read_table, validate
from unstereo.unstereoeval.corpus.parts import (
    CO,
    SCHEMA,
    STATS,
    UNI,
    PartWriter,
    empty_table,
    partition,
    ranked,
    split_by_part,
    sum_codes,
)
from unstereo.unstereoeval.corpus.runs import check_run, merge_runs

log = get_logger("unstereoeval.corpus.merge")

KEYS = {UNI: ["word"], CO: ["word", "target"]}
# stats that must agree between the parts of a merge (counting settings)
SETTINGS = ("window", "targets", "stopwords", "text_key")
SUMMED = ("n_tokens", "n_pairs")


def write_counts(
    out_dir: str | Path,
    unigrams: pd.DataFrame | pa.Table,
    cooc: pd.DataFrame | pa.Table,
    meta: dict,
    distinct: bool = False,
) -> Path:
    """Write a count directory (each file atomically; stats.json last, so its presence means complete).

    Tables are DataFrames or arrow tables (the fast counter's: written as they are, no pandas strings in between).
    ``distinct``: the caller built the rows from distinct keys (the counters do), so the duplicate-key check, which
    hashes every string of a table of millions of rows (seconds and hundreds of MB), is left out."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    for name, table in ((UNI, unigrams), (CO, cooc)):
        schema = SCHEMA[name]
        if distinct:
            schema = dataclasses.replace(schema, unique=())
        if isinstance(table, pa.Table):
            _validate_arrow(table, schema, out / name)
        else:
            validate(table, schema, source=out / name)
            table = pa.Table.from_pandas(table.reset_index(drop=True), preserve_index=False)
        with atomic_path(out / name) as tmp:
            pq.write_table(table, tmp)
    write_json(out / STATS, meta)
    return out


def _validate_arrow(table: pa.Table, schema, source: Path) -> None:
    """:func:`~unstereo.tables.validate` for an arrow count table: :func:`_check_arrow`, and duplicate keys through
    pandas when the schema asks."""
    if schema.unique:
        validate(table.to_pandas(), schema, source=source)
        return
    _check_arrow(table, schema, source)


def _check_arrow(table: pa.Table | pa.RecordBatch, schema, source: Path) -> None:
    """The columns of a count table ``schema`` in ``table``: present, strings where the schema says str, integers
    where it says int, no missing value; else an :class:`InputError` naming ``source`` and the column."""
    missing = [c for c in schema.names if c not in table.schema.names]
    if missing:
        raise InputError(
            f"{schema.name} table lacks column(s) {missing}; has {table.schema.names}", path=source
        )
    for col in schema.columns:
        arr = table.column(col.name)
        kind = arr.type
        ok = (
            pa.types.is_string(kind) or pa.types.is_large_string(kind)
            if col.kind == "str"
            else pa.types.is_integer(kind)
        )
        if not ok or (arr.null_count and not col.nullable):
            detail = f"{arr.null_count} missing value(s)" if ok else f"type {kind}"
            raise InputError(f"{schema.name} column {col.name!r} must be {col.kind}: {detail}", path=source)


def read_stats(count_dir: str | Path) -> dict:
    path = Path(count_dir) / STATS
    if not path.is_file():
        raise InputError("not a count directory (no stats.json)", path=count_dir)
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as exc:
        raise InputError(f"stats.json is not valid JSON: {exc}", path=path) from exc


def read_counts(count_dir: str | Path) -> tuple[pd.DataFrame, pd.DataFrame, dict]:
    """(unigrams, cooccurrence, stats) of a count directory."""
    d = Path(count_dir)
    stats = read_stats(d)
    if "runs" in stats:
        raise InputError(
            "holds a counter's runs, not count tables: sum them first (unstereo corpus merge DIR -o OUT)",
            path=d,
        )
    return read_table(d / UNI, UNIGRAMS), read_table(d / CO, COOCCURRENCE), stats


def merge_stats(stats: Sequence[dict]) -> dict:
    """Sum the totals of several count directories; their counting settings must agree."""
    out: dict = {}
    for key in SETTINGS:
        values = {json.dumps(s.get(key), sort_keys=True) for s in stats}
        if len(values) > 1:
            raise InputError(f"cannot merge counts made with different {key!r}: {sorted(values)}")
        if stats and key in stats[0]:
            out[key] = stats[0][key]
    for key in SUMMED:
        out[key] = int(sum(int(s.get(key, 0)) for s in stats))
    read: dict = {}
    for s in stats:
        for k, v in (s.get("read") or {}).items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                read[k] = read.get(k, 0) + v
            elif isinstance(v, list):
                read[k] = (read.get(k) or []) + v
    out["read"] = read
    out["inputs"] = [i for s in stats for i in (s.get("inputs") or [])]
    return out


def _group_sum(table: pa.Table, keys: list[str]) -> pa.Table:
    """Rows with equal ``keys`` (``word`` and maybe ``target``) summed into one, sorted by the keys (their UTF-8
    bytes, i.e. code points).

    Each key column is dictionary-encoded (arrow's exact hash of the strings) and only its distinct values are
    sorted, so no string is compared twice and no Python object is made (pandas' group-by on str objects was most
    of a merge's time); rows with equal int64 codes made of the keys' ranks are then summed, in code order
    (:func:`~unstereo.unstereoeval.corpus.parts.sum_codes`)."""
    code = np.zeros(table.num_rows, np.int64)
    levels = []
    for key in keys:
        values, order, rank, index = ranked(table.column(key))
        code = code * len(values) + rank[index]
        levels.append((values, order))
    # the last key's cardinality splits a code into hi (the other keys) and lo (the last: a row's target)
    n_low = len(levels[-1][0]) if len(keys) > 1 else 1
    code, sums = sum_codes(code, table.column("count").to_numpy(), n_low)
    columns = {}
    for key, (values, order) in reversed(list(zip(keys, levels, strict=True))):
        columns[key] = values.take(order[code % len(values)])
        code = code // len(values)
    return pa.table({**{k: columns[k] for k in keys}, "count": pa.array(sums, pa.int64())})


def _canonical(batch: pa.RecordBatch | pa.Table, name: str, source: Path):
    """``batch`` checked (:func:`_check_arrow`: a bad input table is named, where the sum would drop or mangle its
    rows) with its key columns as large strings and counts as int64."""
    schema = SCHEMA[name]
    _check_arrow(batch, schema, source)
    cols = [
        batch.column(c.name).cast(pa.large_string() if c.kind == "str" else pa.int64())
        for c in schema.columns
    ]
    make = pa.table if isinstance(batch, pa.Table) else pa.record_batch
    return make(cols, names=schema.names)


def sum_tables(paths: Sequence[Path], out: Path, name: str, rows_per_partition: int = 5_000_000) -> int:
    """Sum count tables ``paths`` (all of kind ``name``) into ``out``; returns the number of rows written.

    Up to ``rows_per_partition`` input rows are summed at once. More are first split by a hash of the word into
    partitions: each input's batches, ordered by partition, go to one temporary arrow file (lz4), a record batch per
    partition, so summing partition q reads only its own record batches of every file."""
    keys = KEYS[name]
    total = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    parts = max(1, math.ceil(total / rows_per_partition))
    if parts == 1:
        tables = [_canonical(pq.read_table(p), name, p) for p in paths]
        summed = _group_sum(pa.concat_tables(tables or [empty_table(name)]), keys)
        with atomic_path(out) as tmp:
            pq.write_table(summed, tmp)
        return summed.num_rows
    tmpdir = Path(tempfile.mkdtemp(prefix=f".merge-{name}-", dir=out.parent))
    try:
        spilled = []  # (file, number of input batches)
        for k, p in enumerate(paths):
            file = tmpdir / f"in{k:05d}.arrow"
            batches = (_canonical(b, name, p) for b in pq.ParquetFile(p).iter_batches(batch_size=1_000_000))
            n_in = split_by_part(((b, partition(b.column("word"), parts)) for b in batches), parts, file)
            spilled.append((file, n_in))
        with atomic_path(out) as tmp:
            writer = PartWriter(tmp, name)
            for q in range(parts):
                pieces = []
                for file, batches in spilled:
                    if batches:
                        with pa.OSFile(str(file)) as source:
                            reader = pa.ipc.open_file(source)
                            pieces += [reader.get_batch(b * parts + q) for b in range(batches)]
                if sum(len(b) for b in pieces):
                    writer.write(_group_sum(pa.Table.from_batches(pieces), keys))
            return writer.close()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)


def merge_count_dirs(
    dirs: Sequence[str | Path],
    out_dir: str | Path,
    meta: dict | None = None,
    partitions: int | None = None,
    sum_stats: bool = True,
    rows_per_partition: int = 5_000_000,
) -> Path:
    """Sum the counts of ``dirs`` into ``out_dir``; stats are summed (or ``meta`` used as is). A directory holds
    count tables or a counter's runs (``unstereo corpus count --runs``: its stats list them); runs are summed by
    integer word id (:func:`~unstereo.unstereoeval.corpus.runs.merge_runs`), with the tables of the others if there are any."""
    dirs = [Path(d) for d in dirs]
    if not dirs:
        raise InputError("nothing to merge: no count directories given")
    inputs = [(d, read_stats(d)) for d in dirs]
    runs, table_dirs = [], []
    for d, st in inputs:
        if "runs" in st:
            for r in st["runs"]:
                check_run(d / r)
                runs.append(d / r)
        else:
            for f in (UNI, CO):
                if not (d / f).is_file():
                    raise InputError(f"count directory lacks {f}", path=d)
            table_dirs.append(d)
    # runs need the targets their indices mean, so their settings are checked even when the stats are not summed
    summed = merge_stats([st for _, st in inputs]) if sum_stats or runs else {}
    stats = dict(summed) if sum_stats else dict(meta or {})
    if sum_stats and meta:
        stats.update(meta)
    targets = summed.get("targets")
    if runs and targets is None:
        raise InputError("runs to merge but no 'targets' in their stats.json", path=dirs[0])
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if runs and not table_dirs:
        merge_runs(runs, out, targets, stats, partitions=partitions, rows_per_partition=rows_per_partition)
        return out
    tmp = None
    try:
        if runs:  # a mix: the runs summed to a count directory first
            tmp = Path(tempfile.mkdtemp(prefix=".merge-runs-", dir=out.parent))
            table_dirs.append(
                merge_runs(runs, tmp / "runs", targets, {}, rows_per_partition=rows_per_partition)
            )
        _sum_count_tables(table_dirs, out, partitions, rows_per_partition)
    finally:
        if tmp is not None:
            shutil.rmtree(tmp, ignore_errors=True)
    write_json(out / STATS, stats)
    return out


def _sum_count_tables(dirs: list[Path], out: Path, partitions: int | None, rows_per_partition: int) -> None:
    if partitions:
        rows_per_partition = 1
    for name in (UNI, CO):
        rpp = rows_per_partition
        if partitions:  # force a number of partitions (tests; very large merges)
            total = sum(pq.ParquetFile(d / name).metadata.num_rows for d in dirs)
            rpp = max(1, math.ceil(total / partitions))
        n = sum_tables([d / name for d in dirs], out / name, name, rpp)
        log.info("%s: %d rows from %d inputs", name, n, len(dirs))
