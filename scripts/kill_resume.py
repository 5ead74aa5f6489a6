"""Kill a workflow run with SIGKILL at random moments, resume it each time, and check that nothing is lost.

    python scripts/kill_resume.py --configfile .test/config-methods.yaml --workdir /tmp/kill-resume --phase reference
    python scripts/kill_resume.py --configfile .test/config-methods.yaml --workdir /tmp/kill-resume --phase killed

``reference`` runs the config once, uninterrupted, into ``WORKDIR/reference`` and records its wall time T.
``killed`` runs it again into ``WORKDIR/killed`` with ``--kills`` (>= 10) SIGKILLs of the whole process group
(snakemake and every job) at random moments, drawn (``--seed``) uniformly over (0.03 T, 0.97 T) of the cumulative
time spent executing jobs (each attempt's clock starts when Snakemake begins to execute jobs, after its DAG); after each kill ``snakemake --unlock`` then ``snakemake --rerun-incomplete`` resumes it, and after
the last one it runs to the end. Then every table (``*.parquet``, ``*.csv``) of the killed run is compared with the
reference's: equal (pandas, exactly), or listed with the largest difference. ``all`` does both. Each phase fits the
10-minute slot of the machine's CPU lock for the ``.test`` configs; run each under ``flock``.

Both runs share ``WORKDIR/external`` (the offline resources, fetched by the reference run: the killed run does not
fetch them again) and the machine's GGUF conversions. What may legitimately differ: the robustness cost tables
(``robustness/**/*.cost.parquet``, ``robustness/cost.parquet``) count the forward passes and cache hits of what each
run computed, and a resumed run computes less (its score cache holds the texts of the killed attempts).
Snakemake's timing files (``benchmarks/``), logs, figures and HTML pages are not compared.

Exit status 0 when every table of the reference is in the killed run and equal, apart from the cost tables.
Prints one JSON summary line (kill moments, resume times, tables compared, equal, differing) at the end.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
# Tables that record what a run computed rather than what it found: a resumed run computed less.
RUN_RECORDS = ("cost.parquet",)
SKIP_DIRS = {"benchmarks", "logs", "external", ".snakemake"}


def snakemake(config: Path, results: Path, external: Path, cores: int, *extra: str) -> list[str]:
    return [
        str(Path(sys.executable).parent / "snakemake"),
        "--cores",
        str(cores),
        "--configfile",
        str(config),
        "--config",
        f"results_dir={results}",
        f"external_dir={external}",
        *extra,
    ]


def run(cmd: list[str], log: Path, timeout: float | None = None) -> tuple[int | None, float, float]:
    """(exit status, or None when killed; seconds in all; seconds since Snakemake began to execute jobs): the command
    in its own process group, output appended to ``log``. With ``timeout``, once Snakemake has built its DAG and
    begins to execute jobs (``Select jobs to execute`` in its output), the whole group (snakemake and every running
    job) gets SIGKILL ``timeout`` seconds later: a kill lands among jobs, not in the DAG building of a restart."""
    start = time.monotonic()
    with log.open("ab") as out:
        out.write(f"\n$ {' '.join(cmd)}\n".encode())
        out.flush()
        offset = log.stat().st_size
        proc = subprocess.Popen(cmd, cwd=REPO, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        executing = None
        while proc.poll() is None:
            time.sleep(0.1)
            if timeout is None:
                continue
            now = time.monotonic()
            if executing is None:
                with log.open("rb") as fh:
                    fh.seek(offset)
                    if b"Select jobs to execute" in fh.read():
                        executing = now
            elif now - executing >= timeout:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()
                end = time.monotonic()
                return None, end - start, end - executing
        end = time.monotonic()
    return proc.returncode, end - start, end - executing if executing is not None else 0.0


def tables(root: Path) -> dict[str, Path]:
    out = {}
    for path in sorted(root.rglob("*")):
        rel = path.relative_to(root)
        if path.is_file() and path.suffix in (".parquet", ".csv") and not SKIP_DIRS & set(rel.parts[:-1]):
            if not path.name.startswith("."):  # an atomic write's temporary file, left by a killed job
                out[str(rel)] = path
    return out


def compare(reference: Path, killed: Path) -> dict:
    import pandas as pd

    ref, got = tables(reference), tables(killed)
    equal, differing, records = [], {}, []
    for rel, path in ref.items():
        if rel not in got:
            differing[rel] = "missing in the killed run"
            continue
        read = pd.read_parquet if path.suffix == ".parquet" else pd.read_csv
        a, b = read(path), read(got[rel])
        try:
            pd.testing.assert_frame_equal(a, b, check_exact=True)
            equal.append(rel)
        except AssertionError as exc:
            if Path(rel).name.endswith(RUN_RECORDS):
                records.append(rel)
            else:
                differing[rel] = str(exc).splitlines()[0:6]
    return {
        "tables": len(ref),
        "equal": len(equal),
        "run_records_differing": records,
        "differing": differing,
        "extra_in_killed_run": sorted(set(got) - set(ref)),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--configfile", type=Path, default=REPO / ".test" / "config-methods.yaml")
    ap.add_argument("--workdir", type=Path, required=True)
    ap.add_argument("--phase", choices=["reference", "killed", "all"], default="all")
    ap.add_argument("--kills", type=int, default=10)
    ap.add_argument("--seed", type=int, default=55)
    ap.add_argument("--cores", type=int, default=2)
    ap.add_argument("--span", type=float, default=None,
                    help="seconds of job time the kill moments are drawn over (default: the reference run's time)")  # fmt: skip
    args = ap.parse_args()
    if args.kills < 1:
        ap.error("--kills must be >= 1")
    work = args.workdir.resolve()
    work.mkdir(parents=True, exist_ok=True)
    external = work / "external"
    state_file = work / "state.json"
    state = json.loads(state_file.read_text()) if state_file.exists() else {}
    config = args.configfile.resolve()

    if args.phase in ("reference", "all"):
        code, seconds, _ = run(
            snakemake(config, work / "reference", external, args.cores), work / "reference.log"
        )
        if code != 0:
            print(f"the reference run failed (status {code}); see {work / 'reference.log'}", file=sys.stderr)
            return 2
        state["reference_seconds"] = round(seconds, 1)
        state_file.write_text(json.dumps(state, indent=1))
        print(f"reference run: {seconds:.1f} s", flush=True)
    if args.phase == "reference":
        return 0

    total = state.get("reference_seconds")
    if total is None:
        print("no reference run yet: run --phase reference first", file=sys.stderr)
        return 2
    span = args.span or total  # the job time the kill moments are drawn over
    rng = random.Random(args.seed)
    moments = sorted(rng.uniform(0.03 * span, 0.97 * span) for _ in range(args.kills))
    results, log = work / "killed", work / "killed.log"
    shutil.rmtree(results, ignore_errors=True)  # this script's own scratch: every killed phase starts afresh
    log.unlink(missing_ok=True)
    attempts, elapsed = [], 0.0
    for i, moment in enumerate(moments):
        run(snakemake(config, results, external, args.cores, "--unlock"), log)
        # the moments are of the cumulative time spent executing jobs; at least 1 s of this attempt's
        wait = max(moment - elapsed, 1.0)
        code, seconds, executing = run(
            snakemake(config, results, external, args.cores, "--rerun-incomplete"), log, wait
        )
        elapsed += executing
        attempts.append(
            {"kill": i + 1, "at_s": round(moment, 1), "ran_s": round(seconds, 1),
             "executing_s": round(executing, 1), "status": code}
        )  # fmt: skip
        print(
            f"kill {i + 1}: {executing:.1f} s into its jobs (cumulative {elapsed:.1f} s of {total:.1f})",
            flush=True,
        )
        if code is not None:  # finished before the kill: the remaining moments have nothing to kill
            break
    run(snakemake(config, results, external, args.cores, "--unlock"), log)
    code, seconds, executing = run(
        snakemake(config, results, external, args.cores, "--rerun-incomplete"), log
    )
    elapsed += seconds
    if code != 0:
        print(f"the final resume failed (status {code}); see {log}", file=sys.stderr)
        return 1
    summary = {
        "config": str(args.configfile),
        "reference_seconds": total,
        "killed_run_seconds": round(elapsed, 1),  # executing jobs, plus the whole of the final resume
        "kills": sum(1 for a in attempts if a["status"] is None),
        "attempts": attempts,
        **compare(work / "reference", results),
    }
    (work / "summary.json").write_text(json.dumps(summary, indent=1))
    print(json.dumps(summary))
    if (
        summary["kills"] < args.kills
    ):  # the run needed less time than the reference (its resources were fetched)
        print(f"only {summary['kills']} of {args.kills} kills landed before the run finished; "
              f"rerun with --span {0.8 * total:.0f} or less", file=sys.stderr)  # fmt: skip
    return 0 if not summary["differing"] else 1


if __name__ == "__main__":
    sys.exit(main())
