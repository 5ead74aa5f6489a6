"""Atomic file output: every stage writes to a temporary file and renames it into place.

A killed job therefore never leaves a half-written output that Snakemake or a rerun would take for finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any


@contextlib.contextmanager
def atomic_path(path: str | Path, suffix: str | None = None) -> Iterator[Path]:
    """Yield a temporary path next to ``path``; rename it onto ``path`` only if the block succeeds.

    The temporary file keeps ``path``'s suffix (or ``suffix``) so writers that infer the format from it work.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=suffix or "".join(path.suffixes), dir=path.parent
    )
    os.close(fd)
    tmp_path = Path(tmp)
    try:
        yield tmp_path
        if tmp_path.exists():
            # mkstemp creates 0600 files; give the output the permissions a plain open() would (0666 - umask).
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp_path, 0o666 & ~umask)
        os.replace(tmp_path, path)
    finally:
        if tmp_path.exists():
            tmp_path.unlink()


def write_text(path: str | Path, text: str) -> Path:
    """Write ``text`` to ``path`` atomically (UTF-8)."""
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return Path(path)


def write_json(path: str | Path, obj: Any) -> Path:
    """Write ``obj`` as indented, key-sorted JSON atomically."""
    return write_text(path, json.dumps(obj, indent=2, sort_keys=True, default=str) + "\n")


def open_sqlite(path: Path | None, statements: Iterable[str]):
    """A SQLite connection for an on-disk cache shared by parallel jobs (``path=None``: in memory): WAL journal,
    60 s busy timeout, usable from several threads (callers hold their own lock), ``statements`` (the schema) run
    once. Used by the LLM cache and the score cache."""
    import sqlite3
    import time

    if path is not None:
        path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(":memory:" if path is None else str(path), check_same_thread=False, timeout=60)
    if path is not None:
        # Switching a new file to WAL while another job does the same can fail at once with "database is locked"
        # (SQLite does not call the busy handler there): retry within the same 60 s the busy timeout allows.
        deadline = time.monotonic() + 60
        while True:
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
        conn.execute("PRAGMA synchronous=NORMAL")
    for statement in statements:
        conn.execute(statement)
    conn.commit()
    return conn


def sha256_file(path: str | Path) -> str:
    """sha256 of a file's bytes, read in 1 MiB blocks."""
    import hashlib

    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()
