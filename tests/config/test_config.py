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
    "name",
    [
        "config/config.yaml",
        "config/paper.yaml",
        "config/study.yaml",
        "config/study-hub.yaml",
        "config/study-variants.yaml",
        ".test/config.yaml",
        ".test/config-methods.yaml",
    ],
)
def test_shipped_configs_are_valid(repo_dir, name):
    load_config(repo_dir / name)


def test_load_section_is_one_public_reader_of_a_section():
    """config.load_section validates one section against its own schema file, fills defaults, names the key; the
    three stage readers (generate, sentiment, biastest) are that function."""
    import pytest

    from unstereo import config
    from unstereo.biastest.run import load_section as biastest_section
    from unstereo.errors import ConfigError
    from unstereo.sentiment.settings import load_section as sentiment_section
    from unstereo.unstereoeval.generate.settings import load_section as generate_section

    for name, reader in (("generate", generate_section), ("sentiment", sentiment_section),
                         ("biastest", biastest_section)):  # fmt: skip
        given: dict = {}
        filled = config.load_section(name, given)
        assert filled and given == {}  # a copy, defaults filled in
        assert reader({}) == filled
        with pytest.raises(ConfigError, match=rf"{name}\.no_such_key"):
            config.load_section(name, {"no_such_key": 1})
