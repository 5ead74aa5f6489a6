"""The ``sentiment`` config section: validated with every default filled in
(src/unstereo/sentiment/sentiment.schema.yaml), and the ``resource:NAME[/FILE]`` paths it may hold."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from unstereo import config
from unstereo.models.spec import RESOURCE_PREFIX, external_dir_default


def load_section(section: dict[str, Any] | None = None) -> dict[str, Any]:
    """A copy of a ``sentiment`` section, validated, defaults filled in; errors name ``sentiment.<key>``."""
    return config.load_section("sentiment", section)


def resource_path(text: str, external_dir: str | Path | None = None) -> Path:
    """``resource:NAME[/FILE]`` -> ``{external_dir}/NAME[/FILE]``; any other string is a path as is."""
    if text.startswith(RESOURCE_PREFIX):
        folder = Path(external_dir) if external_dir is not None else external_dir_default()
        return folder / text[len(RESOURCE_PREFIX) :]
    return Path(text)


def resource_name(text: str) -> str | None:
    """The resource a ``resource:NAME[/FILE]`` string names (None for a plain path)."""
    if not text.startswith(RESOURCE_PREFIX):
        return None
    return text[len(RESOURCE_PREFIX) :].split("/", 1)[0]
