"""Resource registry, fetching with manifests, and verification (see the package docstring for the list)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from unstereo.defaults import RESOURCE_MANIFEST
from unstereo.errors import ChecksumError, ResourceError
from unstereo.io import file_lock, sha256_file, write_json
from unstereo.log import get_logger
from unstereo.resources.builders import RESOURCES, Resource

__all__ = [
    "MANIFEST",
    "RESOURCES",
    "Resource",
    "fetch",
    "is_complete",
    "resource_dir",
    "sha256_file",
    "verify",
]

log = get_logger("resources")

MANIFEST = RESOURCE_MANIFEST


def resource_dir(name: str, external_dir: str | Path) -> Path:
    """Directory of resource ``name`` under ``external_dir``."""
    if name not in RESOURCES:
        raise ResourceError(f"unknown resource {name!r}; known: {sorted(RESOURCES)}")
    return Path(external_dir) / name


def _manifest(target: Path) -> dict | None:
    path = target / MANIFEST
    if not path.exists():
        return None
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError:
        return None


def is_complete(name: str, external_dir: str | Path) -> bool:
    """Cheap check: the manifest exists and every listed file exists with its recorded size."""
    target = resource_dir(name, external_dir)
    manifest = _manifest(target)
    if manifest is None or manifest.get("version", "") != RESOURCES[name].version:
        return False
    return all(
        (target / rel).is_file() and (target / rel).stat().st_size == meta["size"]
        for rel, meta in manifest["files"].items()
    )


def verify(name: str, external_dir: str | Path) -> None:
    """Recompute every checksum; raise ResourceError on a missing file or a mismatch (pinned or recorded)."""
    target = resource_dir(name, external_dir)
    manifest = _manifest(target)
    if manifest is None:
        raise ResourceError(f"resource {name!r} is not fetched (no {target / MANIFEST})")
    expected = {rel: meta["sha256"] for rel, meta in manifest["files"].items()}
    expected.update(RESOURCES[name].pinned)
    for rel, sha in expected.items():
        path = target / rel
        if not path.is_file():
            raise ResourceError(f"resource {name!r}: file missing: {path}")
        actual = sha256_file(path)
        if actual != sha:
            raise ChecksumError(
                f"resource {name!r}: checksum mismatch for {path}: expected {sha}, got {actual}"
            )


def fetch(
    name: str,
    external_dir: str | Path,
    mirror: str | Path | None = None,
    force: bool = False,
    origin: str | None = None,
) -> Path:
    """Obtain resource ``name`` into ``external_dir/<name>`` and return that directory.

    ``mirror`` (reference data only) is a local copy to prefer; when it does not exist the data is downloaded from
    ``origin`` (default: ``$UNSTEREO_REFERENCE_ORIGIN``, else the public origin; see ``download.reference_origin``).

    Idempotent: a complete resource is left alone (unless ``force``). The new files are built in a temporary
    sibling directory and moved into place only when complete and checksummed, so an interrupted fetch leaves
    nothing half-done behind.
    """
    res = RESOURCES.get(name)
    if res is None:
        raise ResourceError(f"unknown resource {name!r}; known: {sorted(RESOURCES)}")
    target = resource_dir(name, external_dir)
    if not force and is_complete(name, external_dir):
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    # One fetch of a resource at a time (parallel test workers, a user's second shell): without it the later of two
    # fetches replaced the folder the earlier one had finished, and with it whatever was made inside meanwhile (a
    # GGUF file's conversion link), under a process reading it. The second waits, then finds it complete.
    with file_lock(target.with_name(f".{name}")):
        if not force and is_complete(name, external_dir):
            return target
        return _build(name, res, target, mirror, origin)


def _build(name: str, res: Resource, target: Path, mirror: str | Path | None, origin: str | None) -> Path:
    """Build resource ``name`` in a temporary sibling of ``target``, checksum it, move it into place."""
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        log.info("fetching resource %s into %s", name, target)
        res.build(tmp, {"mirror": Path(mirror) if mirror else None, "origin": origin})
        files = {}
        for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
            rel = path.relative_to(tmp).as_posix()
            files[rel] = {"sha256": sha256_file(path), "size": path.stat().st_size}
        for rel, sha in res.pinned.items():
            got = files.get(rel, {}).get("sha256")
            if got != sha:
                raise ChecksumError(
                    f"resource {name!r}: checksum mismatch for {rel}: expected {sha}, got {got or 'no such file'}"
                )
        write_json(tmp / MANIFEST, {"name": name, "version": res.version, "files": files})
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return target
