"""unstereo.config.settings on a hand-made schema: the typed object (types, defaults, nested keys), the generated
flags, their precedence (flag > --settings > schema default) and the key a bad value is named by."""

from __future__ import annotations

import json

import click
import pytest
from click.testing import CliRunner

from unstereo.config.settings import NO_DEFAULT, Section, as_dict, section
from unstereo.errors import ConfigError

SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "$defs": {"pair": {"type": "array", "items": {"type": "string"}, "minItems": 2, "maxItems": 2}},
    "properties": {
        "n": {"type": "integer", "minimum": 2, "default": 100, "description": "samples per side"},
        "top_p": {"type": "number", "maximum": 1, "default": 0.9, "description": "nucleus mass"},
        "batch_size": {"type": ["integer", "string"], "pattern": "^auto$", "minimum": 1, "default": "auto"},
        "seed": {"type": ["integer", "null"], "default": None},
        "fast": {"type": "boolean", "default": True, "description": "go fast"},
        "mode": {"type": "string", "enum": ["a", "b"], "default": "a"},
        "folds": {"type": "array", "items": {"type": "integer"}, "default": []},
        "names": {"type": "array", "items": {"$ref": "#/$defs/pair"}, "default": [["John", "Jane"]]},
        "free": {"type": "string"},
        "models": {"type": "object", "default": {}, "additionalProperties": {"type": "string"}},
        "ngrams": {
            "type": "object",
            "additionalProperties": False,
            "default": {},
            "properties": {
                "max_n": {"type": "integer", "minimum": 1, "default": 4, "description": "longest n-gram"},
                "inner": {
                    "type": "object",
                    "additionalProperties": False,
                    "default": {},
                    "properties": {"groups": {"$ref": "#/$defs/pair", "default": ["m", "f"]}},
                },
            },
        },
    },
}


def test_the_settings_of_a_schema():
    s = Section("toy", SCHEMA)
    # every key, nested ones by dotted path; an object of free-named keys (models) is one setting
    assert list(s.settings) == ["n", "top_p", "batch_size", "seed", "fast", "mode", "folds", "names", "free",
                                "models", "ngrams", "ngrams.max_n", "ngrams.inner", "ngrams.inner.groups"]  # fmt: skip
    assert s.settings["ngrams"].nested and not s.settings["models"].nested
    assert s.settings["free"].default is NO_DEFAULT
    # the $ref'd pair is resolved (its items and bounds) under the key's own default
    assert s.settings["ngrams.inner.groups"].schema["maxItems"] == 2
    assert s.settings["ngrams.max_n"].flag == "--ngrams-max-n"


def test_the_object_has_the_schema_defaults_and_nested_objects():
    obj = Section("toy", SCHEMA).build({})
    # every default as written in SCHEMA above; `free` has none: None when the section leaves it out
    assert (obj.n, obj.top_p, obj.batch_size, obj.seed, obj.fast, obj.mode) == (
        100,
        0.9,
        "auto",
        None,
        True,
        "a",
    )
    assert obj.names == [["John", "Jane"]] and obj.folds == [] and obj.models == {} and obj.free is None
    assert obj.ngrams.max_n == 4 and obj.ngrams.inner.groups == ["m", "f"]
    with pytest.raises(AttributeError):
        obj.n = 3  # frozen
    assert as_dict(obj)["ngrams"] == {"max_n": 4, "inner": {"groups": ["m", "f"]}}
    assert Section("toy", SCHEMA).build({"free": "x"}).free == "x"


def test_a_bad_value_names_its_key():
    s = Section("toy", SCHEMA)
    with pytest.raises(ConfigError, match=r"config key 'toy\.ngrams\.max_n'"):
        s.build({"ngrams": {"max_n": 0}})
    with pytest.raises(ConfigError, match=r"config key 'toy\.top_p'"):
        s.build({}, {"top_p": 1.5})
    with pytest.raises(ConfigError, match=r"config key 'toy\.nope'"):
        s.build({}, {"nope": 1})
    with pytest.raises(ConfigError, match=r"config key 'toy\.models'"):
        s.option("models")  # an object: only in --settings


def _command(s: Section, *paths: str, required=()):
    seen = {}

    @click.command()
    @click.option("--threads", type=int, default=None)
    @s.command(*paths, required=required)
    def cmd(threads, settings):
        seen["threads"], seen["settings"] = threads, settings

    return cmd, seen


def _run(cmd, seen, args):
    result = CliRunner().invoke(cmd, args)
    assert result.exit_code == 0, result.output
    return seen["settings"]


def test_flag_over_section_over_schema_default():
    s = Section("toy", SCHEMA)
    cmd, seen = _command(s, "n", "top_p", "batch_size", "fast", "mode", "folds", "names", "ngrams.max_n",
                         "ngrams.inner.groups")  # fmt: skip
    section_json = json.dumps({"n": 5, "top_p": 0.5, "ngrams": {"max_n": 2}, "fast": False})
    # nothing given: the schema's defaults
    assert _run(cmd, seen, []).n == 100
    # the section: its values, the schema's for the rest
    obj = _run(cmd, seen, ["--settings", section_json])
    assert (obj.n, obj.top_p, obj.ngrams.max_n, obj.fast, obj.mode) == (5, 0.5, 2, False, "a")
    # a flag over the section (even at the schema's default value), the section's others kept
    obj = _run(cmd, seen, ["--settings", section_json, "--n", "100", "--ngrams-max-n", "3", "--fast"])
    assert (obj.n, obj.top_p, obj.ngrams.max_n, obj.fast) == (100, 0.5, 3, True)
    # typed from the schema: an integer or 'auto'; a repeated array flag; A:B pairs; an enum
    obj = _run(cmd, seen, ["--batch-size", "8", "--folds", "2", "--folds", "3", "--names", "Bob:Alice",
                           "--names", "A:B", "--ngrams-inner-groups", "x:y", "--mode", "b"])  # fmt: skip
    assert (obj.batch_size, obj.folds, obj.names) == (8, [2, 3], [["Bob", "Alice"], ["A", "B"]])
    assert (obj.ngrams.inner.groups, obj.mode) == (["x", "y"], "b")
    assert _run(cmd, seen, ["--batch-size", "auto"]).batch_size == "auto"
    assert seen["threads"] is None  # an ordinary option stays the command's own


def test_bad_flags_and_required_keys_are_usage_errors():
    s = Section("toy", SCHEMA)
    cmd, _ = _command(s, "n", "mode", "names", required=("n",))
    result = CliRunner().invoke(cmd, [])
    assert result.exit_code == 2 and "--n is required (or toy.n in --settings)" in result.output
    result = CliRunner().invoke(cmd, ["--n", "1"])  # below the schema's minimum 2
    assert result.exit_code == 2 and "--n: config key 'toy.n'" in result.output
    result = CliRunner().invoke(cmd, ["--settings", '{"n": 1}'])
    assert result.exit_code == 2 and "--settings: config key 'toy.n'" in result.output
    result = CliRunner().invoke(cmd, ["--n", "3", "--mode", "c"])
    assert result.exit_code == 2 and "'c' is not one of a, b" in result.output
    result = CliRunner().invoke(cmd, ["--n", "3", "--names", "John"])
    assert result.exit_code == 2 and "'John' is not A:B" in result.output
    result = CliRunner().invoke(cmd, ["--n", "x"])
    assert result.exit_code == 2 and "'x' is not of type integer" in result.output
    # the help is the schema's description and default
    help_text = CliRunner().invoke(cmd, ["--help"]).output
    assert "samples per side [default: the section's, else 100]" in help_text


def test_the_config_sections_build_with_their_schema_defaults():
    """Every section of the config builds from an empty mapping, with the defaults the config validation fills in."""
    from unstereo import method_registry
    from unstereo.config import validate_config

    config = validate_config({})
    for name in method_registry.config_sections():
        assert as_dict(section(name).build({})) == config[name], name


#: Another schema file's definitions, as the config's schema registry resolves them (``refs``): a value (the etas,
#: numbers >= 0 or inf) and an object (a model spec).
OTHER = {
    "other.yaml#/$defs/etas": {
        "type": "array",
        "items": {"anyOf": [{"type": "number", "minimum": 0}, {"type": "string", "enum": ["inf"]}]},
        "default": ["inf", 1.0],
    },
    "model.yaml": {"type": "object", "properties": {"path": {"type": "string"}}},
}
REFS_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "properties": {
        "etas": {"$ref": "other.yaml#/$defs/etas", "description": "bounds"},
        "model": {"$ref": "model.yaml", "default": {"path": "m"}},
    },
}


def test_a_value_defined_in_another_file_is_followed_an_object_is_not():
    s = Section("toy", REFS_SCHEMA, refs=OTHER.__getitem__)
    etas = s.settings["etas"]
    # the definition's type, items and default, under the key's own description
    assert (etas.schema["type"], etas.default, etas.description) == ("array", ["inf", 1.0], "bounds")
    # an object of another file stays one setting, its reference kept (no nested settings of its keys)
    assert s.settings["model"].schema["$ref"] == "model.yaml" and list(s.settings) == ["etas", "model"]
    # without `refs`, a reference to another file is a leaf
    assert "type" not in Section("toy", REFS_SCHEMA).settings["etas"].schema


def test_an_any_of_flag_takes_a_number_or_the_word_it_names():
    from unstereo.config import validate_section

    def validate(data):  # the definitions inlined: what the config's validator sees after resolving
        inlined = {**REFS_SCHEMA, "properties": {"etas": OTHER["other.yaml#/$defs/etas"]}}
        return validate_section("toy", inlined, data)

    s = Section("toy", REFS_SCHEMA, validate=validate, refs=OTHER.__getitem__)
    cmd, seen = _command(s, "etas")
    # `inf` stays the word (float() would read it as a number), `0.5` is a number; nothing given: the default
    assert _run(cmd, seen, ["--etas", "inf", "--etas", "0.5"]).etas == ["inf", 0.5]
    assert _run(cmd, seen, []).etas == ["inf", 1.0]
    result = CliRunner().invoke(cmd, ["--etas", "x"])
    assert result.exit_code == 2 and "'x' is not one of inf" in result.output
    # a bad item of a repeated flag names the flag (the schema names the item, toy.etas.1)
    result = CliRunner().invoke(cmd, ["--etas", "inf", "--etas", "-1"])
    assert result.exit_code == 2 and "--etas: config key 'toy.etas.1'" in result.output
