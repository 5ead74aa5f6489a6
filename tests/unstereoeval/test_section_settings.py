"""The corpus and benchmarks commands take their config section whole (``--settings``), with flags generated from the
section's schema over it: on tiny inputs whose answers are worked out by hand, a flag overrides the ``--settings``
value, which overrides the schema's default, which applies when neither is given (metrics and report compare:
tests/unstereoeval/report/test_report.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd
from click.testing import CliRunner

from unstereo.cli import cli


def _invoke(*args: object, code: int = 0) -> str:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    assert result.exit_code == code, result.output
    return result.output


# ------------------------------------------------------------------------------------------------------- corpus
def _she_neighbours(out: Path) -> set[str]:
    co = pd.read_parquet(out / "cooccurrence.parquet")
    return set(co.loc[co["target"] == "she", "word"])


def test_corpus_count_window_flag_over_settings_over_schema(tmp_path):
    # one document, no stop words among its tokens: she(0) apple(1) banana(2) cherry(3). A word co-occurs with
    # `she` when |i - j| < window: window 2 -> apple; 3 -> apple, banana; the schema's 10 -> all three.
    doc = tmp_path / "doc.jsonl"
    doc.write_text(json.dumps({"text": "she apple banana cherry"}) + "\n", encoding="utf-8")
    runs = {
        "default": [],
        "settings": ["--settings", '{"window": 2}'],
        "flag": ["--settings", '{"window": 2}', "--window", "3"],
    }
    for name, extra in runs.items():
        _invoke("corpus", "count", doc, "-o", tmp_path / name, *extra)
    assert _she_neighbours(tmp_path / "default") == {"apple", "banana", "cherry"}
    assert _she_neighbours(tmp_path / "settings") == {"apple"}
    assert _she_neighbours(tmp_path / "flag") == {"apple", "banana"}


def test_corpus_spill_limit_takes_any_positive_value(tmp_path):
    """spill_types is a memory knob: 1 spills after every batch (a run each), and is valid; 0 is not."""
    doc = tmp_path / "doc.jsonl"
    doc.write_text(json.dumps({"text": "she apple banana cherry"}) + "\n", encoding="utf-8")
    _invoke("corpus", "count", doc, "-o", tmp_path / "one", "--spill-types", "1")
    assert _she_neighbours(tmp_path / "one") == {"apple", "banana", "cherry"}
    out = _invoke("corpus", "count", doc, "-o", tmp_path / "zero", "--spill-types", "0", code=2)
    assert "--spill-types: config key 'corpus.spill_types'" in out


# --------------------------------------------------------------------------------------------------- benchmarks
def _templates(path: Path) -> Path:
    path.write_text(
        "id,template\n1,{pronoun} walked.\n2,{pronoun} sat.\n3,{pronoun} ran.\n", encoding="utf-8"
    )
    return path


def test_benchmarks_build_reads_its_source_from_the_section(tmp_path):
    # 3 templates; the section's source T samples 2 of them (max_pairs), a flag over it 1, no source: all 3
    src = _templates(tmp_path / "t.csv")
    section = json.dumps({"sources": {"T": {"kind": "templates", "path": "elsewhere.csv", "max_pairs": 2}}})
    out = tmp_path / "p.parquet"
    _invoke("benchmarks", "build", src, "--name", "T", "-o", out, "--settings", section)
    assert len(pd.read_parquet(out)) == 2
    _invoke("benchmarks", "build", src, "--name", "T", "-o", out, "--settings", section, "--max-pairs", "1")
    assert len(pd.read_parquet(out)) == 1
    _invoke("benchmarks", "build", src, "--name", "T", "-o", out, "--kind", "templates")
    assert len(pd.read_parquet(out)) == 3
    # a source named nowhere, without --kind: said so
    out_text = _invoke("benchmarks", "build", src, "--name", "U", "-o", out, "--settings", section, code=2)
    assert "--kind is required (or benchmarks.sources.U.kind in --settings)" in out_text


def test_benchmarks_sizes_etas_flag_over_settings_over_schema(tmp_path):
    # the rows of `sizes` are one per (benchmark, eta): the schema's 6 paper etas, the section's 2, the flag's 1
    pairs = tmp_path / "p.parquet"
    _invoke("benchmarks", "build", _templates(tmp_path / "t.csv"), "--kind", "templates", "-o", pairs)
    out = tmp_path / "sizes.csv"
    for extra, etas in (
        ([], ["inf", "1.0", "0.8", "0.65", "0.5", "0.3"]),
        (["--settings", '{"etas": ["inf", 0.5]}'], ["inf", "0.5"]),
        (["--settings", '{"etas": ["inf", 0.5]}', "--etas", "0.3"], ["0.3"]),
    ):
        _invoke("benchmarks", "sizes", pairs, "-o", out, *extra)
        assert pd.read_csv(out)["eta"].astype(str).tolist() == etas
