"""The CI output check: each kind of output is recognised as well-formed or not."""

from __future__ import annotations

import math

import pandas as pd

from unstereo.outputs_check import check_file, check_metrics, schema_of
from unstereo.tables import METRICS, PAIRS, SCORES


def test_schema_of_follows_the_results_tree(tmp_path):
    assert schema_of(tmp_path / "benchmarks" / "USE-5" / "pairs.parquet") is PAIRS
    assert schema_of(tmp_path / "benchmarks" / "USE-5" / "eta-0.65.parquet") is PAIRS
    assert schema_of(tmp_path / "scores" / "smollm2" / "USE-5.parquet") is SCORES
    assert schema_of(tmp_path / "metrics" / "metrics.parquet") is METRICS
    assert schema_of(tmp_path / "paper" / "metrics.parquet") is METRICS
    assert schema_of(tmp_path / "paper" / "curves" / "metrics.parquet") is None  # the curves of the metrics
    assert schema_of(tmp_path / "generate" / "USE-5" / "full.parquet") is None


def test_check_file_kinds(tmp_path):
    assert check_file(tmp_path / "missing.csv") == "missing"
    (tmp_path / "empty.json").write_text("")
    assert check_file(tmp_path / "empty.json") == "empty file"
    (tmp_path / "fig.png").write_bytes(b"\x89PNG\r\n\x1a\n...")
    assert check_file(tmp_path / "fig.png") is None
    (tmp_path / "fake.pdf").write_bytes(b"<html>")
    assert check_file(tmp_path / "fake.pdf") == "not a PDF file"
    (tmp_path / "bad.json").write_text("{")
    assert check_file(tmp_path / "bad.json").startswith("unreadable")
    pairs = tmp_path / "pairs.parquet"
    pd.DataFrame({"pair_id": ["a"], "template": ["{pronoun} ran."]}).to_parquet(pairs)
    assert "lacks column" in check_file(pairs)


def test_check_metrics_needs_a_finite_us_per_scored_pair(tmp_path):
    config = {
        "results_dir": str(tmp_path),
        "score": {"enabled": True, "models": {"m": {}}, "benchmarks": ["B", "C"]},
        "metrics": {"enabled": True},
    }
    (tmp_path / "metrics").mkdir()
    rows = [
        {"model": "m", "benchmark": "B", "eta": math.inf, "n": 4, "us": 50.0},
        {"model": "m", "benchmark": "C", "eta": math.inf, "n": 0, "us": float("nan")},
    ]
    pd.DataFrame(rows).to_parquet(tmp_path / "metrics" / "metrics.parquet")
    problems = check_metrics(config)
    assert len(problems) == 1 and "'C'" in problems[0]
