"""Count files: :func:`count_files` reads a shard (one or several files) and counts it with the fast counter
(:mod:`.fast`) or the reference one (:mod:`.naive`) into a count directory (tables, or runs)."""

from __future__ import annotations

import shutil
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.unstereoeval.corpus.fast import FastCounter
from unstereo.unstereoeval.corpus.naive import Counts, count_naive

log = get_logger("unstereoeval.corpus.count")

# a guess of the vocabulary from the input's size (on disk) for the hash table's first size: 1 GB of web text
# holds ~1M distinct words (a PILE-like synthetic shard of 1.25 GB: 1.9M); too high costs only unused table
_BYTES_PER_NEW_WORD = 1000


def _text_bytes(path) -> int:
    """About how many bytes of text ``path`` holds (a .zst ~3x its size on disk)."""
    from unstereo.unstereoeval.corpus.readers import input_kind

    p = Path(path)
    if not p.is_file():
        return 0  # the reader names the missing file
    return p.stat().st_size * (3 if input_kind(p) == "jsonl.zst" else 1)


def _check_texts_engine(engine: str) -> None:
    if engine not in ("fast", "naive"):
        raise InputError(f"unknown counting engine {engine!r} (fast | naive)")


def count_files(
    paths: Sequence[str | Path],
    out_dir: str | Path,
    targets: Sequence[str],
    stopwords: Iterable[str],
    window: int = 10,
    text_key: str = "text",
    on_bad_line: str = "error",
    chunk_mb: float = 1.0,
    spill_types: int = 2_000_000,
    spill_rows: int = 20_000_000,
    engine: str = "fast",
    stopwords_name: str = "spacy",
    raw_json: bool = True,
    ordered: bool = True,
    runs: bool = False,
) -> dict:
    """Count ``paths`` (one shard or several files counted as one) into ``out_dir``; returns the stats written.
    ``raw_json``: the fast engine's compiled path reads JSONL without a Python str per document (same counts).
    ``ordered=False``: the fast engine may write the rows unsorted (the workflow's shards: the merge sorts; sorting
    millions of strings and rows per shard was ~15 % of a count job). ``runs``: leave the counts as the counter's
    runs in ``out_dir/runs`` (integer word ids, :mod:`~unstereo.unstereoeval.corpus.runs`) for
    :func:`~unstereo.unstereoeval.corpus.merge.merge_count_dirs`, which sums a shard's runs ~1.8x faster than its count tables; a
    large input's runs are then merged once, at the end, not also inside its job."""
    import sys
    import time

    from tqdm.auto import tqdm

    from unstereo.unstereoeval.corpus.merge import write_counts
    from unstereo.unstereoeval.corpus.readers import DocumentReader

    _check_texts_engine(engine)
    reader = DocumentReader(
        text_key=text_key,
        on_bad_line=on_bad_line,
        chunk_bytes=int(chunk_mb * (1 << 20)),
        raw_json=raw_json and engine == "fast",
    )
    out = Path(out_dir)
    if runs:
        _clear_counts(out)
    t0 = time.perf_counter()
    total = sum(Path(p).stat().st_size for p in paths if Path(p).is_file())
    bar = tqdm(
        total=total, unit="B", unit_scale=True, desc=f"count {out.name}", file=sys.stderr, mininterval=10
    )
    meta = {
        "window": int(window),
        "targets": sorted(set(targets)),
        "stopwords": stopwords_name,
        "text_key": text_key,
        "engine": engine,
        "inputs": [str(p) for p in paths],
    }

    def batches():
        for p in paths:
            compressed = str(p).endswith(".zst")
            before = reader.stats.bytes_in
            for texts in reader.batches(p):
                yield texts
                if not compressed:
                    bar.update(reader.stats.bytes_in - before)
                    before = reader.stats.bytes_in
            if compressed:
                bar.update(Path(p).stat().st_size)

    try:
        if engine == "naive":
            counts = count_naive((t for b in batches() for t in b), targets, stopwords, window)
            meta.update(n_tokens=counts.n_tokens, n_pairs=counts.n_pairs)
            meta["read"] = reader.stats.as_dict()
            meta["sorted"] = not runs
            if runs:
                _write_naive_run(out, counts, meta)
            else:
                write_counts(out, counts.unigrams, counts.cooccurrence, meta, distinct=True)
        else:
            # beside the output: /tmp may be small
            spill_dir = out / RUNS if runs else out.parent / f".{out.name}.spill"
            counter = FastCounter(
                targets,
                stopwords,
                window,
                spill_dir=spill_dir,
                spill_types=spill_types,
                spill_rows=spill_rows,
                expected_words=sum(_text_bytes(p) for p in paths) // _BYTES_PER_NEW_WORD,
            )
            meta["accelerator"] = counter.accelerator
            try:
                for texts in batches():
                    counter.add(texts)
                meta["read"] = reader.stats.as_dict()
                if runs:
                    meta["sorted"] = False
                    counter.finish_runs(out, meta)
                else:
                    meta["sorted"] = bool(ordered or counter.runs)
                    counter.finish(out, meta, ordered=ordered)
            finally:
                if not runs:
                    shutil.rmtree(spill_dir, ignore_errors=True)
            meta.update(n_tokens=counter.n_tokens, n_pairs=counter.n_pairs)
    finally:
        bar.close()
    s = reader.stats
    log.info(
        "%s: %d files, %d docs, %d tokens, %d bad lines skipped, %d blank lines, %d empty files, "
        "%d truncated files; %.1f MB in %.1f s",
        out,
        s.files,
        s.docs,
        meta["n_tokens"],
        s.bad_lines,
        s.blank_lines,
        s.empty_files,
        s.truncated_files,
        total / 1e6,
        time.perf_counter() - t0,
    )
    return meta


RUNS = "runs"  # a count directory's folder of runs (count_files(runs=True))


def _clear_counts(out: Path) -> None:
    """Remove what an earlier count left in ``out`` (stats first: a directory without them is incomplete), so no
    stale run or table mixes with the new runs."""
    from unstereo.unstereoeval.corpus.parts import CO, STATS, UNI

    for name in (STATS, UNI, CO):
        (out / name).unlink(missing_ok=True)
    shutil.rmtree(out / RUNS, ignore_errors=True)


def _write_naive_run(out: Path, counts: Counts, meta: dict) -> None:
    """The naive engine's counts written as one run (same directory as the fast engine's ``runs=True``)."""
    from unstereo.io import write_json
    from unstereo.unstereoeval.corpus.parts import STATS
    from unstereo.unstereoeval.corpus.runs import write_run

    words = pd.Index(counts.unigrams["word"])
    targets = pd.Index(meta["targets"])
    co = counts.cooccurrence
    codes = words.get_indexer(co["word"]).astype(np.int64) * len(targets) + targets.get_indexer(co["target"])
    run = f"{RUNS}/run-00000"
    write_run(
        out / run,
        words.tolist(),
        counts.unigrams["count"].to_numpy(),
        codes,
        co["count"].to_numpy(),
        len(targets),
    )
    write_json(out / STATS, {**meta, "runs": [run]})
