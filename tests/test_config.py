"""Config validation: defaults filled, wrong types and unknown keys reported with the key's name."""

from __future__ import annotations

import pytest
import yaml

from unstereo.config import load_config, validate_config
from unstereo.errors import ConfigError


def test_defaults_are_filled():
    cfg = validate_config({})
    assert cfg["seed"] == 0
    assert cfg["results_dir"] == "results"
    assert cfg["resources"] == []
    # nested stage sections get their own defaults through the $ref'd schema files
    assert cfg["corpus"]["enabled"] is False


def test_wrong_type_names_the_key():
    with pytest.raises(ConfigError, match=r"config key 'seed'.*not of type 'integer'"):
        validate_config({"seed": "zero"})


def test_unknown_top_level_key_is_named():
    with pytest.raises(ConfigError, match=r"config key 'sede'.*unknown key"):
        validate_config({"sede": 1})


def test_unknown_nested_key_is_named():
    with pytest.raises(ConfigError, match=r"config key 'corpus.windw'"):
        validate_config({"corpus": {"windw": 3}})


def test_enum_violation_is_named():
    with pytest.raises(ConfigError, match=r"config key 'resources.0'"):
        validate_config({"resources": ["no-such-resource"]})


def test_load_config_names_the_file(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump({"seed": [1]}))
    with pytest.raises(ConfigError, match=r"bad.yaml: config key 'seed'"):
        load_config(path)


def test_invalid_yaml_is_reported(tmp_path):
    path = tmp_path / "broken.yaml"
    path.write_text("seed: [1\n")
    with pytest.raises(ConfigError, match="not valid YAML"):
        load_config(path)


@pytest.mark.parametrize(
    "name", ["config/config.yaml", "config/paper.yaml", ".test/config.yaml", ".test/config-methods.yaml"]
)
def test_shipped_configs_are_valid(repo_dir, name):
    load_config(repo_dir / name)
