"""One source for each default: the YAML schemas (which cannot import Python) agree with the Python constants."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import yaml

from unstereo.cli_options import parse_grid
from unstereo.defaults import DEFAULT_EPS, EPS_GRID, PAPER_BENCHMARKS, RESOURCE_MANIFEST, eps_grid_text
from unstereo.resources import RESOURCES
from unstereo.resources.core import MANIFEST
from unstereo.unstereoeval.eta import PAPER_ETAS, parse_etas
from unstereo.unstereoeval.metrics import default_eps_grid
from unstereo.unstereoeval.metrics.released import BENCHMARK_DIRS
from unstereo.unstereoeval.report.rules import PAPER_BENCHMARKS as RULES_PAPER_BENCHMARKS

SCHEMAS = Path(__file__).resolve().parents[1] / "workflow" / "schemas"


def _schema(name: str) -> dict:
    """A shared schema (workflow/schemas: config, common, model) or a config section's (in its method's folder)."""
    from unstereo import method_registry

    path = method_registry.config_sections().get(name, SCHEMAS / f"{name}.schema.yaml")
    return yaml.safe_load(path.read_text())


def _find(node, key: str) -> list:
    """Every ``properties[key]`` schema anywhere in ``node`` (without its description)."""
    found = []
    if isinstance(node, dict):
        props = node.get("properties")
        if isinstance(props, dict) and key in props:
            found.append({k: v for k, v in props[key].items() if k != "description"})
        for value in node.values():
            found += _find(value, key)
    elif isinstance(node, list):
        for value in node:
            found += _find(value, key)
    return found


def test_eta_default_is_the_papers_and_shared_by_both_stages():
    common = _schema("common")["$defs"]["etas"]
    assert parse_etas(common["default"]) == list(PAPER_ETAS)
    for stage in ("benchmarks", "metrics"):
        etas = _schema(stage)["properties"]["etas"]
        assert etas["$ref"] == "common.schema.yaml#/$defs/etas" and "default" not in etas
    # the commands' default (no flag, no --settings): the shared definition's, followed into common.schema.yaml
    from unstereo.config.settings import section

    for stage in ("benchmarks", "metrics"):
        assert parse_etas(section(stage).build({}).etas) == list(PAPER_ETAS)


def test_eps_and_grid_defaults():
    assert DEFAULT_EPS == math.log(1.65)
    props = _schema("metrics")["properties"]
    assert props["eps"]["default"] == DEFAULT_EPS
    grid = props["eps_grid"]["properties"]
    assert (grid["start"]["default"], grid["stop"]["default"], grid["num"]["default"]) == EPS_GRID
    assert np.array_equal(default_eps_grid(), np.linspace(0.0, 6.0, 101))
    assert np.array_equal(parse_grid(eps_grid_text()), default_eps_grid())
    assert eps_grid_text() == "0:6:101"


def test_paper_benchmarks():
    assert PAPER_BENCHMARKS == ("USE-5", "USE-10", "USE-20", "Winobias", "Winogender")
    assert tuple(BENCHMARK_DIRS) == PAPER_BENCHMARKS
    assert tuple(RULES_PAPER_BENCHMARKS) == PAPER_BENCHMARKS


def test_resource_names_and_manifest():
    common = _schema("common")["$defs"]
    assert common["resource"]["enum"] == list(RESOURCES)
    assert (
        _schema("config")["properties"]["resources"]["items"]["$ref"] == "common.schema.yaml#/$defs/resource"
    )
    # model resources: the ones whose pinned files include a GGUF model
    gguf = [name for name, r in RESOURCES.items() if any(p.endswith(".gguf") for p in r.pinned)]
    assert common["model_resource"]["enum"] == gguf == ["smollm2", "gemma3", "qwen-coder", "qwen-coder-1.5b"]
    # every model entry (score.models, generate.model, ...) is a model spec whose `resource` is that definition
    assert _find(_schema("model"), "resource") == [{"$ref": "common.schema.yaml#/$defs/model_resource"}]
    assert _find(_schema("score"), "resource") == _find(_schema("generate"), "resource") == []
    assert MANIFEST == RESOURCE_MANIFEST == "RESOURCE.json"


def test_config_defaults_follow_the_shared_definition():
    import pytest

    from unstereo.config import validate_config
    from unstereo.errors import ConfigError

    cfg = validate_config({})
    assert parse_etas(cfg["metrics"]["etas"]) == parse_etas(cfg["benchmarks"]["etas"]) == list(PAPER_ETAS)
    assert validate_config({"metrics": {"etas": [0, "inf"]}})["metrics"]["etas"] == [0, "inf"]  # 0 is valid
    with pytest.raises(ConfigError, match="benchmarks.etas.0"):
        validate_config({"benchmarks": {"etas": [-0.5]}})
    with pytest.raises(ConfigError, match="resources.0"):
        validate_config({"resources": ["nope"]})
