"""Helpers for ``src/unstereo/robustness/rules.smk`` (unit-tested here so the rules file stays
declarative)."""

from __future__ import annotations

import shlex
from typing import Any

from unstereo.errors import ConfigError
from unstereo.robustness.build import ORIGINAL, RELEASE_PREFIX, construction_dir

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
    """The configured constructions, ``original`` first (always built: the reference and the sub-samples' pool)."""
    return [ORIGINAL, *(c for c in section["constructions"] if c != ORIGINAL)]


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


def construct_options(section: dict[str, Any], names: list[str]) -> str:
    """``--construction NAME`` for each of ``names``, ``--adjective A`` for the adj_* constructions, ``--synonyms
    FILE`` for synonyms."""
    opts = [f"--construction {shlex.quote(n)}" for n in names]
    if any("adj" in n.split("_") for n in names) and section.get("adjectives"):
        opts += [f"--adjective {shlex.quote(a)}" for a in section["adjectives"]]
    if "synonyms" in names and section.get("synonyms"):
        opts.append(f"--synonyms {shlex.quote(str(section['synonyms']))}")
    return " ".join(opts)


def metrics_options(section: dict[str, Any], seed: int) -> str:
    """Options of ``unstereo robustness metrics`` from the section (``seed``: the section's, or the derived one)."""
    opts = [f"--eta {e}" for e in section["etas"]]
    opts += [f"--fraction {f}" for f in section["fractions"]]
    opts += [f"--trials {section['trials']}", f"--seed {seed}", f"--metric {section['metric']}"]
    return " ".join(opts)
