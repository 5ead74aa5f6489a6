"""The part layer both sums share: count tables' names and schemas, rows split into parts by a hash of the word,
and a part's rows summed by integer code.

:func:`~unstereo.unstereoeval.corpus.merge.sum_tables` (count tables) and :func:`~unstereo.unstereoeval.corpus.runs.merge_runs` (a counter's
runs) bound their memory the same way: every row goes to the part :func:`partition` gives its word (the same word
always lands in one part), each input's rows are written to disk grouped by part (:func:`split_by_part`), and each
part is then summed on its own (:func:`sum_codes` on int64 codes made of ranks, :func:`ranked`) and appended to the
output (:class:`PartWriter`). Both sums split the same way, so they write the same rows.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from unstereo.tables import COOCCURRENCE, UNIGRAMS

# a count directory: its two tables and the stats written last (their presence means complete)
UNI, CO, STATS = "unigrams.parquet", "cooccurrence.parquet", "stats.json"
SCHEMA = {UNI: UNIGRAMS, CO: COOCCURRENCE}


def sum_codes(codes: np.ndarray, counts: np.ndarray, n_low: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """(distinct ``codes`` in ascending order, the sum of ``counts`` of each). Codes ``hi * n_low + lo`` with few
    distinct ``hi`` (a part's words; ``lo`` its targets) go to the compiled counting sort by ``hi``
    (:func:`~unstereo.unstereoeval.corpus.row_sort.group_sum`, ~4x faster); else a radix sort, then equal neighbours summed."""
    from unstereo.unstereoeval.corpus import jit

    if not codes.size:
        return codes, counts
    # (the kernel's memory grows with the number of hi, its time with the square of a hi's distinct lo)
    if jit.AVAILABLE and n_low <= 1024 and int(codes.max()) // n_low <= 4 * codes.size:
        from unstereo.unstereoeval.corpus.row_sort import group_sum

        return group_sum(codes, np.ascontiguousarray(counts, np.int64), n_low)
    by = radix_order(codes)
    codes = codes[by]
    starts = np.flatnonzero(np.r_[True, codes[1:] != codes[:-1]])
    return codes[starts], np.add.reduceat(counts[by], starts)


class PartWriter:
    """A count table of kind ``name`` written to ``path`` a part at a time (:func:`empty_table` if no part has
    rows)."""

    def __init__(self, path: Path, name: str):
        self.path, self.name, self.rows, self._writer = path, name, 0, None

    def write(self, table: pa.Table | dict) -> None:
        table = table if isinstance(table, pa.Table) else pa.table(table)
        if table.num_rows:
            if self._writer is None:
                self._writer = pq.ParquetWriter(self.path, table.schema)
            self._writer.write_table(table)
            self.rows += table.num_rows

    def close(self) -> int:
        """Finish the file; the number of rows written."""
        if self._writer is None:
            pq.write_table(empty_table(self.name), self.path)
        else:
            self._writer.close()
        return self.rows


def radix_order(code: np.ndarray) -> np.ndarray:
    """The stable sorting permutation of non-negative int64 ``code``: 16 bits at a time, lowest first, by numpy's
    stable sort of uint16 (a radix sort). Codes of up to 32 bits take two passes, half a comparison sort's time."""
    order = np.arange(len(code))
    for shift in range(0, int(code.max()).bit_length() if len(code) else 0, 16):
        order = order[np.argsort((code[order] >> shift).astype(np.uint16), kind="stable")]
    return order


def ranked(column: pa.ChunkedArray) -> tuple[pa.Array, np.ndarray, np.ndarray, np.ndarray]:
    """(distinct values, their indices in sorted order, the rank of each, each row's index into them) of a string
    column."""
    enc = pc.dictionary_encode(column.combine_chunks())
    order = pc.sort_indices(enc.dictionary).to_numpy().astype(np.int64)
    rank = np.empty_like(order)
    rank[order] = np.arange(len(order))
    return enc.dictionary, order, rank, enc.indices.to_numpy().astype(np.int64)


def partition(words: pa.Array, parts: int) -> np.ndarray:
    """The part of each word: a hash of its text mod ``parts`` (the same word always lands in one part). From the
    arrow strings' bytes by a compiled kernel where numba is there (pandas' hash of Python str objects took a
    third of a merge's time), else pandas' (neither depends on PYTHONHASHSEED)."""
    from unstereo.unstereoeval.corpus import jit

    if jit.AVAILABLE and not words.null_count:
        from unstereo.unstereoeval.corpus.hashing import string_hashes

        # int64 offsets whether the column is string or large_string (a copy of the offsets only)
        words = words.cast(pa.large_string())
        _, offsets, data = words.buffers()
        off = np.frombuffer(offsets, np.int64)[words.offset : words.offset + len(words) + 1]
        raw = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
        return (string_hashes(off, raw) % np.uint64(parts)).astype(np.int64)
    return (
        pd.util.hash_array(words.to_numpy(zero_copy_only=False).astype(object)) % np.uint64(parts)
    ).astype(np.int64)


def split_by_part(batches, parts: int, file: Path) -> int:
    """Write ``batches``, pairs (record batch, the part of each of its rows: ints in [0, parts)), to the arrow file
    ``file`` (lz4), the rows of each in order of their part (stable) as one record batch per part, empty ones too:
    part q of input batch b is record batch ``b * parts + q``. Returns the number of input batches (0: the file
    holds nothing)."""
    n, writer = 0, None
    with pa.OSFile(str(file), "wb") as sink:
        for batch, part in batches:
            # uint16 parts: numpy's stable sort is then a radix sort
            order = np.argsort(part.astype(np.uint16 if parts < 1 << 16 else np.int64), kind="stable")
            bounds = np.searchsorted(part[order], np.arange(parts + 1))
            batch = batch.take(pa.array(order))
            if writer is None:
                writer = pa.ipc.new_file(
                    sink, batch.schema, options=pa.ipc.IpcWriteOptions(compression="lz4")
                )
            for q in range(parts):
                writer.write_batch(batch.slice(bounds[q], bounds[q + 1] - bounds[q]))
            n += 1
        if writer is not None:
            writer.close()
    return n


def empty_table(name: str) -> pa.Table:
    """A count table of kind ``name`` without rows, in the types the sums work in (large strings, int64)."""
    return pa.table(
        {
            c.name: pa.array([], pa.large_string() if c.kind == "str" else pa.int64())
            for c in SCHEMA[name].columns
        }
    )
