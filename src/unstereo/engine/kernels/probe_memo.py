"""Probe verdicts remembered per machine.

The sampling engine (:meth:`unstereo.engine.engine.SamplingEngine.check`) and the causal scorer's fast paths
(:mod:`unstereo.scoring.causal`) are checked against the model's own forward pass on a probe before they are used:
0.5-1.2 s of a small model's process start on a 2-core CPU, paid again by every process (every Snakemake job) that
loads the same model. A verdict is stored under a digest of everything it depends on (:func:`digest`: the model's
class, name and configuration, its dtype and device, torch's and transformers' versions, the source of the modules
that run the fast path, the caller's settings) beside the converted models (``probes/<kind>/<digest>.json`` under
:func:`unstereo.io.cache_root`), and the next process that loads the model reads it back
(:func:`recall`) instead of probing. A change of any of those gives another digest, so a stale verdict is never read.
"""

from __future__ import annotations

import hashlib
import importlib
import inspect
import json
import os
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from unstereo.io import cache_root, set_aside
from unstereo.log import get_logger

log = get_logger("engine.kernels.probe_memo")


def digest(model: Any, modules: Iterable[str], extra: Iterable[Any] = ()) -> str:
    """Hex digest of ``model`` (class, ``name_or_path``, full configuration and attention implementation, the dtype
    and device of its first parameter), the installed torch and transformers, the source of ``modules`` and
    ``extra``."""
    import torch
    import transformers

    config = getattr(model, "config", None)
    param = next(iter(model.parameters()), None) if hasattr(model, "parameters") else None
    parts = [
        f"{type(model).__module__}.{type(model).__qualname__}",
        str(getattr(model, "name_or_path", "")),
        config.to_json_string(use_diff=False) if hasattr(config, "to_json_string") else repr(config),
        str(getattr(config, "_attn_implementation", None)),  # not in the JSON
        f"{getattr(param, 'dtype', None)} {getattr(param, 'device', None)}",
        torch.__version__,
        transformers.__version__,
        *(_source(name) for name in modules),
        *(repr(x) for x in extra),
    ]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def _source(module: str) -> str:
    """The source of ``module``; where it has none to read (bytecode only), its name and unstereo's version."""
    try:
        return inspect.getsource(importlib.import_module(module))
    except (OSError, TypeError):
        from unstereo import __version__

        return f"{module} {__version__}"


def _path(kind: str, key: str) -> Path:
    return cache_root() / "probes" / kind / f"{key}.json"


def recall(kind: str, key: str, fields: dict[str, type] | None = None) -> dict[str, Any] | None:
    """The verdict remembered for ``(kind, key)``, or None (none yet, or damaged).

    A verdict is derived data: a file that is not JSON (cut short, random bytes), not a JSON object, or whose
    ``fields`` (name -> type) are missing or of another type is set aside (renamed ``<digest>.json.damaged-<time>``,
    with a warning) and the caller probes again, as on a machine that never probed."""
    path = _path(kind, key)
    try:
        data = path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as exc:
        log.debug("cannot read the probe verdict %s: %s", path, exc)
        return None
    try:
        verdict = json.loads(data)
    except ValueError as exc:  # UnicodeDecodeError too
        verdict, why = None, f"not JSON: {exc}"
    else:
        why = None if isinstance(verdict, dict) else f"a JSON {type(verdict).__name__}, not an object"
        for name, typ in (fields or {}).items():
            if why is None and not (
                isinstance(verdict.get(name), typ)
                and not (typ is int and isinstance(verdict.get(name), bool))
            ):
                why = f"its {name!r} is {verdict.get(name)!r}, not {typ.__name__}"
    if why is not None:
        set_aside(path, why)
        return None
    return verdict


def remember(kind: str, key: str, verdict: dict[str, Any]) -> None:
    """Store ``verdict`` (JSON) for ``(kind, key)``, atomically; a cache that cannot be written is skipped
    (the next process probes again)."""
    path = _path(kind, key)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        tmp.write_text(json.dumps(verdict))
        os.replace(tmp, path)
    except OSError as exc:
        log.debug("cannot remember the probe verdict in %s: %s", path, exc)
