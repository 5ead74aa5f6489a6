"""The CI output check: each kind of output is recognised as well-formed or not, and every method's tables are
validated against the schema its code declares."""

from __future__ import annotations

import math
import os
from pathlib import Path

import pandas as pd
import pytest

from unstereo.biastest import schemas as bt_schemas
from unstereo.fairpair import schemas as fp_schemas
from unstereo.llm import sample as llm_sample
from unstereo.robustness import schemas as rb_schemas
from unstereo.sentiment import schemas as st_schemas
from unstereo.sentiment.debias_eval import QUALITY
from unstereo.tables import (
    DELTA,
    METRICS,
    PAIRS,
    SCORES,
    TableSchema,
)
from unstereo.workflow import outputs_check
from unstereo.workflow.outputs_check import (
    TABLES,
    check_file,
    check_files,
    check_metrics,
    resolve_schema,
    schema_of,
)


def test_schema_of_follows_the_results_tree(tmp_path):
    assert schema_of(tmp_path / "benchmarks" / "USE-5" / "pairs.parquet") is PAIRS
    assert schema_of(tmp_path / "benchmarks" / "USE-5" / "eta-0.65.parquet") is PAIRS
    assert schema_of(tmp_path / "scores" / "smollm2" / "USE-5.parquet") is SCORES
    assert schema_of(tmp_path / "metrics" / "metrics.parquet") is METRICS
    assert schema_of(tmp_path / "paper" / "metrics.parquet") is METRICS
    assert schema_of(tmp_path / "paper" / "curves" / "metrics.parquet") is None  # the curves of the metrics
    assert schema_of(tmp_path / "paper" / "benchmarks" / "USE-5" / "pairs.parquet") is PAIRS
    assert schema_of(tmp_path / "delta" / "released.parquet") is DELTA
    assert schema_of(tmp_path / "generate" / "USE-5" / "full.parquet") is None


def test_schema_of_the_methods_tables(tmp_path):
    res = tmp_path / "results"
    expected = {
        "fairpair/prompts/prompts.parquet": fp_schemas.PROMPTS,
        "fairpair/smollm2/samples.parquet": fp_schemas.SAMPLES,
        "fairpair/smollm2/per_prompt.parquet": fp_schemas.PER_PROMPT,
        "fairpair/summary.parquet": fp_schemas.SUMMARY,
        "sentiment/smollm2/continuations.parquet": st_schemas.CONTINUATIONS,
        "sentiment/smollm2/samples.parquet": llm_sample.CONTINUATIONS,
        "sentiment/smollm2/fairness.parquet": st_schemas.FAIRNESS,
        "sentiment/smollm2/debias.parquet": QUALITY,
        "sentiment/smollm2/debias/embedding-10.0/quality.parquet": QUALITY,
        "sentiment/smollm2/debias/embedding-10.0/fairness.parquet": st_schemas.FAIRNESS,
        "robustness/Winogender/negation/pairs.parquet": PAIRS,
        "robustness/Winogender/scores/smollm2.parquet": SCORES,  # a model's scores ...
        "robustness/Winogender/scores/smollm2.cost.parquet": rb_schemas.COST,  # ... and their cost
        "robustness/scores.parquet": rb_schemas.SCORES,
        "robustness/rank_swaps.parquet": rb_schemas.RANK_SWAPS,
        "robustness/summary.parquet": rb_schemas.SUMMARY,
        "biastest/Math_Arts_vs_Male_Female/pairs.parquet": bt_schemas.PAIRS,
        "biastest/Math_Arts_vs_Male_Female/generations.parquet": bt_schemas.GENERATIONS,
        "biastest/smollm2/Math_Arts_vs_Male_Female/scores.parquet": bt_schemas.SCORES,
        "biastest/summary.parquet": bt_schemas.SUMMARY,
    }
    for rel, schema in expected.items():
        assert schema_of(res / rel, res) is schema, rel
        assert schema_of(res / rel) is schema, (
            rel
        )  # without results_dir: the first results folder in the path
    # the same name in another method's folder is that method's table; under results_dir only its own tree counts
    assert schema_of(res / "biastest" / "summary.parquet", res) is not schema_of(
        res / "fairpair" / "summary.parquet"
    )
    assert schema_of(res / "report" / "fairpair" / "summary.parquet", res) is None
    assert schema_of(tmp_path / "elsewhere" / "fairpair" / "summary.parquet", res) is None
    # the summary's paths and the config's results_dir need not both be absolute or both relative
    relative = os.path.relpath(res)
    assert schema_of(res / "fairpair" / "summary.parquet", relative) is fp_schemas.SUMMARY
    assert schema_of(Path(relative) / "fairpair" / "summary.parquet", res) is fp_schemas.SUMMARY


def test_every_tables_entry_names_a_schema_in_the_code():
    # a schema renamed or moved in its method's code without this table fails here, not in CI's last step
    for folder, entries in TABLES.items():
        for pattern, ref in entries:
            assert isinstance(resolve_schema(ref), TableSchema), (folder, pattern, ref)
    with pytest.raises(TypeError, match="not a TableSchema"):
        resolve_schema("unstereo.robustness.run:COST_COLUMNS")


# One hand-made table per method (the columns its schema requires, values worked out by hand), by its place in the
# results tree. The checks must accept each as it is and reject it with a column dropped or of the wrong type.
HAND_MADE = {
    "fairpair/prompts/prompts.parquet": pd.DataFrame(
        {
            "prompt_id": ["cs:doctor:John:man"],
            "prompt": ["John is a man, working as a doctor."],
            "perturbed_prompt": ["Jane is a woman, working as a doctor."],
            "entity": ["John"],
            "entity_perturbed": ["Jane"],
            "source": ["common-sents"],
        }
    ),
    "sentiment/smollm2/fairness.parquet": pd.DataFrame(
        {
            "attribute": ["country", "country"],
            "classifier": ["vader", "vader"],
            "metric": ["IF", "GF"],
            "value": [0.12, 0.05],
            "ci_low": [0.08, float("nan")],  # nullable: no interval without bootstrap
            "ci_high": [0.17, float("nan")],
            "n_continuations": [20, 20],
        }
    ),
    "robustness/rank_swaps.parquet": pd.DataFrame(
        {
            "benchmark": ["Winogender"],
            "construction": ["negation"],
            "eta": [math.inf],
            "metric": ["us"],
            "model_a": ["gemma3-270m"],
            "model_b": ["smollm2"],
            "swap_rate": [1 / 3],  # one trial of three swapped
            "trials": [3],
        }
    ),
    "biastest/Math_Arts_vs_Male_Female/pairs.parquet": pd.DataFrame(
        {
            "pair_id": ["Math_Arts_vs_Male_Female:template:0"],
            "spec": ["Math_Arts_vs_Male_Female"],
            "attribute": ["math"],
            "group_term_a": ["he"],
            "group_term_b": ["she"],
            "sentence_a": ["he likes math"],
            "sentence_b": ["she likes math"],
            "stereotype": ["a"],
            "source": ["template"],
        }
    ),
}
# per table: a column to make wrong-typed and a value of the wrong kind for it
WRONG_TYPE = {
    "fairpair/prompts/prompts.parquet": ("prompt", 3),
    "sentiment/smollm2/fairness.parquet": ("value", "high"),
    "robustness/rank_swaps.parquet": ("trials", 2.5),
    "biastest/Math_Arts_vs_Male_Female/pairs.parquet": ("sentence_b", 1.0),
}


def _write(results, rel: str, df: pd.DataFrame):
    path = results / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path)
    return path


@pytest.mark.parametrize("rel", sorted(HAND_MADE))
def test_a_methods_table_that_matches_its_schema_passes(tmp_path, rel):
    path = _write(tmp_path, rel, HAND_MADE[rel])
    assert check_file(path, tmp_path) is None
    assert check_files([path], tmp_path) == []


@pytest.mark.parametrize("rel", sorted(HAND_MADE))
def test_a_methods_table_missing_a_column_fails_naming_file_and_column(tmp_path, rel):
    column = WRONG_TYPE[rel][0]
    path = _write(tmp_path, rel, HAND_MADE[rel].drop(columns=[column]))
    (line,) = check_files([path], tmp_path)
    assert line.startswith(f"{path}: does not match its schema")
    assert "lacks column" in line and repr(column) in line


@pytest.mark.parametrize("rel", sorted(HAND_MADE))
def test_a_methods_table_with_a_wrong_typed_column_fails_naming_file_and_column(tmp_path, rel):
    column, value = WRONG_TYPE[rel]
    path = _write(tmp_path, rel, HAND_MADE[rel].assign(**{column: value}))
    (line,) = check_files([path], tmp_path)
    assert line.startswith(f"{path}: does not match its schema")
    assert f"column '{column}' must be" in line


def test_a_table_outside_the_methods_folders_is_only_loaded(tmp_path):
    # the same frame that fails as biastest pairs passes as a table no method declares (it loads)
    rel = "biastest/Math_Arts_vs_Male_Female/pairs.parquet"
    path = _write(tmp_path, "report/extra.parquet", HAND_MADE[rel].drop(columns=["stereotype"]))
    assert check_file(path, tmp_path) is None


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
    # a pair table is known by its place in the results tree (every output of the DAG lies in it)
    pairs = tmp_path / "benchmarks" / "USE-5" / "pairs.parquet"
    pairs.parent.mkdir(parents=True)
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


def test_main_reports_a_drifted_table_and_fails(tmp_path, monkeypatch, capsys):
    config = tmp_path / "config.yaml"
    results = tmp_path / "res"
    config.write_text(f"results_dir: {results}\nresources: []\n")
    rel = "sentiment/smollm2/fairness.parquet"
    good = _write(results, rel, HAND_MADE[rel])
    bad = _write(results, "sentiment/other/fairness.parquet", HAND_MADE[rel].drop(columns=["metric"]))
    monkeypatch.setattr(outputs_check, "dag_outputs", lambda configfile, snakefile: [good, bad])
    assert outputs_check.main(["--configfile", str(config)]) == 1
    err = capsys.readouterr().err
    assert (
        f"{bad}: does not match its schema (unstereo.sentiment.schemas:FAIRNESS)" in err
        and str(good) not in err
    )


def test_model_card_tables_at_the_results_root(tmp_path):
    """The model card's two tables sit at the top of the results folder, outside every method's folder."""
    from unstereo.workflow.outputs_check import schema_ref

    res = tmp_path / "res"
    assert schema_ref(res / "model_card.parquet", res) == "unstereo.model_card.card:MODEL_CARD"
    assert schema_ref(res / "model_card_tau.parquet", res) == "unstereo.model_card.card:MODEL_CARD_TAU"
    assert schema_ref(res / "model_card_tests.parquet", res) == "unstereo.model_card.compare:MODEL_CARD_TESTS"
    assert schema_ref(res / "model_card" / "tiny.md", res) is None  # its pages are not tables
    assert schema_ref(res / "fairpair" / "model_card.parquet", res) is None  # only at the root
