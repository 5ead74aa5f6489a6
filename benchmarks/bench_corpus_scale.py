"""Counting at scale: one core vs shard-parallel, peak memory, exact totals, the PILE in core-hours.

    python benchmarks/make_synthetic_corpus.py /tmp/synthetic --gb 5 --shards 4
    python benchmarks/bench_corpus_scale.py /tmp/synthetic [--jobs 2] [--work /tmp/synthetic-counts] [--no-one-file]

Each shard is counted by its own ``unstereo corpus count --runs`` process (whole process: imports, reading and
decompressing, counting, writing the counter's runs, which the merge sums), as the workflow's count jobs do:
first one after the other (one core), then ``--jobs`` at a time (a multiple of ``--jobs`` shards). Then
``unstereo corpus merge`` sums them. Prints MB/s per core (uncompressed input over the one-core wall time), the
parallel speed-up (target >= 1.8x on 2 cores), the peak RSS of the largest count and merge processes (target
< 2 GiB), and whether the totals are exact: the merged n_tokens and n_pairs equal the generator's, the merged
unigrams equal the generator's per-shard word counts summed, and the merged tables equal the per-shard tables summed
with pandas. Then all shards as one file, counted by one process with the default spill limits, as each of the
PILE's 30 files (~27 GB of text) is, and its runs merged (its tables must equal the merged shards').
Extrapolates to the 825 GB PILE in core-hours both ways, as 30 files with the merge of their runs
(:func:`final_merge`). Also times the first shard counted in this process
(``count_files`` as the CLI calls it, after a warm-up on a few lines: no process start, imports or loading of the
compiled code), the figure to hold against bench_corpus.py's single pass.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pandas as pd

REPO = Path(__file__).resolve().parents[1]
PILE_MB = 825e3


def unstereo(*args: str) -> tuple[float, float]:
    """Run ``unstereo ARGS`` in a fresh single-threaded process; (wall seconds, its own max RSS in MiB)."""
    env = {**os.environ, "OMP_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
    with tempfile.TemporaryFile("w+") as err:
        t0 = time.perf_counter()
        proc = subprocess.Popen([sys.executable, "-m", "unstereo.cli", *args], env=env, stderr=err, text=True)
        _, status, usage = os.wait4(proc.pid, 0)  # this child's rusage, not the maximum over all children
        wall = time.perf_counter() - t0
        proc.returncode = os.waitstatus_to_exitcode(status)
        if proc.returncode:
            err.seek(0)
            raise SystemExit(f"unstereo {' '.join(args)} failed:\n{err.read()[-3000:]}")
    return wall, usage.ru_maxrss / 1024


def count_all(shards: list[Path], work: Path, jobs: int) -> tuple[float, dict[str, tuple[float, float]]]:
    """Count every shard into work/<name>, ``jobs`` processes at a time; (wall seconds of the whole, per shard
    (wall, max RSS in MiB))."""
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    t0 = time.perf_counter()

    def one(shard: Path) -> tuple[str, tuple[float, float]]:
        return shard.name, unstereo(
            "corpus", "count", str(shard), "-o", str(work / shard.name.split(".")[0]), "--runs"
        )

    with ThreadPoolExecutor(jobs) as pool:
        each = dict(pool.map(one, shards))
    return time.perf_counter() - t0, each


def in_process(shard: Path, work: Path) -> tuple[float, float]:
    """(wall, CPU seconds) of ``count_files`` on ``shard`` in this process, to runs as the workflow counts; a
    warm-up on a few lines first loads the compiled code."""
    from unstereo.unstereoeval.corpus.count import count_files
    from unstereo.unstereoeval.lexicon import load_stopwords, load_targets

    targets, stop = load_targets(), load_stopwords("spacy")
    tiny = work / "warmup.jsonl"
    tiny.parent.mkdir(parents=True, exist_ok=True)
    tiny.write_text('{"text": "She said that he was late."}\n' * 10)
    count_files([tiny], work / "warmup", targets, stop, runs=True)
    w0, c0 = time.perf_counter(), time.process_time()
    count_files([shard], work / shard.name.split(".")[0], targets, stop, runs=True)
    return time.perf_counter() - w0, time.process_time() - c0


def check_exact(corpus: Path, work: Path, merged: Path, shards: list[Path]) -> dict[str, bool]:
    from unstereo.unstereoeval.corpus.merge import merge_count_dirs, read_counts

    expected = json.loads((corpus / "expected.json").read_text())
    uni, co, stats = read_counts(merged)
    # each shard's runs summed alone
    parts = [
        read_counts(merge_count_dirs([work / s.name.split(".")[0]], work / "alone" / s.name)) for s in shards
    ]
    shutil.rmtree(work / "alone")
    summed_uni = pd.concat([p[0] for p in parts]).groupby("word", as_index=False)["count"].sum()
    summed_co = pd.concat([p[1] for p in parts]).groupby(["word", "target"], as_index=False)["count"].sum()
    truth = pd.concat(pd.read_parquet(corpus / f"unigrams_{s.name.split('.')[0]}.parquet") for s in shards)
    truth = truth.groupby("word", as_index=False)["count"].sum()

    def same(a: pd.DataFrame, b: pd.DataFrame, keys: list[str]) -> bool:
        a = a.sort_values(keys).reset_index(drop=True)
        b = b.sort_values(keys).reset_index(drop=True)
        return a.astype({"count": "int64"}).equals(b.astype({"count": "int64"}))

    return {
        "n_tokens = generator's": stats["n_tokens"] == expected["n_tokens"],
        "n_pairs = generator's": stats["n_pairs"] == expected["n_pairs"],
        "documents = generator's": stats["read"]["docs"]
        == sum(v["docs"] for v in expected["shards"].values()),
        "unigrams = generator's word counts": same(uni, truth, ["word"]),
        "unigrams = per-shard sum": same(uni, summed_uni, ["word"]),
        "co-occurrences = per-shard sum": same(co, summed_co, ["word", "target"]),
    }


def one_file(shards: list[Path], work: Path) -> tuple[float, float, bool, float]:
    """The shards as one file (their zstd frames concatenated: one stream) counted by one process, with the default
    spill limits, as one of the PILE's 30 files (~27 GB of text each) is counted: (wall, max RSS in MiB, whether
    its runs merged equal the merged shards', the wall of that merge)."""
    from unstereo.unstereoeval.corpus.merge import read_counts

    joined = work / "one-file.jsonl.zst"
    with open(joined, "wb") as out:
        for shard in shards:
            with open(shard, "rb") as part:
                shutil.copyfileobj(part, out)
    wall, rss = unstereo("corpus", "count", str(joined), "-o", str(work / "one-file"), "--runs")
    joined.unlink()
    t_merge, _ = unstereo("corpus", "merge", str(work / "one-file"), "-o", str(work / "one-file-merged"))
    a, b = read_counts(work / "one-file-merged"), read_counts(work / "merged")
    same = all(
        x.sort_values(keys).reset_index(drop=True).equals(y.sort_values(keys).reset_index(drop=True))
        for x, y, keys in ((a[0], b[0], ["word"]), (a[1], b[1], ["word", "target"]))
    )
    same = same and a[2]["n_tokens"] == b[2]["n_tokens"] and a[2]["n_pairs"] == b[2]["n_pairs"]
    return wall, rss, same, t_merge


def _rows(count_dir: Path) -> int:
    """Input rows of a count directory of runs: every run's words and co-occurrence rows."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 0
    for run in json.loads((count_dir / "stats.json").read_text())["runs"]:
        n += pq.ParquetFile(count_dir / run / "unigrams.parquet").metadata.num_rows
        with pa.memory_map(str(count_dir / run / "cooccurrence.arrow")) as source:
            reader = pa.ipc.open_file(source)
            n += sum(reader.get_batch(i).num_rows for i in range(reader.num_record_batches))
    return n


def final_merge(work: Path, shards: list[Path], mb: float, t_merge: float, t_file: float) -> str:
    """The PILE as 30 files: their count jobs plus the merge of their runs, in core-hours. The merge's cost per
    input row is the shards' merge's; a file's runs are not merged in its job and each is bounded by the spill
    limits, so their rows grow with the text: extrapolated linearly from all shards as one file."""
    per_row = t_merge / sum(_rows(work / "one" / s.name.split(".")[0]) for s in shards)
    rows = _rows(work / "one-file") * PILE_MB / mb
    merge_h = rows * per_row / 3600
    count_h = PILE_MB / (mb / t_file) / 3600
    return (
        f"PILE as 30 files: count jobs {count_h:.2f} core-hours + the merge of their runs ~{merge_h:.2f} "
        f"({rows / 1e9:.1f}G input rows at {per_row * 1e6:.2f} us each, linear in the text from "
        f"{_rows(work / 'one-file') / 1e6:.1f}M here) = ~{count_h + merge_h:.2f} core-hours"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", type=Path, help="folder of make_synthetic_corpus.py (shards + expected.json)")
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--work", type=Path, help="where the counts go (default: <corpus>-counts)")
    ap.add_argument("--no-one-file", action="store_true", help="skip counting the shards as one file")
    args = ap.parse_args()
    work = args.work or args.corpus.with_name(args.corpus.name + "-counts")
    expected = json.loads((args.corpus / "expected.json").read_text())
    shards = [args.corpus / name for name in expected["shards"]]
    mb = sum(v["bytes"] for v in expected["shards"].values()) / 1e6
    on_disk = sum(s.stat().st_size for s in shards) / 1e6

    unstereo(
        "corpus", "count", str(shards[0]), "-o", str(work.with_name(work.name + "-warmup"))
    )  # compiled code
    shutil.rmtree(work.with_name(work.name + "-warmup"), ignore_errors=True)
    t1, each = count_all(shards, work / "one", 1)
    rss_count = max(rss for _, rss in each.values())
    # the parallel run takes a multiple of --jobs shards, so no job runs alone at the end (5 shards on 2 jobs could
    # not beat 5/3 = 1.67x); compared with the same shards' one-core time
    even = shards[: len(shards) // args.jobs * args.jobs]
    tn, _ = count_all(even, work / "par", args.jobs)
    t1_even = sum(each[s.name][0] for s in even)
    t_merge, rss_merge = unstereo(
        "corpus",
        "merge",
        *(str(work / "one" / s.name.split(".")[0]) for s in shards),
        "-o",
        str(work / "merged"),
    )
    t_file = None if args.no_one_file else one_file(shards, work)
    # in this process before check_exact fills its heap with the tables
    wall_in, cpu_in = in_process(shards[0], work / "in-process")
    exact = check_exact(args.corpus, work / "one", work / "merged", shards)
    if t_file is not None:
        exact["one file (spilled runs, merged) = merged shards"] = t_file[2]
    mb0 = expected["shards"][shards[0].name]["bytes"] / 1e6

    rate = mb / t1
    print(
        f"corpus: {len(shards)} shards, {mb:.0f} MB uncompressed ({on_disk:.0f} MB on disk), {os.cpu_count()} cores"
    )
    print(f"one core:  {t1:8.1f} s  {rate:7.1f} MB/s per core (whole processes)")
    print(
        f"in process: {wall_in:8.1f} s  {mb0 / wall_in:7.1f} MB/s per core ({mb0 / cpu_in:.1f} per CPU-second; "
        f"{shards[0].name} counted by count_files, no process start)"
    )
    print(
        f"{args.jobs} jobs:    {tn:8.1f} s  for {len(even)} shards that took {t1_even:.1f} s one after the other: "
        f"speed-up {t1_even / tn:.2f}x (target >= 1.8x on 2 cores)"
    )
    print(f"merge:     {t_merge:8.1f} s  ({t_merge / mb * 1e3:.1f} s per GB of text)")
    if t_file is not None:
        print(
            f"one file:  {t_file[0]:8.1f} s  {mb / t_file[0]:7.1f} MB/s per core (all shards as one file, "
            f"{_rows(work / 'one-file') / 1e6:.1f}M rows of runs); its merge {t_file[3]:.1f} s"
        )
    print(
        f"peak RSS: count process {rss_count:.0f} MiB, merge {rss_merge:.0f} MiB"
        + (f", one-file count {t_file[1]:.0f} MiB" if t_file is not None else "")
        + " (target < 2048)"
    )
    for what, ok in exact.items():
        print(f"exact: {what}: {ok}")
    print(
        f"PILE (825 GB): counting {PILE_MB / rate / 3600:.2f} core-hours at the shards' rate, merge "
        f"{PILE_MB * t_merge / mb / 3600:.2f} more if it stays linear in the text"
        + (
            f"; as files like the one above {PILE_MB / (mb / t_file[0]) / 3600:.2f}"
            if t_file is not None
            else ""
        )
    )
    if t_file is not None:
        print(final_merge(work, shards, mb, t_merge, t_file[0]))
    print(f"load average {os.getloadavg()[0]:.2f}")
    sys.exit(0 if all(exact.values()) else 1)


if __name__ == "__main__":
    main()
