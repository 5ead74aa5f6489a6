"""Helpers for ``src/unstereo/unstereoeval/score/rules.smk``: the model argument and options from the
``score`` config section (the model's input, wildcard constraint, threads and resources come from
:mod:`unstereo.workflow.rules`).

Kept here (not in the rules file) so that they are unit-tested and the rules file stays declarative.
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from typing import Any

import unstereo.workflow.rules as model_rules


def model_arg(score: dict[str, Any], name: str, manifests: str | Sequence[str] | None) -> str:
    """MODEL argument of ``unstereo score`` (and ``unstereo robustness score``, ``unstereo biastest score``) for model
    ``name`` of ``score["models"]``: :func:`unstereo.workflow.rules.model_arg` without the revision, which
    :func:`options` passes as ``--revision``; ``manifests``: the rule's model input."""
    return model_rules.model_arg(
        score["models"][name], manifests, f"score.models.{name}", revision=False, api_key=False
    )


def cache_option(score: dict[str, Any], default_path: str) -> str:
    """``--cache PATH`` or ``--no-cache`` from ``score.cache`` (null/true: ``default_path``; false: no cache)."""
    cache = score.get("cache")
    if cache is False:
        return "--no-cache"
    path = default_path if cache in (None, True) else str(cache)
    return f"--cache {shlex.quote(path)}"


def settings(score: dict[str, Any], name: str) -> str:
    """``--settings`` of ``unstereo score`` (and ``unstereo robustness score``) for model ``name``: the section as
    JSON, the model entry's own options overriding the stage's (:func:`unstereo.workflow.rules.settings_json`). The
    rules pass it and no option flag beside it; :func:`options` is the same as flags, for a person at a terminal."""
    return model_rules.settings_json(score, entry=score["models"][name])


def options(score: dict[str, Any], name: str) -> str:
    """Options of ``unstereo score`` from the section (per-model entries override the stage's values): the flags
    a person types for what :func:`settings` passes."""
    entry = score["models"][name]
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
