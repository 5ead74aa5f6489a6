"""Helpers for ``src/unstereo/unstereoeval/benchmarks/rules.smk``: the inputs and CLI arguments of a
configured benchmark source.

Kept here (not in the Snakefile) so that the rules stay declarative and the logic is testable.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from unstereo.unstereoeval.eta import unique_labels


def eta_names(benchmarks_cfg: dict[str, Any]) -> list[str]:
    """The configured etas as file names write them (:func:`unstereo.unstereoeval.eta.eta_label`: inf, 1.0, 0.8, 0.65), once each."""
    return unique_labels(benchmarks_cfg.get("etas", []))


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


def source_inputs(source: dict[str, Any], resource_manifest: Callable[[str], str]) -> dict[str, Any]:
    """Rule inputs of a source: the resource manifest when the files live in a resource, else the files."""
    if source.get("resource"):
        return {"manifest": resource_manifest(source["resource"])}
    return {"src": _as_list(source["path"]) + ([source["raw"]] if source.get("raw") else [])}


def source_paths(benchmarks_cfg: dict[str, Any], name: str, manifest: str | None = None) -> str:
    """The files of benchmark source ``name`` as ``unstereo benchmarks build`` takes them: its paths, and
    ``--raw FILE`` where the source names one (the command reads the rest of the source from ``--settings``).

    ``manifest`` is the resource manifest (rule input) when the source lives in a resource: paths are relative to
    its folder.
    """
    source = benchmarks_cfg["sources"][name]
    base = Path(manifest).parent if source.get("resource") and manifest else None

    def where(path: str) -> str:
        return str(base / path) if base is not None else path

    args = [where(p) for p in _as_list(source["path"])]
    if source.get("raw"):
        args.append(f"--raw {where(source['raw'])}")
    return " ".join(args)


def delta_choice(benchmarks_cfg: dict[str, Any], source: dict[str, Any]) -> str:
    """The `delta:` of one benchmark source (corpus, released or a path), else the stage's (default released)."""
    return source.get("delta") or benchmarks_cfg.get("delta", "released")
