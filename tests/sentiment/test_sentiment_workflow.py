"""The sentiment stage's rule helpers and one real Snakemake run of its rules (sample -> metrics -> report, and the
debiasing grid) on a tiny random GPT-2, a tiny corpus, a tiny sentence encoder and the mirror's templates."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from _scoring_models import tiny_bert, tiny_gpt2, word_tokenizer

import unstereo.workflow.rules as model_rules
from unstereo.config import validate_config
from unstereo.sentiment import rules
from unstereo.sentiment.schemas import CONTINUATIONS, FAIRNESS
from unstereo.sentiment.templates import DATASET
from unstereo.tables import read_table


def test_rule_helpers():
    section = validate_config(
        {"sentiment": {"models": {"smol": {"resource": "smollm2", "gguf_file": "S.gguf"}, "p.1": "some/folder"},
                       "debias": {"methods": ["embedding"], "lambdas": [1, 0.5]}}}
    )["sentiment"]  # fmt: skip
    manifest = lambda r: f"ext/{r}/RESOURCE.json"  # noqa: E731
    got = rules.sample_inputs(section, "smol", manifest)
    assert got["reference"] == "ext/reference/RESOURCE.json" and got["model"] == ["ext/smollm2/RESOURCE.json"]
    assert rules.sample_inputs(section, "p.1", manifest)["model"] == []  # a folder is no resource
    assert model_rules.model_arg(section["models"]["smol"], got["model"]) == "ext/smollm2/S.gguf"
    assert model_rules.model_pattern(section["models"]) == r"smol|p\.1"
    assert rules.debias_runs(section) == ["none-0", "embedding-1", "embedding-0.5"]
    assert json.loads(rules.settings_arg(section))["samples"] == 100
    assert rules.templates_dir("ext") == f"ext/reference/{DATASET}"


def test_debias_grid_leaves_the_model_variants_out():
    # a variant is fine-tuned already: the grid fine-tunes the other models only, in the section's order
    section = {"models": {"smol": {"resource": "smollm2", "gguf_file": "S.gguf"}, "smol-cda": {"variant": "smol-cda"},
                          "p": "variant:smol-control", "q": {"path": "some/folder"}}}  # fmt: skip
    assert rules.debias_models(section) == ["smol", "q"]


@pytest.mark.slow
def test_snakemake_runs_the_sentiment_rules(tmp_path, repo_dir, reference_dir):
    src = reference_dir / DATASET
    if not src.is_dir():
        pytest.skip(f"{src} missing")
    ext = tmp_path / "ext"
    shutil.copytree(src, ext / "reference" / DATASET)
    (ext / "reference" / "RESOURCE.json").write_text(json.dumps({"files": {}}))
    tok = word_tokenizer()
    tiny_gpt2(len(tok)).save_pretrained(tmp_path / "lm")
    tok.save_pretrained(tmp_path / "lm")
    bert, btok = tiny_bert(tmp_path)
    bert.bert.save_pretrained(tmp_path / "enc")
    btok.save_pretrained(tmp_path / "enc")
    (tmp_path / "lex").mkdir()
    (tmp_path / "lex" / "positive-words.txt").write_text("good\nwin\n")
    (tmp_path / "lex" / "negative-words.txt").write_text("bad\n")
    corpus = ["Mary went to Italy .", "I gave Chile a book .", "the dog barked at Italy yesterday .",
              "nobody expected Chile to win .", "she said hi ."] * 2  # fmt: skip
    (tmp_path / "corpus.txt").write_text("\n".join(corpus) + "\n")
    config = {
        "resources": [],
        "reference_mirror": None,
        "external_dir": str(ext),
        "sentiment": {
            "enabled": True,
            "models": {"tiny": {"path": str(tmp_path / "lm")}},
            "attributes": ["country"],
            "templates": {"country": ["C4", "C5"]},
            "samples": 2,
            "max_new_tokens": 3,
            "classifiers": ["vader", "opinion"],
            "opinion_lexicon": str(tmp_path / "lex"),
            "bootstrap": 10,
            "device": "cpu",
            "threads": 1,
            "debias": {"enabled": True, "methods": ["embedding"], "lambdas": [10], "corpus": [str(tmp_path / "corpus.txt")],
                       "steps": 2, "batch_size": 2, "max_sentences": 10, "encoder": str(tmp_path / "enc")},
        },
    }  # fmt: skip
    for stage in ("corpus", "vocabulary", "benchmarks", "generate", "score", "metrics", "report"):
        config[stage] = {"enabled": False}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake = shutil.which("snakemake", path=os.path.dirname(sys.executable)) or "snakemake"
    env = {**os.environ, "PYTHONPATH": str(repo_dir / "src"),
           "PATH": os.path.dirname(sys.executable) + ":" + os.environ["PATH"]}  # fmt: skip
    cmd = [snakemake, "-s", str(repo_dir / "Snakefile"), "-d", str(tmp_path), "--configfile",
           str(tmp_path / "config.yaml"), "--cores", "1", "--quiet", "rules"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = tmp_path / "results" / "sentiment" / "tiny"
    cont = read_table(out / "continuations.parquet", CONTINUATIONS)
    assert len(cont) == 2 * 10 * 2 and {"score_vader", "score_opinion"} <= set(cont.columns)
    assert set(cont["template_id"]) == {"C4", "C5"} and cont["prefix"].iloc[0] == "Syria is"
    fair = read_table(out / "fairness.parquet", FAIRNESS)
    assert (
        len(fair) == 2 * 2
        and (fair["ci_low"] <= fair["ci_high"]).all()
        and set(fair["n_continuations"]) == {40}
    )
    for name in ("figure1.png", "figure2.png", "fairness.html", "table1.html", "figure6.png"):
        assert (out / "report" / name).stat().st_size > 0, name
    debias = pd.read_parquet(out / "debias.parquet")
    assert list(dict.fromkeys(debias["method"])) == ["none", "embedding"] and set(debias["steps"]) == {0, 2}
    # the base model's row reuses the stage's continuations: same I.F. as fairness.parquet
    base = debias[(debias["method"] == "none") & (debias["classifier"] == "vader")].iloc[0]
    assert base["IF"] == pytest.approx(
        fair.query("classifier == 'vader' and metric == 'IF'")["value"].iloc[0]
    )
    assert (out / "debias" / "embedding-10" / "continuations.parquet").exists()
