"""Helpers for ``rules/score.smk``: the rule's inputs, model argument and options from the ``score`` config section.

Kept here (not in the rules file) so that they are unit-tested and the rules file stays declarative.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

from ..model_spec import SPEC_KEYS, ModelSpec, resolve_model


def model_pattern(score: dict[str, Any]) -> str:
    """Wildcard constraint for ``{model}``: exactly the configured short names."""
    return "|".join(re.escape(name) for name in score["models"]) or "no-model-configured"


def model_entry(score: dict[str, Any], name: str) -> dict[str, Any]:
    """The config entry of model ``name``."""
    return score["models"][name]


def inputs(score: dict[str, Any], name: str, pairs: str, manifest: Callable[[str], str]) -> dict[str, str]:
    """``pairs`` and, for a model from an offline resource, that resource's manifest (``manifest(resource)``)."""
    entry = model_entry(score, name)
    out = {"pairs": pairs}
    if entry.get("resource"):
        out["manifest"] = manifest(entry["resource"])
    return out


def model_spec(score: dict[str, Any], name: str, external_dir: str | Path | None = None) -> ModelSpec:
    """The model spec of entry ``name`` (its per-model options left out); errors name ``score.models.<name>``."""
    entry = {k: v for k, v in model_entry(score, name).items() if k in SPEC_KEYS}
    return resolve_model(entry, external_dir, key=f"score.models.{name}")


def model_arg(score: dict[str, Any], name: str, manifest: str | None) -> str:
    """MODEL argument of ``unstereo score``: the model's command-line form (a resource as the file or folder beside
    its ``manifest``), without the revision, which :func:`options` passes as ``--revision``."""
    external_dir = Path(manifest).parent.parent if manifest else None
    return replace(model_spec(score, name, external_dir), revision=None).to_arg()


def cache_option(score: dict[str, Any], default_path: str) -> str:
    """``--cache PATH`` or ``--no-cache`` from ``score.cache`` (null/true: ``default_path``; false: no cache)."""
    cache = score.get("cache")
    if cache is False:
        return "--no-cache"
    path = default_path if cache in (None, True) else str(cache)
    return f"--cache {shlex.quote(path)}"


def options(score: dict[str, Any], name: str) -> str:
    """Options of ``unstereo score`` from the section (per-model entries override the stage's values)."""
    entry = model_entry(score, name)
    opts: dict[str, Any] = {
        "--batch-size": entry.get("batch_size", score["batch_size"]),
        "--dtype": entry.get("dtype", score["dtype"]),
        "--device": score["device"],
        "--chunk-size": score["chunk_size"],
        "--bos-policy": score["bos_policy"],
    }
    if score.get("max_batch_size"):
        opts["--max-batch-size"] = score["max_batch_size"]
    if entry.get("revision"):
        opts["--revision"] = entry["revision"]
    flags = ["--reference-quirks" if score["reference_quirks"] else "--no-reference-quirks"]
    if entry.get("masked"):
        flags.append("--masked")
    return " ".join([*(f"{k} {v}" for k, v in opts.items()), *flags])


def resource(score: dict[str, Any], name: str, key: str) -> int:
    """A scheduler resource (``mem_mb``, ``runtime``) of model ``name``: its own value, else the stage's."""
    return int(model_entry(score, name).get(key, score[key]))


def gpus(score: dict[str, Any]) -> int:
    """GPUs per job: 1 when the section asks for a CUDA device, else 0."""
    return 1 if str(score["device"]).startswith("cuda") else 0
