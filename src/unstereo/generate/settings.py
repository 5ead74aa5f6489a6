"""The ``generate`` config section: validation with defaults against schemas/generate.schema.yaml."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import yaml

from .. import config
from ..errors import ConfigError


def load_section(
    section: dict[str, Any] | None = None, schema_dir: str | Path | None = None
) -> dict[str, Any]:
    """Validate a ``generate`` section (a copy) and fill in every default; errors name ``generate.<key>``."""
    return config.load_section("generate", section, schema_dir)


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
