"""The ``generate`` config section: validation with defaults against generate/generate.schema.yaml."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from unstereo import config


def load_section(
    section: dict[str, Any] | None = None, schema_dir: str | Path | None = None
) -> dict[str, Any]:
    """Validate a ``generate`` section (a copy) and fill in every default; errors name ``generate.<key>``."""
    return config.load_section("generate", section, schema_dir)
