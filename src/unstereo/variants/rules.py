"""Helpers for ``src/unstereo/variants/rules.smk``: inputs and arguments from the ``variants`` config section
(unit-tested here so that the rules file stays declarative; the model layer is :mod:`unstereo.workflow.rules`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from unstereo.sentiment.settings import resource_name
from unstereo.workflow.rules import model_inputs, settings_json


def text_inputs(section: dict[str, Any], manifest: Callable[[str], str]) -> list[str]:
    """The manifests of the offline resources the training text comes from (``resource:NAME/FILE`` entries)."""
    from unstereo.resources import RESOURCES

    names = [resource_name(p) for p in section["text"]]
    return sorted({manifest(n) for n in names if n and n in RESOURCES})


def train_inputs(section: dict[str, Any], name: str, manifest: Callable[[str], str]) -> dict[str, Any]:
    """The base model's resource (a list, empty for a hub id or folder) and the training text's resources."""
    base = section["models"][name]["base"]
    return {"model": model_inputs(base, manifest, f"variants.models.{name}.base"),
            "text": text_inputs(section, manifest)}  # fmt: skip


def perplexity_inputs(
    section: dict[str, Any], record: Callable[[str], str], manifest: Callable[[str], str]
) -> dict[str, Any]:
    """Every variant's record (``record(name)``), its base's resource and the training text's resources."""
    bases = sorted({m for name in section["models"] for m in train_inputs(section, name, manifest)["model"]})
    return {
        "variants": [record(n) for n in section["models"]],
        "models": bases,
        "text": text_inputs(section, manifest),
    }


def settings_arg(section: dict[str, Any], seed: int | None = None, name: str | None = None) -> str:
    """The section as the commands' ``--settings`` JSON, ``seed`` (the stage's, derived by the rule) folded in
    (:func:`unstereo.workflow.rules.settings_json`); with ``name``, its ``models`` cut to that variant's entry (what
    ``train`` reads), so that another variant's change does not rerun it."""
    if name is not None:
        section = {**section, "models": {name: section["models"][name]}}
    return settings_json(section, seed=seed, drop=())


def folders_arg(records: Iterable[str]) -> str:
    """The variants' folders (those of their records) as shell-quoted command-line arguments."""
    return " ".join(shlex.quote(str(Path(r).parent)) for r in records)
