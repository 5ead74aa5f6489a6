"""Speed of the corpus counters: the fast counter (compiled kernels and numpy paths) against the naive reference,
same files, one run.

    python benchmarks/bench_corpus.py [--file F ...] [--repeat 3]

Default input: the demo corpus (brown.jsonl + nlp-corpus.jsonl, 23 MB). Every counter reads the same files through
the same reader (JSON parsing included; the compiled one through its raw JSON path, as count_files does) and must
give identical counts. A single pass starts from a cold vocabulary
and includes building the final sorted tables. Prints MB/s per core (wall clock, and input per CPU-second of this
single-threaded process), the speed ratios, peak memory (tracemalloc peak of one fast run, and the process's max
RSS), and the extrapolated core-hours for the 825 GB PILE. Targets: fast >= 7x naive, >= 100 MB/s per core
single pass. "Steady state" counts the files a second time into a counter that already knows their
vocabulary (a PILE shard of 28 GB is nearly all steady state). For large inputs see bench_corpus_scale.py.
"""

from __future__ import annotations

import argparse
import os
import resource
import sys
import time
import tracemalloc
from pathlib import Path

for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(var, "1")

import pandas as pd  # noqa: E402

from unstereo.unstereoeval.corpus import jit  # noqa: E402
from unstereo.unstereoeval.corpus.fast import FastCounter  # noqa: E402
from unstereo.unstereoeval.corpus.naive import count_naive  # noqa: E402
from unstereo.unstereoeval.corpus.readers import DocumentReader  # noqa: E402
from unstereo.unstereoeval.lexicon import load_stopwords, load_targets  # noqa: E402

PILE_MB = 825e3


def batches(paths, raw_json=False):
    reader = DocumentReader(chunk_bytes=1 << 20, raw_json=raw_json)
    for path in paths:
        yield from reader.batches(path)


def run_fast(paths, targets, stop, passes=1, compiled=None):
    counter = FastCounter(targets, stop, 10, compiled=compiled)
    raw_json = counter.accelerator == "numba"  # as count_files reads for the compiled path
    times = []
    for _ in range(passes):
        w0, c0 = time.perf_counter(), time.process_time()
        for batch in batches(paths, raw_json):
            counter.add(batch)
        times.append((time.perf_counter() - w0, time.process_time() - c0))
    w0, c0 = time.perf_counter(), time.process_time()
    counts = counter.counts()
    final = (time.perf_counter() - w0, time.process_time() - c0)
    return counts, times, final


def run_naive(paths, targets, stop):
    w0, c0 = time.perf_counter(), time.process_time()
    counts = count_naive((t for batch in batches(paths) for t in batch), targets, stop, 10)
    return counts, (time.perf_counter() - w0, time.process_time() - c0)


def same_counts(a, b) -> bool:
    if (a.n_tokens, a.n_pairs) != (b.n_tokens, b.n_pairs):
        return False
    try:
        pd.testing.assert_frame_equal(a.unigrams, b.unigrams)
        pd.testing.assert_frame_equal(a.cooccurrence, b.cooccurrence)
    except AssertionError:
        return False
    return True


def main() -> None:
    ext = Path(os.environ.get("UNSTEREO_EXTERNAL_DIR", "data/external"))
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--file", type=Path, action="append", help="input file (repeat for several; default: demo corpus)"
    )
    ap.add_argument(
        "--repeat", type=int, default=3, help="fast runs per path (best is reported); naive runs once"
    )
    args = ap.parse_args()
    paths = args.file or [ext / "demo-corpus" / "brown.jsonl", ext / "demo-corpus" / "nlp-corpus.jsonl"]
    mb = sum(p.stat().st_size for p in paths) / 1e6
    targets, stop = load_targets(), load_stopwords("spacy")
    paths_fast = [("fast, compiled", True)] if jit.AVAILABLE else []
    paths_fast.append(("fast, numpy", False))
    rows, results = [], {}
    for name, compiled in paths_fast:
        run_fast(paths[:1], targets, stop, compiled=compiled)  # warm-up: imports, tables, compiled code
        best = None
        for _ in range(args.repeat):
            counts, times, final = run_fast(paths, targets, stop, compiled=compiled)
            wall, cpu = times[0][0] + final[0], times[0][1] + final[1]
            if best is None or wall < best[0]:
                best = (wall, cpu, final[1])
        _, steady, _ = run_fast(paths, targets, stop, passes=2, compiled=compiled)
        rows += [(name, best[0], best[1]), (f"{name}, steady state", *steady[1])]
        results[name] = (counts, best)
    naive_counts, (n_wall, n_cpu) = run_naive(paths, targets, stop)
    rows.insert(0, ("naive", n_wall, n_cpu))
    same = all(same_counts(c, naive_counts) for c, _ in results.values())

    tracemalloc.start()
    run_fast(paths, targets, stop)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    maxrss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024

    first = next(iter(results.values()))[0]
    print(
        f"files: {', '.join(map(str, paths))} ({mb:.1f} MB), {first.n_tokens} tokens, {len(first.unigrams)} types"
    )
    print(f"identical counts: {same}")
    print(
        f"{'counter':28s} {'wall s':>8s} {'cpu s':>8s} {'MB/s wall':>10s} {'MB/cpu-s':>10s} {'PILE core-h':>12s}"
    )
    for name, w, c in rows:
        print(f"{name:28s} {w:8.3f} {c:8.3f} {mb / w:10.1f} {mb / c:10.1f} {PILE_MB / (mb / c) / 3600:12.1f}")
    for name, (_, (f_wall, f_cpu, f_final)) in results.items():
        print(f"{name}: {f_final:.3f} cpu s of the single pass build the final sorted tables")
        print(
            f"{name}: speed ratio to naive: wall {n_wall / f_wall:.1f}x, cpu {n_cpu / f_cpu:.1f}x (target >= 7x)"
        )
    print(f"peak traced memory of one fast run: {peak / 2**20:.0f} MiB; process max RSS {maxrss_mb:.0f} MiB")
    print(f"cores: os.cpu_count() = {os.cpu_count()}, load average {os.getloadavg()[0]:.2f}")
    sys.exit(0 if same else 1)


if __name__ == "__main__":
    main()
