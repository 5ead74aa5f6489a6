"""The ``generate`` config section: validation with defaults against generate/generate.schema.yaml."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import yaml

from ..config import _DefaultValidator, check, config_schema
from ..errors import ConfigError


def load_section(
    section: dict[str, Any] | None = None, schema_dir: str | Path | None = None
) -> dict[str, Any]:
    """Validate a ``generate`` section (a copy) and fill in every default; errors name ``generate.<key>``."""
    # the section's schema lives beside this module; the shared ones it $refs in schema_dir (the packaged ones)
    schema_path = Path(__file__).with_name("generate.schema.yaml")
    schema = yaml.safe_load(schema_path.read_text(encoding="utf-8"))
    data = copy.deepcopy(section or {})
    # every schema file it may $ref: the shared ones and the sections' (as config validation resolves them)
    validator = _DefaultValidator(schema, registry=config_schema(schema_dir)[1])
    return check(validator, data, prefix="generate")


def read_settings_arg(value: str | None) -> dict[str, Any]:
    """``--settings``: inline JSON, or a YAML/JSON file (a whole config with a ``generate`` key, or the section)."""
    if not value:
        return {}
    text = value
    path = Path(value)
    if not value.lstrip().startswith("{") and path.is_file():
        text = path.read_text(encoding="utf-8")
    try:
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError) as exc:
        raise ConfigError(f"--settings is neither JSON nor a readable YAML file: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError("--settings must be a mapping")
    if "generate" in data and isinstance(data["generate"], dict):
        data = data["generate"]
    return data
