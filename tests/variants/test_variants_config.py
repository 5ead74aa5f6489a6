"""The variants section and variant model entries in the config: each intervention's strength checked by the schema,
an undeclared variant named by its key, and the rule layer: a rule that runs a variant waits for its record and gets
its folder as the model argument."""

from __future__ import annotations

import pytest

import unstereo.workflow.rules as model_rules
from unstereo.config import validate_config
from unstereo.errors import ConfigError
from unstereo.variants.rules import folders_arg, perplexity_inputs, settings_arg, train_inputs

BASE = {"resource": "smollm2", "gguf_file": "S.gguf"}


def config(**sections):
    return {"variants": {"models": {"v-cda": {"base": BASE, "intervention": "cda", "strength": 0.5},
                                    "v-control": {"base": BASE, "intervention": "control"}}}, **sections}  # fmt: skip


def test_defaults_and_strengths():
    cfg = validate_config(config())
    assert cfg["variants"]["models"]["v-control"]["strength"] is None and cfg["variants"]["steps"] == 200
    assert validate_config({})["variants"] == {
        **validate_config({})["variants"],
        "models": {},
        "enabled": False,
    }


@pytest.mark.parametrize(
    "entry, key",
    [
        ({"base": BASE, "intervention": "cda"}, "variants.models.v.strength"),  # CDA needs its share
        ({"base": BASE, "intervention": "cda", "strength": 1.5}, "variants.models.v.strength"),
        ({"base": BASE, "intervention": "control", "strength": 0.5}, "variants.models.v.strength"),
        ({"base": BASE, "intervention": "embedding"}, "variants.models.v.strength"),  # lambda needed
        ({"base": BASE, "intervention": "sentiment", "strength": -1}, "variants.models.v.strength"),
        ({"base": BASE, "intervention": "prune", "strength": 1}, "variants.models.v.intervention"),
        (
            {"base": {"variant": "w"}, "intervention": "cda", "strength": 0.5},
            "variants.models.v.base.variant",
        ),
        ({"intervention": "control"}, "variants.models.v.base"),
    ],
)
def test_bad_entries_name_the_key(entry, key):
    with pytest.raises(ConfigError, match=f"config key '{key}'"):
        validate_config({"variants": {"models": {"v": entry}}})


def test_an_undeclared_variant_is_named_by_its_key():
    cfg = validate_config(config(fairpair={"models": {"a": {"variant": "v-cda"}}}))
    assert cfg["fairpair"]["models"]["a"] == {"variant": "v-cda"}
    with pytest.raises(
        ConfigError, match="config key 'score.models.b.variant': no variant 'v-dpo'.*v-cda, v-control"
    ):
        validate_config(config(score={"models": {"b": {"variant": "v-dpo"}}}))
    with pytest.raises(ConfigError, match="config key 'generate.model': no variant 'nope'"):
        validate_config(config(generate={"model": "variant:nope"}))
    with pytest.raises(ConfigError, match="config key 'score.models.b.gguf_file'"):
        validate_config(config(score={"models": {"b": {"variant": "v-cda", "gguf_file": "x.gguf"}}}))


def test_rules_wait_for_the_variant_and_pass_its_folder():
    files = model_rules.ModelFiles("ext", "res/variants", ["v-cda"], "RESOURCE.json")
    assert files("smollm2") == "ext/smollm2/RESOURCE.json"
    inputs = model_rules.model_inputs({"variant": "v-cda"}, files, "score.models.a")
    assert inputs == ["res/variants/v-cda/variant.json"]
    assert model_rules.model_arg({"variant": "v-cda"}, inputs, "score.models.a") == "res/variants/v-cda"
    assert model_rules.model_inputs(BASE, files) == ["ext/smollm2/RESOURCE.json"]  # other models as before
    with pytest.raises(ConfigError, match="config key 'score.models.a.variant': no variant 'v-x'"):
        model_rules.model_inputs({"variant": "v-x"}, files, "score.models.a")
    with pytest.raises(ConfigError, match="rules only"):
        model_rules.model_inputs({"variant": "v-cda"}, lambda name: name, "m")


def test_the_stages_rule_helpers():
    section = validate_config(config())["variants"]
    files = model_rules.ModelFiles("ext", "res/variants", section["models"], "RESOURCE.json")
    assert train_inputs(section, "v-cda", files) == {"model": ["ext/smollm2/RESOURCE.json"],
                                                     "text": ["ext/demo-corpus/RESOURCE.json"]}  # fmt: skip
    assert perplexity_inputs(section, files.variant, files) == {
        "variants": ["res/variants/v-cda/variant.json", "res/variants/v-control/variant.json"],
        "models": ["ext/smollm2/RESOURCE.json"], "text": ["ext/demo-corpus/RESOURCE.json"]}  # fmt: skip
    assert folders_arg(["r/a b/variant.json", "r/c/variant.json"]) == "'r/a b' r/c"
    import json

    one = json.loads(settings_arg(section, seed=7, name="v-cda"))
    assert list(one["models"]) == ["v-cda"] and one["seed"] == 7
    assert list(json.loads(settings_arg(section))["models"]) == ["v-cda", "v-control"]
