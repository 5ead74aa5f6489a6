"""Count directories (``unigrams.parquet``, ``cooccurrence.parquet``, ``stats.json``) and their bounded-memory sum.

Summing many count tables would need memory for the whole vocabulary at once; instead rows are split by a hash of
the word into partitions (temporary parquet files), and each partition is summed on its own. Memory then scales with
``rows_per_partition``, not with the vocabulary.
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

from ..errors import InputError
from ..io import atomic_path, write_json
from ..log import get_logger
from ..tables import COOCCURRENCE, UNIGRAMS, read_table, validate

log = get_logger("corpus.merge")

UNI, CO, STATS = "unigrams.parquet", "cooccurrence.parquet", "stats.json"
KEYS = {UNI: ["word"], CO: ["word", "target"]}
SCHEMA = {UNI: UNIGRAMS, CO: COOCCURRENCE}
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
    """:func:`~unstereo.tables.validate` for an arrow table: columns and kinds on an empty slice, then nulls on the
    whole table (and duplicate keys, through pandas, when the schema asks)."""
    if schema.unique:
        validate(table.to_pandas(), schema, source=source)
        return
    validate(table.slice(0, 0).to_pandas(), schema, source=source)
    for col in schema.columns:
        if not col.nullable and table.column(col.name).null_count:
            raise InputError(
                f"{schema.name} column '{col.name}' must be {col.kind}: "
                f"{table.column(col.name).null_count} missing value(s)",
                path=source,
            )


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
    read = {}
    for s in stats:
        for k, v in (s.get("read") or {}).items():
            if isinstance(v, int | float) and not isinstance(v, bool):
                read[k] = read.get(k, 0) + v
            elif isinstance(v, list):
                read[k] = (read.get(k) or []) + v
    out["read"] = read
    out["inputs"] = [i for s in stats for i in (s.get("inputs") or [])]
    return out


def _sum(df: pd.DataFrame, keys: list[str]) -> pd.DataFrame:
    out = df.groupby(keys, sort=True, observed=True)["count"].sum().reset_index()
    out["count"] = out["count"].astype(np.int64)
    return out


def _partition(words: pa.Array, parts: int) -> np.ndarray:
    """The part of each word: a hash of its text mod ``parts`` (the same word always lands in one part). From the
    arrow strings' bytes by a compiled kernel where numba is there (pandas' hash of Python str objects took a
    third of a merge's time), else pandas' (neither depends on PYTHONHASHSEED)."""
    from . import kernels

    if kernels.AVAILABLE and not words.null_count:
        # int64 offsets whether the column is string or large_string (a copy of the offsets only)
        words = words.cast(pa.large_string())
        _, offsets, data = words.buffers()
        off = np.frombuffer(offsets, np.int64)[words.offset : words.offset + len(words) + 1]
        raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
        return (kernels.string_hashes(off, raw) % np.uint64(parts)).astype(np.int64)
    return (
        pd.util.hash_array(words.to_numpy(zero_copy_only=False).astype(object)) % np.uint64(parts)
    ).astype(np.int64)


def sum_tables(paths: Sequence[Path], out: Path, name: str, rows_per_partition: int = 5_000_000) -> int:
    """Sum count tables ``paths`` (all of kind ``name``) into ``out``; returns the number of rows written."""
    keys = KEYS[name]
    # the group-by sums' keys are distinct by construction: no uniqueness check of millions of rows
    distinct = dataclasses.replace(SCHEMA[name], unique=())
    total = sum(pq.ParquetFile(p).metadata.num_rows for p in paths)
    parts = max(1, math.ceil(total / rows_per_partition))
    if parts == 1:
        frames = [pd.read_parquet(p) for p in paths]
        df = _sum(pd.concat(frames, ignore_index=True), keys) if frames else pd.DataFrame()
        validate(df, distinct, source=out)
        with atomic_path(out) as tmp:
            pq.write_table(pa.Table.from_pandas(df, preserve_index=False), tmp)
        return len(df)
    tmpdir = Path(tempfile.mkdtemp(prefix=f".merge-{name}-", dir=out.parent))
    try:
        for k, p in enumerate(paths):
            for b, batch in enumerate(pq.ParquetFile(p).iter_batches(batch_size=1_000_000)):
                part = _partition(batch.column("word"), parts)
                order = np.argsort(part, kind="stable")
                bounds = np.searchsorted(part[order], np.arange(parts + 1))
                for q in range(parts):  # the batch's rows of each part, in arrow: no pandas frame per batch
                    if bounds[q] < bounds[q + 1]:
                        rows = batch.take(pa.array(order[bounds[q] : bounds[q + 1]]))
                        pq.write_table(
                            pa.Table.from_batches([rows]), tmpdir / f"p{q:05d}-{k:05d}-{b:05d}.parquet"
                        )
        n = 0
        writer = None
        with atomic_path(out) as tmp:
            for q in range(parts):
                files = sorted(tmpdir.glob(f"p{q:05d}-*.parquet"))
                if not files:
                    continue
                df = _sum(pd.concat([pd.read_parquet(f) for f in files], ignore_index=True), keys)
                validate(df, distinct, source=out)
                table = pa.Table.from_pandas(df, preserve_index=False)
                if writer is None:
                    writer = pq.ParquetWriter(tmp, table.schema)
                writer.write_table(table.cast(writer.schema))
                n += len(df)
            if writer is None:
                pq.write_table(pa.Table.from_pandas(pd.DataFrame(columns=[*keys, "count"])), tmp)
            else:
                writer.close()
        return n
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
    """Sum the counts of ``dirs`` into ``out_dir``; stats are summed (or ``meta`` used as is)."""
    dirs = [Path(d) for d in dirs]
    if not dirs:
        raise InputError("nothing to merge: no count directories given")
    for d in dirs:
        for f in (UNI, CO):
            if not (d / f).is_file():
                raise InputError(f"count directory lacks {f}", path=d)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    if partitions:
        rows_per_partition = 1
    for name in (UNI, CO):
        rpp = rows_per_partition
        if partitions:  # force a number of partitions (tests; very large merges)
            total = sum(pq.ParquetFile(d / name).metadata.num_rows for d in dirs)
            rpp = max(1, math.ceil(total / partitions))
        n = sum_tables([d / name for d in dirs], out / name, name, rpp)
        log.info("%s: %d rows from %d inputs", name, n, len(dirs))
    stats = merge_stats([read_stats(d) for d in dirs]) if sum_stats else dict(meta or {})
    if sum_stats and meta:
        stats.update(meta)
    write_json(out / STATS, stats)
    return out
