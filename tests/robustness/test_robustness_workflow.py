"""The robustness stage end to end: config, rule helpers, and a real Snakemake run of its rules on a tiny model."""

from __future__ import annotations

import math
import os
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from _scoring_models import tiny_gpt2, word_tokenizer

import unstereo.robustness.rules as workflow
from unstereo.config import load_config, validate_config
from unstereo.errors import ConfigError
from unstereo.robustness.run import ROBUSTNESS_SCORES
from unstereo.scoring.cache import ScoreCache
from unstereo.tables import DELTA, PAIRS, SCORES, read_table, write_table
from unstereo.templates import fill_template

WORDS = " the doctor told nurse that could pay smart did not tell who just came back cash"


def test_offline_default_and_helpers(repo_dir):
    cfg = load_config(repo_dir / "config" / "config.yaml")
    section = cfg["robustness"]
    # the score models but the variants (the default's robustness.models names the bases)
    bases = [m for m, spec in cfg["score"]["models"].items() if "variant" not in spec]
    assert section["enabled"] and workflow.models(section, cfg["score"]) == bases == [
        "smollm2",
        "gemma3-270m",
    ]
    assert workflow.models({"models": []}, cfg["score"]) == list(cfg["score"]["models"])  # empty: every one
    assert workflow.constructions({"constructions": ["negation"]}) == ["original", "negation"]
    assert workflow.pair_paths("res", "W", ["original", "release:synonymized"]) == [
        "res/robustness/W/original/pairs.parquet",
        "res/robustness/W/release_synonymized/pairs.parquet",
    ]
    assert workflow.uses_release(["original", "release:adj_object"]) and not workflow.uses_release(
        ["original"]
    )
    assert workflow.release_option(["ext/reference/RESOURCE.json"]) == (
        "--release-dir ext/reference/tail-wagging/winogender/data"
    )
    assert workflow.release_option([]) == ""
    validate_config({"robustness": {"constructions": ["release:object_clause_back", "negation"]}})
    with pytest.raises(ConfigError, match="robustness.models"):
        workflow.models({"models": ["nope"]}, cfg["score"])
    with pytest.raises(ConfigError, match="robustness.constructions"):
        validate_config({"robustness": {"constructions": ["paraphrase"]}})


def _pairs() -> pd.DataFrame:
    rows = []
    for i, (occ, part) in enumerate([("doctor", "nurse"), ("nurse", "doctor"), ("doctor", "someone")]):
        obj = "someone" if part == "someone" else f"the {part}"
        template = f"The {occ} told {obj} that {{pronoun}} could pay cash."
        rows.append(
            dict(
                pair_id=f"W:{occ}.{part}.{i % 2}",
                benchmark="W",
                template=template,
                sentence_female=fill_template(template, "female"),
                sentence_male=fill_template(template, "male"),
                seed_word=occ,
                max_pmi=0.0,
                max_pmi_word=None,
                source="t",
            )
        )
    return pd.DataFrame(rows)


@pytest.mark.slow
def test_snakemake_runs_the_robustness_rules(tmp_path, repo_dir):
    """score (fills the cache) -> construct -> robustness score (original sentences free) -> metrics -> report."""
    tok = word_tokenizer(words=(WORDS + " she he her his him . ,").split())
    model_dir = tmp_path / "tiny-gpt2"
    tiny_gpt2(len(tok)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    write_table(_pairs(), tmp_path / "results" / "benchmarks" / "W" / "eta-inf.parquet", PAIRS)
    delta = pd.DataFrame(
        {"word": ["doctor", "nurse", "smart"], "delta": [-0.2, 0.4, 0.9], "count": [5, 5, 5]}
    )
    write_table(delta, tmp_path / "delta.parquet", DELTA)
    models = {"tiny": {"path": str(model_dir)}}
    config = {
        "resources": [],
        "reference_mirror": None,
        "benchmarks": {
            "enabled": False,
            "sources": {"W": {"kind": "pairs", "path": "x.csv"}},
            "delta": str(tmp_path / "delta.parquet"),
        },
        "score": {"enabled": True, "models": models, "benchmarks": ["W"], "device": "cpu", "threads": 1},
        "robustness": {
            "enabled": True,
            "benchmarks": ["W"],
            "constructions": ["object_clause_back", "adj_object", "negation"],
            "adjectives": ["smart"],
            "fractions": [0.5],
            "trials": 4,
            "threads": 1,
        },
    }
    for stage in ("corpus", "vocabulary", "generate", "metrics", "report"):
        config[stage] = {"enabled": False}
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    snakemake = shutil.which("snakemake", path=os.path.dirname(sys.executable)) or "snakemake"
    env = {
        **os.environ,
        "PYTHONPATH": str(repo_dir / "src"),
        "PATH": os.path.dirname(sys.executable) + ":" + os.environ["PATH"],
    }
    base = [
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
    # the score stage first (as in the default run), then the robustness rules
    res = subprocess.run(
        [*base[:-2], "results/scores/tiny/W.parquet", *base[-2:]],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    res = subprocess.run(base, capture_output=True, text=True, env=env, timeout=300)
    assert res.returncode == 0, res.stderr[-3000:]
    out = tmp_path / "results" / "robustness"

    adj = read_table(out / "W" / "adj_object" / "pairs.parquet", PAIRS)
    assert list(adj["changed"]) == [True, True, False]  # no adjective before "someone"
    assert adj["sentence_female"].iloc[0] == "The doctor told the smart nurse that she could pay cash."
    assert (
        adj["max_pmi"].iloc[0] == pytest.approx(0.9) and adj["max_pmi_word"].iloc[0] == "smart"
    )  # recomputed

    cost = read_table(out / "cost.parquet").set_index("construction")
    assert (
        cost.loc["original", "texts"] == 6 and cost.loc["original", "forward_passes"] == 0
    )  # cached by score
    # adj_object: "someone" pair unchanged (in the cache); 2 changed pairs, 4 new sentences
    assert (
        cost.loc["adj_object", "forward_passes"] == 4
        and cost.loc["object_clause_back", "forward_passes"] == 6
    )
    assert ScoreCache(tmp_path / "results" / "score-cache.sqlite").count() == 6 + 4 + 6 + 6
    # sub-samples: 4 trials of half the 2 occupations (1 unit): doctor has 2 pairs, nurse 1
    assert cost.loc["sample_50", "forward_passes"] == 0 and 4 * 2 <= cost.loc["sample_50", "texts"] <= 4 * 4

    scores = read_table(out / "scores.parquet", ROBUSTNESS_SCORES)
    assert set(scores["construction"]) == {
        "original",
        "object_clause_back",
        "adj_object",
        "negation",
        "sample_50",
    }
    assert (scores.loc[scores["construction"] == "sample_50", "trial"].tolist()) == [0, 1, 2, 3]
    assert (
        scores["eta"].map(math.isinf).all()
        and scores.loc[scores["construction"] == "original", "n"].item() == 3
    )
    # the original construction's US equals the score stage's
    s = read_table(tmp_path / "results" / "scores" / "tiny" / "W.parquet", SCORES)
    fm = (s["logp_female"] - s["logp_male"]).abs()
    assert scores.loc[scores["construction"] == "original", "us"].item() == pytest.approx(
        100 * (fm <= math.log(1.65)).mean()
    )
    swaps = read_table(out / "rank_swaps.parquet")
    assert swaps.empty  # one model: no pair to swap
    for name in ("constructions.png", "subsampling.png", "summary.html", "rank_swaps.html", "cost.html"):
        assert (out / "report" / name).stat().st_size > 0


def test_gathered_cost_keeps_integer_counts_beside_an_empty_part():
    from unstereo.robustness.run import COST_COLUMNS, gather_cost
    from unstereo.robustness.schemas import COST
    from unstereo.tables import validate

    one = pd.DataFrame([["m", "W", "original", 3, 6, 2]], columns=COST_COLUMNS)
    empty = pd.DataFrame(columns=COST_COLUMNS)  # sampling_cost without sub-samples
    cost = validate(gather_cost([one, empty]), COST)  # a plain concat makes `pairs` an object column
    assert cost["pairs"].tolist() == [3] and pd.api.types.is_integer_dtype(cost["forward_passes"])
    assert gather_cost([empty]).empty


def test_construct_reads_its_constructions_from_the_section_and_a_flag_over_it(tmp_path):
    """The constructions built: the schema's default (every built-in one; here checked by count), the section's
    (--settings: negation), a flag over it (--constructions subject_clause_back); ``original`` always first."""
    import json

    from click.testing import CliRunner

    from unstereo.cli import cli
    from unstereo.robustness.build import construction_dir

    pairs = tmp_path / "pairs.parquet"
    write_table(_pairs(), pairs, PAIRS)

    def built(*args):
        out = tmp_path / f"out{len(list(tmp_path.iterdir()))}"
        res = CliRunner().invoke(cli, ["robustness", "construct", str(pairs), "-o", str(out), *args])
        assert res.exit_code == 0, res.output
        return sorted(p.name for p in out.iterdir())

    section = json.dumps({"constructions": ["negation"]})
    assert built("--settings", section) == ["negation", "original"]
    assert built("--settings", section, "--constructions", "subject_clause_back") == [
        "original",
        "subject_clause_back",
    ]
    # the schema's default: the 17 built-in constructions (original included), one folder each
    from unstereo.config.settings import section as config_section

    default = config_section("robustness").build({}).constructions
    assert len(default) == 17 and built() == sorted(construction_dir(n) for n in default)
