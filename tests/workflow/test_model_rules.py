"""The rule layer of every model-running rule (unstereo.workflow.rules) on hand-made config sections. That each such rule
requests a GPU with `device: cuda` is checked on the real workflow in tests/workflow/test_slurm_profile.py."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

import unstereo.workflow.rules as model_rules
from unstereo.errors import ConfigError
from unstereo.models.spec import ModelSpec

MANIFEST = "E/{}/RESOURCE.json".format


def test_model_pattern_matches_exactly_the_names():
    pattern = model_rules.model_pattern({"py.70m": {}, "smol": {}})
    assert pattern == r"py\.70m|smol"
    assert re.fullmatch(pattern, "py.70m") and re.fullmatch(pattern, "smol")
    assert not re.fullmatch(pattern, "pyx70m")  # the dot is escaped
    assert model_rules.model_pattern(["a"]) == "a"
    assert model_rules.model_pattern({}) == model_rules.NO_MODEL


def test_model_spec_drops_per_model_options():
    # a score.models entry carries scheduling/batching keys beside the spec keys
    entry = {"path": "org/m", "revision": "r1", "batch_size": 4, "mem_mb": 9, "masked": False}
    assert model_rules.model_spec(entry) == ModelSpec(path="org/m", revision="r1")
    assert model_rules.model_spec("resource:smollm2/F.gguf", "E") == ModelSpec(
        path="E/smollm2", gguf_file="F.gguf", resource="smollm2"
    )
    with pytest.raises(ConfigError, match="x.models.m"):
        model_rules.model_spec({"batch_size": 4}, key="x.models.m")  # no path/resource/endpoint left


def test_model_inputs_are_the_resource_manifests():
    assert model_rules.model_inputs({"resource": "smollm2", "gguf_file": "F.gguf"}, MANIFEST) == [
        "E/smollm2/RESOURCE.json"
    ]
    assert model_rules.model_inputs("resource:gemma3/g.gguf", MANIFEST) == ["E/gemma3/RESOURCE.json"]
    # a hub id, a folder and an endpoint need no fetched resource (the manifest function is never called)
    never = lambda name: 1 / 0  # noqa: E731
    assert model_rules.model_inputs({"path": "org/m", "batch_size": 2}, never) == []
    assert model_rules.model_inputs("some/folder", never) == []
    assert model_rules.model_inputs({"endpoint": "http://h/v1", "name": "m"}, never) == []


def test_model_arg():
    smol = {"resource": "smollm2", "gguf_file": "F.gguf"}
    # the resource is the file beside the manifest the rule got as input (list or single path)
    assert model_rules.model_arg(smol, ["E/smollm2/RESOURCE.json"]) == "E/smollm2/F.gguf"
    assert model_rules.model_arg(smol, "X/smollm2/RESOURCE.json") == "X/smollm2/F.gguf"
    hub = {"path": "org/m", "revision": "r1", "dtype": "float32"}
    assert model_rules.model_arg(hub, []) == "org/m@r1"
    assert model_rules.model_arg(hub, [], revision=False) == "org/m"
    assert model_rules.model_arg({"path": "my models/m"}, None) == "'my models/m'"  # shell-quoted
    keyed = {"endpoint": "http://h/v1/", "name": "m", "api_key_env": "MY_KEY"}
    # `#` starts a shell comment, hence the quotes
    assert model_rules.model_arg(keyed, []) == "'endpoint:http://h/v1#m' --api-key-env MY_KEY"
    assert model_rules.model_arg(keyed, [], api_key=False) == "'endpoint:http://h/v1#m'"
    keyless = {"endpoint": "http://h/v1", "name": "m", "api_key_env": None}
    assert model_rules.model_arg(keyless, []) == "'endpoint:http://h/v1#m'"
    with pytest.raises(ConfigError, match="fairpair.models.bad"):
        model_rules.model_arg({"path": "x", "resource": "y"}, [], "fairpair.models.bad")


def test_seeds():
    # (global * 1_000_003 + sum of the stage name's code points) mod (2**31 - 1); ord("a") + ord("b") = 195
    assert model_rules.stage_seed(0, "ab") == 195
    assert model_rules.stage_seed(1, "a") == 1_000_003 + 97
    assert model_rules.stage_seed(2**31, "") == 1_000_003  # 2**31 = 1 mod 2**31 - 1
    assert model_rules.seed({"seed": 5}, "ab", 0) == 5  # the section's own seed wins
    assert model_rules.seed({"seed": 0}, "ab", 7) == 0  # also when it is 0
    assert model_rules.seed({"seed": None}, "ab", 0) == 195
    assert model_rules.seed({}, "a", 1) == 1_000_100


def test_threads_and_gpu():
    assert model_rules.threads({"threads": 4}) == 4
    assert model_rules.threads({}) == 1 and model_rules.threads({}, default=2) == 2
    assert model_rules.gpu("cuda") == {"gpu": 1} and model_rules.gpu("cuda:1") == {"gpu": 1}
    assert model_rules.gpu("auto") == {} and model_rules.gpu("cpu") == {} and model_rules.gpu("mps") == {}
    assert model_rules.gpu(None) == {}


def test_scheduler_value_entry_then_section_then_default():
    assert model_rules.scheduler_value({"mem_mb": 100}, "mem_mb", 5, {"mem_mb": 999}) == 999
    assert model_rules.scheduler_value({"mem_mb": 100}, "mem_mb", 5, {"path": "x"}) == 100
    assert model_rules.scheduler_value({}, "mem_mb", 5, "org/m") == 5  # a string entry has no options
    assert model_rules.scheduler_value({"runtime": None}, "runtime", 7) == 7


def test_job_resources():
    models = {"big": {"path": "x", "mem_mb": 999}, "small": {"path": "y"}, "s": "org/m"}
    section = {"device": "cuda", "mem_mb": 100, "models": models}
    res = model_rules.job_resources(section, mem_mb=8000, runtime=60, models=models)
    assert res["gpu"] == 1 and set(res) == {"gpu", "mem_mb", "runtime"}
    assert res["mem_mb"](SimpleNamespace(model="big")) == 999  # the entry's own
    assert res["mem_mb"](SimpleNamespace(model="small")) == 100  # the section's
    assert res["mem_mb"](SimpleNamespace(model="s")) == 100
    assert res["runtime"](SimpleNamespace(model="big")) == 60  # the rule's default
    # another wildcard name (biastest's {bt_model}); without `models` the job's wildcards do not matter
    bt = model_rules.job_resources({}, mem_mb=8000, runtime=240, models=models, wildcard="bt_model")
    assert bt["mem_mb"](SimpleNamespace(bt_model="big")) == 999 and "gpu" not in bt
    plain = model_rules.job_resources({"device": "auto"}, mem_mb=8000, runtime=1440)
    assert plain["mem_mb"](SimpleNamespace(model="big")) == 8000 and "gpu" not in plain
    # a device other than the section's (biastest.generate.device)
    assert model_rules.job_resources({"device": "cpu"}, mem_mb=1, runtime=1, device="cuda:0")["gpu"] == 1
    assert "gpu" not in model_rules.job_resources({"device": "cuda"}, mem_mb=1, runtime=1, device="cpu")


# ------------------------------------------------------------------------------------------------ the long pole
def _config(**generate):
    """A hand-made config: the generate stage with a GGUF generator, a naturalness model and a judge; the vocabulary
    on the corpus delta; two corpus inputs, one of them a resource's file."""
    gen = {
        "enabled": True,
        "seed_words": None,
        "model": {"resource": "big", "gguf_file": "b.gguf"},
        "naturalness": {
            "model": "resource:small/s.gguf",
            "min_token_logprob": -3.0,
            "judge": {"model": {"resource": "big", "gguf_file": "b.gguf"}},
        },  # fmt: skip
    }
    gen.update(generate)
    return {
        "generate": gen,
        "vocabulary": {"delta": "corpus"},
        "corpus": {"inputs": ["resource:demo/a.jsonl", "local/b.txt"]},
    }


def test_the_long_pole_is_generation_and_every_job_it_waits_for():
    # generate_use reads the seed words (vocabulary_seeds <- vocabulary_english <- the corpus delta <- merge <-
    # counts) and three models of two resources; the vocabulary reads lid176 and WordNet, the counts demo's file
    config = _config()
    assert model_rules.long_pole_rules(config) == {"generate_use", "vocabulary_english", "vocabulary_seeds",
                                                   "corpus_count", "corpus_merge", "corpus_delta"}  # fmt: skip
    assert model_rules.long_pole_resources(config) == {"big", "small", "lid176", "wordnet", "demo"}
    assert model_rules.priority(config, "generate_use") == model_rules.LONG_POLE_PRIORITY > 0
    assert model_rules.priority(config, "corpus_merge") == model_rules.LONG_POLE_PRIORITY
    assert model_rules.priority(config, "fetch_resource", "big") == model_rules.LONG_POLE_PRIORITY
    assert model_rules.priority(config, "fetch_resource", "reference") == 0
    assert model_rules.priority(config, "score") == 0 and model_rules.priority(config, "corpus_appendix") == 0


def test_the_long_pole_follows_the_config():
    # the released delta instead of the corpus's: its import and the reference data, no corpus rule
    released = _config() | {"vocabulary": {"delta": "released"}}
    assert "released_delta" in model_rules.long_pole_rules(released)
    assert "corpus_count" not in model_rules.long_pole_rules(released)
    assert model_rules.long_pole_resources(released) == {"big", "small", "lid176", "wordnet", "reference"}
    # seed words from a file: generation alone; the naturalness filter off: its model is not read
    own = _config(seed_words="words.csv", naturalness={"model": "resource:small/s.gguf", "min_token_logprob": None,
                                                       "judge": None})  # fmt: skip
    assert model_rules.long_pole_rules(own) == {"generate_use"}
    assert model_rules.long_pole_resources(own) == {"big"}
    # generation off: no long pole, every priority 0
    off = _config(enabled=False)
    assert model_rules.long_pole_rules(off) == set() and model_rules.long_pole_resources(off) == set()
    assert model_rules.priority(off, "generate_use") == 0
