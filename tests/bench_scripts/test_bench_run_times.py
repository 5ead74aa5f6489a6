"""benchmarks/run_times.py: job times of a run's Snakemake benchmark files, per stage and model."""

import sys
from pathlib import Path

from _paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import run_times  # noqa: E402  (benchmarks/ is not a package)

HEADER = "s\th:m:s\tmax_rss\tmax_vms\n"


def _tsv(path: Path, seconds: float, rss: float) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(HEADER + f"{seconds}\t0:00:01\t{rss}\t1.0\n")


def test_job_times_stage_model_and_sums(tmp_path):
    logs = tmp_path / "logs"
    _tsv(logs / "bench/score/qwen-coder/USE-5.tsv", 10.0, 500)
    _tsv(logs / "bench/score/qwen-coder-1.5b/USE-5.tsv", 30.0, 7000)
    _tsv(logs / "bench/robustness/Winogender/score-qwen-coder-1.5b.tsv", 5.0, 6000)
    _tsv(logs / "bench/biastest/qwen-coder.score.tsv", 2.5, 400)
    _tsv(logs / "benchmarks/USE-5/maxpmi.benchmark.tsv", 1.5, 100)
    (logs / "other.tsv").write_text("a\tb\n1\t2\n")  # not a benchmark file: skipped
    times = run_times.job_times(logs, ["qwen-coder", "qwen-coder-1.5b"])
    got = dict(
        zip(times["job"], zip(times["stage"], times["model"], times["seconds"], strict=True), strict=True)
    )
    assert got == {
        "benchmarks/USE-5/maxpmi": ("benchmarks", "", 1.5),
        "biastest/qwen-coder.score": ("biastest", "qwen-coder", 2.5),
        "robustness/Winogender/score-qwen-coder-1.5b": ("robustness", "qwen-coder-1.5b", 5.0),
        "score/qwen-coder-1.5b/USE-5": ("score", "qwen-coder-1.5b", 30.0),
        "score/qwen-coder/USE-5": ("score", "qwen-coder", 10.0),
    }
    tables = run_times.summary(times)
    stage = tables["stage"].set_index("stage")
    assert stage.loc["score", "seconds"] == 40.0 and stage.loc["score", "jobs"] == 2
    assert stage.loc["score", "max_rss_mb"] == 7000
    assert list(tables["stage"]["stage"]) == [
        "score",
        "robustness",
        "biastest",
        "benchmarks",
    ]  # slowest first
    by_model = tables["stage_model"].set_index(["stage", "model"])["seconds"]
    assert by_model[("robustness", "qwen-coder-1.5b")] == 5.0
