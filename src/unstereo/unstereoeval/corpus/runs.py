"""A counter's spilled runs: co-occurrences kept as integer word ids, summed without a string per row.

A run is a directory: ``unigrams.parquet`` (a count table: ``word``, ``count``; the row number is the word's id in
the run) and ``cooccurrence.arrow`` (lz4 arrow IPC: ``word_id`` uint32, ``target`` uint16, the index into the
sorted targets, and ``count`` int64). Writing a run's co-occurrences as strings repeated a word's text on every one
of its tens of millions of rows, and summing them hashed every row's string again; here only each run's distinct
words are hashed, once.

:func:`merge_runs` writes the same count directory, row for row, as :func:`~unstereo.unstereoeval.corpus.merge.merge_count_dirs`
on the runs written as count tables: rows are split into the same parts (a hash of the word mod the number of
parts) and each part is sorted by (word, target).

A count job may leave its runs instead of merging them (``count_files(runs=True)``, ``corpus count --runs``: the
directory holds ``runs/`` and a ``stats.json`` listing them); the one merge at the end then sums every job's runs
(:func:`~unstereo.unstereoeval.corpus.merge.merge_count_dirs`), not tables built from them in each job.
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

from unstereo.errors import InputError
from unstereo.io import atomic_path, write_json
from unstereo.log import get_logger
from unstereo.unstereoeval.corpus.parts import (
    CO,
    STATS,
    UNI,
    PartWriter,
    partition,
    ranked,
    split_by_part,
    sum_codes,
)

log = get_logger("unstereoeval.corpus.runs")

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
    if len(codes) and (codes.min() < 0 or codes.max() >= len(unigrams) * n_targets):
        raise ValueError("a co-occurrence code out of range (word id x targets + target)")
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


def check_run(run: Path) -> None:
    """An :class:`InputError` naming ``run`` unless it holds a run's two files."""
    for name in (UNI, RUN_CO):
        if not (run / name).is_file():
            raise InputError(f"not a counter's run (lacks {name})", path=run)


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
    hashed and sorted once, for its unigrams and its co-occurrences. Memory is bounded by a part and one run,
    however many runs: each run's words and rows go to disk split by part first."""
    runs = [Path(r) for r in runs]
    if not runs:
        raise InputError("nothing to merge: no runs given")
    for run in runs:
        check_run(run)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    uni_rows = sum(pq.ParquetFile(r / UNI).metadata.num_rows for r in runs)
    co_rows = sum(_run_rows(r) for r in runs)
    parts = partitions or max(1, math.ceil(max(uni_rows, co_rows) / rows_per_partition))
    names = pa.array(sorted(targets), pa.large_string())
    T = len(names)
    tmpdir = Path(tempfile.mkdtemp(prefix=".merge-runs-", dir=out.parent))
    try:
        split = [_SplitRun(run, parts, tmpdir / f"r{k:05d}") for k, run in enumerate(runs)]
        with atomic_path(out / UNI) as uni_tmp, atomic_path(out / CO) as co_tmp:
            uni, co = PartWriter(uni_tmp, UNI), PartWriter(co_tmp, CO)
            for q in range(parts):
                words = [s.words(q) for s in split]  # run after run: a run's local word index is its row here
                part = pa.Table.from_batches([w for w in words if w is not None] or [_EMPTY_WORDS])
                values, order, rank, index = ranked(part.column("word"))
                sums = np.zeros(len(values), np.int64)
                np.add.at(sums, index, part.column("count").to_numpy())
                uni.write({"word": values.take(order), "count": pa.array(sums[order])})
                # the rank (among the part's distinct words) of each run's local word index
                word_rank = rank[index]
                starts = np.cumsum([0] + [0 if w is None else w.num_rows for w in words])
                codes, counts = _part_codes(q, split, word_rank, starts, T)
                codes, counts = sum_codes(codes, counts, T)
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


_EMPTY_WORDS = pa.record_batch(
    [pa.array([], pa.large_string()), pa.array([], pa.int64())], names=["word", "count"]
)


class _SplitRun:
    """A run split by part on disk (lz4 arrow files): its words with their counts, part q as record batch q and in
    order of word id, and its co-occurrence rows, whose ``word_id`` becomes the word's index among its part's words
    of the run (its row in :meth:`words` of that part)."""

    def __init__(self, run: Path, parts: int, prefix: Path):
        self.parts = parts
        table = pq.read_table(run / UNI)
        words = table.column("word").combine_chunks().cast(pa.large_string())
        part = partition(words, parts)
        batch = pa.record_batch(
            [words, table.column("count").combine_chunks().cast(pa.int64())], ["word", "count"]
        )
        self.words_file, self.co_file = prefix.with_suffix(".words.arrow"), prefix.with_suffix(".co.arrow")
        self.has_words = split_by_part([(batch, part)] if len(batch) else [], parts, self.words_file) > 0
        # a word's index among its part's words, in order of id (the stable order split_by_part writes)
        order = np.argsort(part.astype(np.uint16 if parts < 1 << 16 else np.int64), kind="stable")
        bounds = np.searchsorted(part[order], np.arange(parts + 1))
        local = np.empty(len(order), np.uint32)
        local[order] = np.arange(len(order)) - bounds[part[order]]
        del order, words, table, batch

        def local_rows():
            with pa.memory_map(str(run / RUN_CO)) as source:
                for b in _batches(source):
                    word = b.column("word_id").to_numpy()
                    yield b.set_column(0, "word_id", pa.array(local[word])), part[word]

        self.co_batches = split_by_part(local_rows(), parts, self.co_file)

    def words(self, q: int) -> pa.RecordBatch | None:
        """Part q's words and counts (None: the run has no word)."""
        if not self.has_words:
            return None
        with pa.OSFile(str(self.words_file)) as source:  # read, not mapped: the batch outlives the file
            return pa.ipc.open_file(source).get_batch(q)


def _part_codes(q: int, split: list[_SplitRun], word_rank: np.ndarray, starts: np.ndarray, n_targets: int):
    """Part q's co-occurrence rows of every run as (int64 code per row, its count): the word's rank in the part
    (``word_rank[starts[k] + local index]`` for run k) x ``n_targets`` + the target index."""
    codes, counts = [], []
    for k, s in enumerate(split):
        if not s.co_batches:
            continue
        with pa.memory_map(str(s.co_file)) as source:
            reader = pa.ipc.open_file(source)
            for b in range(s.co_batches):
                batch = reader.get_batch(b * s.parts + q)
                if batch.num_rows:
                    word = word_rank[starts[k] + batch.column("word_id").to_numpy().astype(np.int64)]
                    codes.append(word * n_targets + batch.column("target").to_numpy())
                    counts.append(batch.column("count").to_numpy())
    if not codes:
        return np.empty(0, np.int64), np.empty(0, np.int64)
    return np.concatenate(codes), np.concatenate(counts)
