"""A counter's spilled runs: co-occurrences kept as integer word ids, summed without a string per row.

A run is a directory: ``unigrams.parquet`` (a count table: ``word``, ``count``; the row number is the word's id in
the run) and ``cooccurrence.arrow`` (lz4 arrow IPC: ``word_id`` uint32, ``target`` uint16, the index into the
sorted targets, and ``count`` int64). Writing a run's co-occurrences as strings repeated a word's text on every one
of its tens of millions of rows, and summing them hashed every row's string again; here only each run's distinct
words are hashed, once.

:func:`merge_runs` writes the same count directory, row for row, as :func:`~unstereo.corpus.merge.merge_count_dirs`
on the runs written as count tables: rows are split into the same parts (a hash of the word mod the number of
parts) and each part is sorted by (word, target).
"""

from __future__ import annotations

import math
import shutil
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import InputError
from ..io import atomic_path, write_json
from ..log import get_logger
from .merge import CO, STATS, UNI, _partition, _PartWriter, _ranked, _split_by_part, _sum_codes

log = get_logger("corpus.runs")

RUN_CO = "cooccurrence.arrow"
_IPC = pa.ipc.IpcWriteOptions(compression="lz4")
_BATCH = 1 << 20  # rows per record batch of a run's co-occurrences


def write_run(
    run_dir: str | Path,
    words: Sequence[str] | pa.Array,
    unigrams: np.ndarray,
    codes: np.ndarray,
    counts: np.ndarray,
    n_targets: int,
) -> Path:
    """Write a run: ``words`` by id with their ``unigrams`` counts, and the co-occurrence ``counts`` of the distinct
    ``codes`` (word id x ``n_targets`` + target index; none counted zero times). Words counted zero times (the stop
    words and targets a counter knows from the start) are left out and the ids renumbered, so the unigram table is
    a plain count table. The rows go out a batch at a time: no copy of a run's millions of rows at once."""
    out = Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    unigrams = np.asarray(unigrams, np.int64)
    kept = unigrams > 0
    if kept.sum() >= 1 << 32 or n_targets > 1 << 16:
        raise ValueError("a run holds at most 2**32 words and 2**16 targets")
    nz = np.flatnonzero(kept)
    new_id = (np.cumsum(kept) - 1).astype(np.uint32)  # a kept word's id among the kept ones
    words = words if isinstance(words, pa.Array) else pa.array(words, type=pa.string())
    with atomic_path(out / UNI) as tmp:
        pq.write_table(pa.table({"word": words.take(pa.array(nz)), "count": pa.array(unigrams[nz])}), tmp)
    schema = pa.schema([("word_id", pa.uint32()), ("target", pa.uint16()), ("count", pa.int64())])
    with atomic_path(out / RUN_CO) as tmp, pa.OSFile(str(tmp), "wb") as sink:
        with pa.ipc.new_file(sink, schema, options=_IPC) as writer:
            for start in range(0, len(codes), _BATCH):
                code = codes[start : start + _BATCH]
                word = code // n_targets
                if not kept[word].all():
                    raise ValueError("a co-occurrence row names a word counted zero times")
                columns = [
                    new_id[word],
                    (code - word * n_targets).astype(np.uint16),
                    counts[start : start + _BATCH],
                ]
                writer.write_batch(pa.record_batch([pa.array(c) for c in columns], schema=schema))
    return out


def _run_rows(run: Path) -> int:
    with pa.memory_map(str(run / RUN_CO)) as source:
        return sum(b.num_rows for b in _batches(source))


def _batches(source):
    reader = pa.ipc.open_file(source)
    return (reader.get_batch(i) for i in range(reader.num_record_batches))


def merge_runs(
    runs: Sequence[Path],
    out_dir: str | Path,
    targets: Sequence[str],
    meta: dict,
    partitions: int | None = None,
    rows_per_partition: int = 5_000_000,
) -> Path:
    """Sum ``runs`` (:func:`write_run`; ``targets`` sorted, as their target indices mean) into the count directory
    ``out_dir`` with the stats ``meta``. Rows are split into parts by a hash of the word (``partitions`` of them,
    or enough for ``rows_per_partition`` input rows of either table at once); each part's distinct words are
    hashed and sorted once, for its unigrams and its co-occurrences."""
    runs = [Path(r) for r in runs]
    if not runs:
        raise InputError("nothing to merge: no runs given")
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    uni_rows = sum(pq.ParquetFile(r / UNI).metadata.num_rows for r in runs)
    co_rows = sum(_run_rows(r) for r in runs)
    parts = partitions or max(1, math.ceil(max(uni_rows, co_rows) / rows_per_partition))
    names = pa.array(sorted(targets), pa.large_string())
    tmpdir = Path(tempfile.mkdtemp(prefix=".merge-runs-", dir=out.parent))
    try:
        words = [_RunWords(r, parts) for r in runs]
        spilled = []  # (file, number of input batches) per run: its co-occurrences in order of part
        for k, (run, w) in enumerate(zip(runs, words, strict=True)):
            with pa.memory_map(str(run / RUN_CO)) as source:
                file = tmpdir / f"in{k:05d}.arrow"
                spilled.append((file, _split_by_part(_batches(source), w.part_of_rows, parts, file)))
        with atomic_path(out / UNI) as uni_tmp, atomic_path(out / CO) as co_tmp:
            uni, co = _PartWriter(uni_tmp, UNI), _PartWriter(co_tmp, CO)
            for q in range(parts):
                values, order, rank, index = _ranked(
                    pa.chunked_array([w.words_of(q) for w in words], pa.large_string())
                )
                counts = np.concatenate([w.counts[slice(*w.span(q))] for w in words])
                sums = np.zeros(len(values), np.int64)
                np.add.at(sums, index, counts)
                uni.write({"word": values.take(order), "count": pa.array(sums[order])})
                word_rank, off = rank[index], 0  # the rank of each of the part's words, run after run
                for w in words:
                    start, stop = w.span(q)
                    w.rank[w.ids[start:stop]] = word_rank[off : off + stop - start]
                    off += stop - start
                T = len(names)
                codes, counts = _sum_codes(*_part_codes(q, parts, spilled, words, T), T)
                co.write(
                    {
                        "word": values.take(order[codes // T]),
                        "target": names.take(codes % T),
                        "count": pa.array(counts, pa.int64()),
                    }
                )
            n_uni, n_co = uni.close(), co.close()
    finally:
        shutil.rmtree(tmpdir, ignore_errors=True)
    log.info("%d unigram and %d co-occurrence rows from %d runs", n_uni, n_co, len(runs))
    write_json(out / STATS, meta)
    return out


class _RunWords:
    """A run's words and their counts grouped by part: those of part q are ``words[slice(*span(q))]``
    (:meth:`words_of`), their ids ``ids[slice(*span(q))]``; ``rank`` is filled in by the merge, part by part: the
    rank of each word id among its part's distinct words."""

    def __init__(self, run: Path, parts: int):
        table = pq.read_table(run / UNI)
        words = table.column("word").combine_chunks().cast(pa.large_string())
        self.part = _partition(words, parts)
        order = np.argsort(self.part.astype(np.uint16 if parts < 1 << 16 else np.int64), kind="stable")
        self.bounds = np.searchsorted(self.part[order], np.arange(parts + 1))
        self.words = words.take(pa.array(order))
        self.counts = table.column("count").to_numpy()[order]
        self.ids = order
        self.rank = np.zeros(len(order), np.int64)

    def span(self, q: int) -> tuple[int, int]:
        """(start, stop) of part q's words."""
        return int(self.bounds[q]), int(self.bounds[q + 1])

    def words_of(self, q: int) -> pa.Array:
        start, stop = self.span(q)
        return self.words.slice(start, stop - start)

    def part_of_rows(self, batch: pa.RecordBatch) -> np.ndarray:
        """The part of each co-occurrence row of a batch of this run."""
        return self.part[batch.column("word_id").to_numpy()]


def _part_codes(q: int, parts: int, spilled, words: list[_RunWords], n_targets: int):
    """Part q's co-occurrence rows of every run as (int64 code per row, its count): the word's rank in the part
    (:attr:`_RunWords.rank`, set for part q) x ``n_targets`` + the target index."""
    codes, counts = [], []
    for (file, batches), w in zip(spilled, words, strict=True):
        if not batches:
            continue
        with pa.memory_map(str(file)) as source:
            reader = pa.ipc.open_file(source)
            for b in range(batches):
                batch = reader.get_batch(b * parts + q)
                if batch.num_rows:
                    word = w.rank[batch.column("word_id").to_numpy()]
                    codes.append(word * n_targets + batch.column("target").to_numpy())
                    counts.append(batch.column("count").to_numpy())
    if not codes:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(codes), np.concatenate(counts)
