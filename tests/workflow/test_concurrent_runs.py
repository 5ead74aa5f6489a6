"""Two runs at once: what a user can expect.

- Two processes writing one score cache at the same moment (parallel Snakemake jobs, or two studies sharing the
  file): both succeed and no row is lost. SQLite serialises the writers (WAL journal, 60 s busy timeout); rows are
  only inserted, so a text both scored keeps the first score, and both processes put the same one.
- Two processes opening one damaged cache at the same moment: both go on; the file is set aside once (the check
  runs under an exclusive lock on ``<cache>.lock``), and both write into the one new cache.
- Two ``snakemake`` runs on one results folder: the second refuses at once with Snakemake's own message (its
  output files are locked by the first, ``.snakemake/locks``) and changes nothing; the first finishes as if alone.
"""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import numpy as np
from _paths import REPO

SRC = str(REPO / "src")

# One writer: waits for the start signal (a file), then 50 transactions of 20 scores: 10 texts every writer puts
# (the same scores) and 10 of its own; its own scores are -(writer + i + j / 100).
WRITER = """
import sys, time
from pathlib import Path
from unstereo.scoring.cache import ScoreCache
cache_path, go, me = Path(sys.argv[1]), Path(sys.argv[2]), int(sys.argv[3])
while not go.exists():
    time.sleep(0.005)
cache = ScoreCache(cache_path)
for i in range(50):
    rows = {f"common {i} {j}": (-(i + j / 100), 3) for j in range(10)}
    rows.update({f"own {me} {i} {j}": (-(me + i + j / 100), 4) for j in range(10)})
    cache.put_many("model", rows, {"writer": me}, {"writer": me})
cache.close()
"""


def _writers(tmp_path: Path, cache: Path, n: int = 2) -> list[subprocess.CompletedProcess]:
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", WRITER, str(cache), str(go), str(me)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )  # fmt: skip
        for me in range(n)
    ]
    time.sleep(1.0)  # both started and waiting (the imports take the most of it)
    go.touch()
    out = []
    for p in procs:
        stdout, stderr = p.communicate(timeout=240)
        out.append(subprocess.CompletedProcess(p.args, p.returncode, stdout, stderr))
    return out


def _check_rows(cache: Path, writers: int = 2) -> None:
    with closing(sqlite3.connect(cache)) as conn:
        rows = dict(conn.execute("SELECT text, logp FROM scores").fetchall())
    # 500 common texts + 500 of each writer's own: none lost, each own score its writer's
    assert len(rows) == 500 + 500 * writers
    assert rows["common 49 9"] == -(49 + 9 / 100) and rows["own 1 49 9"] == -(1 + 49 + 9 / 100)


def test_two_processes_write_one_score_cache_at_once(tmp_path):
    cache = tmp_path / "score-cache.sqlite"
    for res in _writers(tmp_path, cache):
        assert res.returncode == 0, res.stderr
    _check_rows(cache)


def test_two_processes_open_one_damaged_cache_at_once(tmp_path):
    cache = tmp_path / "score-cache.sqlite"
    cache.write_bytes(np.random.default_rng(55).bytes(8192))
    results = _writers(tmp_path, cache)
    for res in results:
        assert res.returncode == 0, res.stderr
    aside = [
        p for p in tmp_path.glob("score-cache.sqlite.damaged-*") if not p.name.endswith(("-wal", "-shm"))
    ]
    assert len(aside) == 1  # set aside once: the second process found a sound, new cache
    assert sum("set aside" in res.stderr for res in results) == 1
    _check_rows(cache)


def test_a_second_snakemake_on_one_results_folder_refuses(tmp_path):
    """The first run's job holds until released; a second run of the same target in the same folder meanwhile
    exits non-zero with Snakemake's lock message, and the first then finishes."""
    (tmp_path / "Snakefile").write_text(
        "rule slow:\n"
        "    output: 'results/out.txt'\n"
        "    shell: 'touch started; for i in $(seq 600); do [ -e release ] && break; sleep 0.1; done; echo done > {output}'\n"
    )
    cmd = [str(Path(sys.executable).parent / "snakemake"), "--cores", "1", "-d", str(tmp_path), "-s",
           str(tmp_path / "Snakefile")]  # fmt: skip
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    first = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    try:
        deadline = time.monotonic() + 120
        while not (tmp_path / "started").exists():
            assert first.poll() is None and time.monotonic() < deadline, "the first run did not start its job"
            time.sleep(0.1)
        second = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        assert second.returncode != 0
        message = second.stdout + second.stderr
        assert "cannot be locked" in message and "--unlock" in message
        assert not (tmp_path / "results" / "out.txt").exists()  # the second run did nothing
    finally:
        (tmp_path / "release").touch()
        out, _ = first.communicate(timeout=120)
    assert first.returncode == 0, out
    assert (tmp_path / "results" / "out.txt").read_text() == "done\n"
