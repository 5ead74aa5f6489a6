"""The biastest stage's config and rule helpers, and a real Snakemake run of its rules on a tiny config: a user
specification with generation (a scripted OpenAI-compatible server) and a release specification (the mirror),
scored on a tiny random GPT-2 and a tiny random BERT (masked LM)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys

import pandas as pd
import pytest
import yaml
from _scoring_models import tiny_bert, tiny_gpt2, word_tokenizer
from llm_test_server import Reply, ScriptedServer

import unstereo.biastest.rules as bt
from unstereo.config import load_config, validate_config
from unstereo.errors import ConfigError


def test_offline_default_config(repo_dir):
    config = load_config(repo_dir / "config" / "config.yaml")
    b = config["biastest"]
    assert b["enabled"] and b["specs"] == ["core"] and b["bootstrap"] == {"rounds": 30, "per_attribute": 4}
    assert (
        len(bt.specs(config)) == 15 and bt.generated_specs(config) == []
    )  # generation off offline (too slow)
    # the score stage's models, its two variants of SmolLM2 (issue 65) among them
    assert set(bt.models(config)) == {"smollm2", "gemma3-270m", "smollm2-cda", "smollm2-control"}


@pytest.mark.parametrize(
    ("bad", "key"),
    [
        ({"specs": ["nope"]}, r"biastest.specs\[0\]"),
        ({"causal_score": "median"}, "biastest.causal_score"),
        ({"released": {"runs": [6]}}, r"biastest.released.runs"),
        ({"generate": {"pairing": "magic"}}, "biastest.generate.pairing"),
        (
            {"generate": {"specs": ["Professions_vs_Gender"]}, "specs": ["Math_Arts_vs_Male_Female"]},
            r"biastest.generate.specs\[0\]",
        ),
        (
            {
                "per_spec": {"Professions_vs_Gender": {"max_pairs_per_spec": 9}},
                "specs": ["Math_Arts_vs_Male_Female"],
            },
            r"biastest.per_spec.Professions_vs_Gender",
        ),
        ({"per_spec": {"male_female__math_arts": {}}, "specs": ["male_female__math_arts"]}, "app tag"),
        (
            {"per_spec": {"Professions_vs_Gender": {"runs": [1]}}},
            r"biastest.per_spec.Professions_vs_Gender.runs",
        ),
        ({"per_spec": {"X": {"released": {"runs": [0]}}}}, r"biastest.per_spec.X.released.runs"),
    ],
)
def test_bad_config_names_the_key(bad, key):
    with pytest.raises(ConfigError, match=key):
        config = validate_config({"biastest": bad})
        bt.specs(config)
        bt.generated_specs(config)
        bt.per_spec(config)


STUDY_LIKE = {"specs": ["Professions_vs_Gender", "Math_Arts_vs_Male_Female"], "sources": ["released"],
              "released": {"runs": [1]}, "max_pairs_per_spec": 20}  # fmt: skip
PER_SPEC = {"Professions_vs_Gender": {"released": {"runs": [1, 2, 3, 4, 5]}, "max_pairs_per_spec": 400}}


def test_spec_overrides_and_spec_section():
    from unstereo.biastest.run import spec_overrides, spec_section

    section = {"released": {"generator": "gpt-3.5", "runs": [1]}, "max_pairs_per_spec": 100, "seed": 2,
               "per_spec": {"A": {"released": {"runs": [2, 3]}, "max_pairs_per_spec": None}, "B": {}}}  # fmt: skip
    assert spec_overrides(section, "A") == {"released.runs": [2, 3], "max_pairs_per_spec": None}
    assert spec_overrides(section, "B") == {} == spec_overrides(section, "C") == spec_overrides({}, "A")
    want_a = {"released": {"generator": "gpt-3.5", "runs": [2, 3]}, "max_pairs_per_spec": None, "seed": 2}
    assert spec_section(section, "A") == want_a
    assert spec_section(section, "C") == {k: v for k, v in section.items() if k != "per_spec"}
    assert section["released"]["runs"] == [1]  # the section itself is left as it was


def test_per_spec_settings_change_only_their_specification():
    """Each pairs job's --settings: the section with its own per_spec entry over it, and no per_spec key, so that an
    entry changes only its specification's job; without entries every job gets the text it got before."""
    plain = validate_config({"biastest": STUDY_LIKE})
    assert plain["biastest"]["per_spec"] == {} and bt.per_spec(plain) == {}
    before = bt.settings_json(plain, seed=3)
    assert "per_spec" not in json.loads(before)
    assert all(bt.pairs_settings(plain, name, seed=3) == before for name in bt.specs(plain))
    config = validate_config({"biastest": {**STUDY_LIKE, "per_spec": PER_SPEC}})
    assert bt.per_spec(config) == PER_SPEC
    assert bt.settings_json(config, seed=3) == before  # generate, summary: the per_spec key dropped
    assert "per_spec" not in json.loads(bt.score_settings(validate_config(
        {"biastest": {**STUDY_LIKE, "per_spec": PER_SPEC, "models": {"m": {"path": "gpt2"}}}}), "m"))  # fmt: skip
    assert bt.pairs_settings(config, "Math_Arts_vs_Male_Female", seed=3) == before
    own = json.loads(bt.pairs_settings(config, "Professions_vs_Gender", seed=3))
    want = {
        **json.loads(before),
        "released": {"generator": "gpt-3.5", "runs": [1, 2, 3, 4, 5]},
        "max_pairs_per_spec": 400,
    }
    assert own == want
    # a key the entry leaves out keeps the section's value; a null cap means all pairs
    part = validate_config(
        {"biastest": {**STUDY_LIKE, "per_spec": {"Professions_vs_Gender": {"max_pairs_per_spec": None}}}}
    )
    own = json.loads(bt.pairs_settings(part, "Professions_vs_Gender"))
    assert own["max_pairs_per_spec"] is None and own["released"] == {"generator": "gpt-3.5", "runs": [1]}


def _pairs(ref, tmp_path, spec, *args):
    from click.testing import CliRunner

    from unstereo.biastest.cli import pairs_cmd

    out = tmp_path / f"{spec}.parquet"
    res = CliRunner().invoke(pairs_cmd, [spec, "-o", str(out), "--reference-dir", str(ref), *args])
    assert res.exit_code == 0, res.output
    pairs = pd.read_parquet(out)
    runs = pairs.pair_id.str.split(":").str[3].astype(int)  # {spec}:released:gpt-3.5:{run}:{row}
    return pairs, runs.value_counts().sort_index().to_dict()


def test_per_spec_pairs_from_every_run(tmp_path, reference_dir):
    """The study's override: Professions_vs_Gender gets every pair of the 5 gpt-3.5 runs (74 + 72 + 75 + 73 + 73 =
    367, under its cap of 400), the other specification run 1 capped at the section's 20 (of its 32). The same
    through each job's own settings and through the whole section (resolved by the command); flags still win."""
    ref = reference_dir / "biastestgpt"
    if not ref.is_dir():
        pytest.skip(f"no biastestgpt reference data under {reference_dir}")
    config = validate_config({"biastest": {**STUDY_LIKE, "per_spec": PER_SPEC}})
    whole = json.dumps(config["biastest"])
    prof = "Professions_vs_Gender"
    for settings in (bt.pairs_settings(config, prof, seed=1), whole):
        pairs, runs = _pairs(ref, tmp_path, prof, "--settings", settings)
        assert runs == {1: 74, 2: 72, 3: 75, 4: 73, 5: 73} and len(pairs) == 367
        assert (
            pairs.pair_id.is_unique
            and pairs.pair_id.str.fullmatch(rf"{prof}:released:gpt-3\.5:[1-5]:\d+").all()
        )
    for settings in (bt.pairs_settings(config, "Math_Arts_vs_Male_Female", seed=1), whole):
        assert _pairs(ref, tmp_path, "Math_Arts_vs_Male_Female", "--settings", settings)[1] == {1: 20}
    # the cap of the entry: the same 30 pairs (attribute terms balanced, seeded) as the section's cap of 30
    capped = validate_config({"biastest": {**STUDY_LIKE, "per_spec": {prof: {"max_pairs_per_spec": 30}}}})
    pairs, runs = _pairs(ref, tmp_path, prof, "--settings", bt.pairs_settings(capped, prof, seed=1))
    section_cap = validate_config({"biastest": {**STUDY_LIKE, "max_pairs_per_spec": 30}})
    same, _ = _pairs(ref, tmp_path, prof, "--settings", bt.settings_json(section_cap, seed=1))
    assert runs == {1: 30} and list(pairs.pair_id) == list(same.pair_id)
    # flags override the entry as they override the section
    assert _pairs(ref, tmp_path, prof, "--settings", whole, "--released-runs", "2")[1] == {2: 72}
    assert _pairs(ref, tmp_path, prof, "--settings", whole, "--max-pairs-per-spec", "7")[0].shape[0] == 7
    # the default (no entries): run 1 capped at 20, as before
    plain = json.dumps(validate_config({"biastest": STUDY_LIKE})["biastest"])
    assert _pairs(ref, tmp_path, prof, "--settings", plain)[1] == {1: 20}


def test_rule_helpers(tmp_path):
    (tmp_path / "s.yaml").write_text(yaml.safe_dump({"name": "mine", "social_groups": {"A": ["x"], "B": ["y"]},
                                                     "attributes": {"P": ["p"], "Q": ["q"]}}))  # fmt: skip
    config = validate_config({"biastest": {"specs": ["male_female__math_arts", str(tmp_path / "s.yaml")],
                                           "models": {"b": {"path": "bert", "masked": True}}}})  # fmt: skip
    specs = bt.specs(config)
    assert specs == {"Math_Arts_vs_Male_Female": "Math_Arts_vs_Male_Female", "mine": str(tmp_path / "s.yaml")}
    assert bt.spec_arg(specs["mine"], "mine") == f"{tmp_path / 's.yaml'}:mine"
    assert bt.spec_inputs(specs["mine"]) == [str(tmp_path / "s.yaml")] and bt.spec_inputs("X") == []
    assert bt.score_options(config, "b").endswith("--causal-score mean --masked --masked-scorer biastestgpt")
    settings = json.loads(bt.settings_json(config, seed=3))  # --settings of generate, pairs and summary
    assert settings["seed"] == 3 and "models" not in settings and settings["reference_quirks"] is False
    quirky = validate_config({"biastest": {"reference_quirks": True, "masked_scorer": "crows-pairs",
                                           "models": {"b": {"path": "bert", "masked": True}}}})  # fmt: skip
    assert json.loads(bt.settings_json(quirky))["reference_quirks"] is True
    assert bt.score_options(quirky, "b").endswith("--masked-scorer crows-pairs")
    assert (
        bt.reference_option(config, "ext/reference/RESOURCE.json")
        == "--reference-dir ext/reference/biastestgpt"
    )
    assert settings["released"]["runs"] == [1, 2, 3, 4, 5]
    # the model argument and the key errors name: biastest.models, else (empty) the score stage's models
    assert bt.model_arg(config, "b", []) == "bert" and bt.model_key(config, "b") == "biastest.models.b"
    shared = validate_config({"score": {"models": {"s": {"path": "org/m", "revision": "r"}}}})
    assert bt.model_arg(shared, "s", []) == "org/m"  # the revision goes in --revision (score_options)
    assert bt.model_key(shared, "s") == "score.models.s"
    # the outputs check validates the stage's tables against its own schemas (not the UnStereoEval pair table)
    from pathlib import Path

    from unstereo.biastest.schemas import PAIRS, SCORES
    from unstereo.workflow.outputs_check import schema_of

    assert schema_of(Path("results/biastest/Math/pairs.parquet")) is PAIRS
    assert schema_of(Path("results/biastest/tiny/Math/scores.parquet")) is SCORES
    assert schema_of(Path("results/benchmarks/USE-5/pairs.parquet")).name == "pairs"


def answer(body, index):
    prompt = body["messages"][-1]["content"]
    if prompt.startswith("Rewrite"):
        return Reply("unused")
    group, attribute = re.search(r'target term "([^"]+)" and attribute term "([^"]+)"', prompt).groups()
    return Reply(f"1. {group.capitalize()} gave a {attribute} to mary .")


@pytest.mark.slow
def test_snakemake_runs_the_biastest_rules(tmp_path, repo_dir, reference_dir):
    ref = reference_dir / "biastestgpt"
    if not ref.is_dir():
        pytest.skip(f"no biastestgpt reference data under {reference_dir}")
    tok = word_tokenizer()
    gpt = tmp_path / "tiny-gpt2"
    tiny_gpt2(len(tok)).save_pretrained(gpt)
    tok.save_pretrained(gpt)
    bert = tmp_path / "tiny-bert"
    model, btok = tiny_bert(tmp_path)
    model.save_pretrained(bert)
    btok.save_pretrained(bert)
    (tmp_path / "toy.yaml").write_text(yaml.safe_dump({
        "name": "toy", "social_groups": {"F": ["she", "her"], "M": ["he", "his"]},
        "attributes": {"X": ["book", "dog"], "Y": ["race", "city"]}, "templates": ["[T] gave a [A] ."]}))  # fmt: skip
    with ScriptedServer(answer) as server:
        config = {
            "resources": [], "reference_mirror": None,
            "biastest": {
                "enabled": True, "specs": [str(tmp_path / "toy.yaml"), "Math_Arts_vs_Male_Female"],
                "reference_dir": str(ref), "released": {"runs": [1]}, "max_pairs_per_spec": 3,
                "per_spec": {"Math_Arts_vs_Male_Female": {"released": {"runs": [2]}}},
                "models": {"tiny": {"path": str(gpt)}, "bert": {"path": str(bert), "masked": True}},
                "device": "cpu", "threads": 1, "bootstrap": {"rounds": 5},
                "generate": {"specs": ["toy"], "model": {"endpoint": server.base_url, "name": "m", "api_key_env": None},
                             "t": 1, "max_tries": 2},
            },
        }  # fmt: skip
        for stage in ("corpus", "vocabulary", "benchmarks", "generate", "score", "metrics", "report"):
            config[stage] = {"enabled": False}
        (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
        snakemake = shutil.which("snakemake", path=os.path.dirname(sys.executable)) or "snakemake"
        env = {**os.environ, "PYTHONPATH": str(repo_dir / "src"),
               "PATH": os.path.dirname(sys.executable) + ":" + os.environ["PATH"]}  # fmt: skip
        cmd = [snakemake, "-s", str(repo_dir / "Snakefile"), "-d", str(tmp_path), "--configfile",
               str(tmp_path / "config.yaml"), "--cores", "2", "--quiet", "rules"]  # fmt: skip
        res = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = tmp_path / "results" / "biastest"
    gens = pd.read_parquet(out / "toy" / "generations.parquet")
    assert len(gens) == 4 and gens.kept.all() and set(gens.pairing) == {"rule"}  # 4 attribute terms, t = 1
    toy = pd.read_parquet(out / "toy" / "pairs.parquet")
    assert toy.source.value_counts().to_dict() == {  # every source sub-sampled to max_pairs_per_spec = 3
        "generated": 3,
        "template": 3,
    }
    math = pd.read_parquet(out / "Math_Arts_vs_Male_Female" / "pairs.parquet")
    assert math.source.value_counts().to_dict() == {"released": 3, "template": 3}
    # its per_spec entry: run 2 instead of the section's run 1 (the section's cap kept)
    assert set(math[math.source == "released"].pair_id.str.split(":").str[3]) == {"2"}
    for model in ("tiny", "bert"):
        for spec, pairs in (("toy", toy), ("Math_Arts_vs_Male_Female", math)):
            scores = pd.read_parquet(out / model / spec / "scores.parquet")
            assert list(scores.pair_id) == list(pairs.pair_id)
    assert set(pd.read_parquet(out / "bert" / "toy" / "scores.parquet").score_kind) == {"masked-biastestgpt"}
    summary = pd.read_parquet(out / "summary.parquet")
    whole = summary[summary.attribute == "*"]
    assert len(whole) == 2 * 4 and whole.stereotype_score.between(0, 100).all()
    assert dict(zip(summary.model, summary.scorer, strict=True)) == {
        "tiny": "causal-mean",
        "bert": "masked-biastestgpt",
    }
    table = (out / "summary.html").read_text()
    assert "Convention: released pairs are scored on the released full sentences" in table
    assert "fewer than 20 pairs" in table  # 3 pairs per specification and source
    comparison = pd.read_parquet(out / "comparison.parquet")
    assert set(comparison.source) == {"generated", "released"} and len(comparison) == 4
    for name in ("page.html", "summary.html", "stereotype_score.png", "sentences.parquet"):
        assert (out / name).stat().st_size > 0
