"""The score stage's config schema, rule helpers and a real Snakemake run of rule score on a tiny model."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from types import SimpleNamespace

import pandas as pd
import pytest
import yaml
from _scoring_models import tiny_gpt2, word_tokenizer

import unstereo.unstereoeval.score.rules as rules
import unstereo.workflow.rules as model_rules
from unstereo.config import load_config, validate_config
from unstereo.errors import ConfigError
from unstereo.tables import PAIRS, SCORES, read_table, write_table


def test_offline_default_config(repo_dir):
    score = load_config(repo_dir / "config" / "config.yaml")["score"]
    assert score["enabled"] and set(score["models"]) == {
        "smollm2",
        "gemma3-270m",
        "smollm2-cda",
        "smollm2-control",
    }
    # defaults filled in from workflow/schemas/score.schema.yaml
    assert score["threads"] >= 1 and score["bos_policy"] == "auto" and score["reference_quirks"] is False
    assert score["models"]["smollm2"]["masked"] is False


@pytest.mark.parametrize(
    "bad, key",
    [
        ({"models": {"m": {"path": "x", "resource": "smollm2"}}}, "score.models.m"),  # both
        ({"models": {"m": {"gguf_file": "x.gguf"}}}, "score.models.m"),  # neither
        ({"models": {"m": {"path": "x", "colour": 1}}}, "score.models.m.colour"),
        ({"batch_size": 0}, "score.batch_size"),
        ({"batch_size": "big"}, "score.batch_size"),
        ({"device": "tpu"}, "score.device"),
        ({"chunksize": 10}, "score.chunksize"),
    ],
)
def test_bad_score_config_names_the_key(bad, key):
    with pytest.raises(ConfigError, match=f"config key '{key}"):
        validate_config({"score": bad})


def test_rule_helpers():
    score = validate_config(
        {
            "score": {
                "models": {
                    "smol": {"resource": "smollm2", "gguf_file": "S.gguf"},
                    "py.70m": {"path": "EleutherAI/pythia-70m", "revision": "step1000", "batch_size": 8},
                    "bert": {"path": "bert-base-uncased", "masked": True, "mem_mb": 999},
                },
                "device": "cuda",
            }
        }
    )["score"]
    manifest = "ext/{}/RESOURCE.json".format
    assert model_rules.model_inputs(score["models"]["smol"], manifest) == ["ext/smollm2/RESOURCE.json"]
    assert model_rules.model_inputs(score["models"]["py.70m"], lambda r: 1 / 0) == []
    assert rules.model_arg(score, "smol", ["ext/smollm2/RESOURCE.json"]) == "ext/smollm2/S.gguf"
    assert rules.model_arg(score, "py.70m", []) == "EleutherAI/pythia-70m"  # the revision goes in --revision
    assert rules.options(score, "py.70m") == (
        "--batch-size 8 --dtype auto --device cuda --chunk-size 500 --bos-policy auto --revision step1000"
        " --no-reference-quirks"
    )
    assert rules.options(score, "bert").endswith("--no-reference-quirks --masked")
    res = model_rules.job_resources(score, mem_mb=1, runtime=1, models=score["models"])
    assert (
        res["mem_mb"](SimpleNamespace(model="bert")) == 999
        and res["mem_mb"](SimpleNamespace(model="smol")) == 6000
    )
    assert res["gpu"] == 1 and "gpu" not in model_rules.job_resources(
        {**score, "device": "auto"}, mem_mb=1, runtime=1
    )
    assert model_rules.model_pattern(score["models"]) == r"smol|py\.70m|bert"


@pytest.mark.slow
def test_snakemake_runs_rule_score(tmp_path, repo_dir):
    """A real Snakemake run of rule score on a tiny random GPT-2 saved to a folder (a `path:` model)."""
    tok = word_tokenizer()
    model_dir = tmp_path / "tiny-gpt2"
    tiny_gpt2(len(tok)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    pairs = pd.DataFrame(
        [
            dict(
                pair_id=f"B:{i}",
                benchmark="B",
                template=m,
                sentence_female=f,
                sentence_male=m,
                seed_word=None,
                max_pmi=None,
                max_pmi_word=None,
                source="t",
            )
            for i, (f, m) in enumerate(
                [("She went.", "He went."), ("I gave her a book.", "I gave him a book.")]
            )
        ]
    )
    write_table(pairs, tmp_path / "results" / "benchmarks" / "B" / "eta-inf.parquet", PAIRS)
    config = {
        "resources": [],
        "reference_mirror": None,
        "score": {
            "enabled": True,
            "models": {"tiny": {"path": str(model_dir)}},
            "benchmarks": ["B"],
            "device": "cpu",
            "chunk_size": 1,
            "threads": 1,
        },
    }
    for stage in ("corpus", "vocabulary", "benchmarks", "generate", "metrics", "report"):
        config[stage] = {"enabled": False}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake = shutil.which("snakemake", path=os.path.dirname(sys.executable)) or "snakemake"
    env = {
        **os.environ,
        "PYTHONPATH": str(repo_dir / "src"),
        "PATH": os.path.dirname(sys.executable) + ":" + os.environ["PATH"],
    }
    cmd = [
        snakemake,
        "-s",
        str(repo_dir / "Snakefile"),
        "-d",
        str(tmp_path),
        "--configfile",
        str(tmp_path / "config.yaml"),
        "--cores",
        "1",
        "--quiet",
        "rules",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    scores = read_table(tmp_path / "results" / "scores" / "tiny" / "B.parquet", SCORES)
    assert list(scores["pair_id"]) == ["B:0", "B:1"] and set(scores["model"]) == {"tiny"}
    assert list(scores["ntok_female"]) == [3, 6]
    assert (tmp_path / "results" / "logs" / "score" / "tiny" / "B.log").exists()
