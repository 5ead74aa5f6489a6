"""Helpers for ``src/unstereo/robustness/rules.smk`` (unit-tested here so the rules file stays
declarative)."""

from __future__ import annotations

import shlex
from typing import Any

from unstereo.errors import ConfigError
from unstereo.robustness.build import RELEASE_PREFIX, construction_dir, with_original

#: Where the released Winogender constructions are inside the reference resource.
RELEASE_SUBDIR = "tail-wagging/winogender/data"


def models(section: dict[str, Any], score: dict[str, Any]) -> list[str]:
    """The models to score the constructions with: ``robustness.models`` (names of ``score.models``), else all."""
    names = list(section["models"]) or list(score["models"])
    unknown = [m for m in names if m not in score["models"]]
    if unknown:
        raise ConfigError(f"{unknown[0]!r} is not a model of score.models", key="robustness.models")
    return names


def constructions(section: dict[str, Any]) -> list[str]:
    """The configured constructions, ``original`` first (:func:`unstereo.robustness.build.with_original`)."""
    return with_original(section["constructions"])


def pair_paths(results_dir: str, benchmark: str, names: list[str]) -> list[str]:
    """The construction pair tables of one benchmark: ``{results_dir}/robustness/{benchmark}/{name}/pairs.parquet``."""
    return [f"{results_dir}/robustness/{benchmark}/{construction_dir(name)}/pairs.parquet" for name in names]


def uses_release(names: list[str]) -> bool:
    """Whether some construction is a released file (``release:FILE``): the reference resource is then an input."""
    return any(n.startswith(RELEASE_PREFIX) for n in names)


def release_option(manifests: list[str]) -> str:
    """``--release-dir`` inside the reference resource whose manifest is ``manifests[0]`` (none: empty)."""
    from pathlib import Path

    if not manifests:
        return ""
    return f"--release-dir {shlex.quote(str(Path(manifests[0]).parent / RELEASE_SUBDIR))}"
