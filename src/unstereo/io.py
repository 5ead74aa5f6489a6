"""Atomic file output: every stage writes to a temporary file and renames it into place.

A killed job therefore never leaves a half-written output that Snakemake or a rerun would take for finished.
"""

from __future__ import annotations

import contextlib
import json
import os
import tempfile
from collections.abc import Iterable, Iterator, Mapping, Sequence
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


def set_aside(path: str | Path, reason: str, dest: str | Path | None = None) -> Path:
    """Rename damaged derived data (a cache file, a chunk, a conversion folder) to ``<name>.damaged-<UTC time>``
    beside it (``<dest>.damaged-<UTC time>`` when ``dest`` is given: a chunk leaves its folder, which is removed
    once the table is done), never deleting it, and log a warning naming both paths and ``reason``; return the new
    path.

    Derived data is rebuilt from its inputs, so a run goes on from a clean state; the damaged copy stays for
    inspection (remove it by hand once read). Two processes setting the same path aside: the second finds it gone
    and does nothing (the caller rebuilds either way)."""
    import time

    path = Path(path)
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    base = Path(dest) if dest is not None else path
    target = base.with_name(f"{base.name}.damaged-{stamp}")
    n = 1
    while target.exists():
        n += 1
        target = base.with_name(f"{base.name}.damaged-{stamp}-{n}")
    try:
        os.replace(path, target)
    except FileNotFoundError:
        return target
    _log().warning("%s is damaged (%s): set aside as %s; it is rebuilt from its inputs", path, reason, target)
    return target


def _log():
    from unstereo.log import get_logger

    return get_logger("io")


def schema_tables(statements: Iterable[str]) -> dict[str, list[str]]:
    """The tables (name -> columns, in order) that the schema ``statements`` create, as SQLite itself reads them
    (run on an empty in-memory database), so a cache declares its columns once, in its CREATE statements."""
    import sqlite3

    conn = sqlite3.connect(":memory:")
    try:
        for statement in statements:
            conn.execute(statement)
        names = [r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")]
        return {n: [r[1] for r in conn.execute(f"PRAGMA table_info({n})")] for n in names}
    finally:
        conn.close()


def sqlite_damage(path: Path, tables: Mapping[str, Sequence[str]] | None = None) -> str | None:
    """Why the SQLite file ``path`` is unusable as a cache, or None when it is sound: not a database (random bytes,
    cut short), a failed ``PRAGMA quick_check`` (SQLite's check of every page, index and record without the
    cross-checks of ``integrity_check``: linear in the file's size), or one of ``tables`` (name -> its columns,
    :func:`schema_tables`) present with other columns (a file of another program or version). An empty file is a
    sound new database."""
    import sqlite3

    if path.stat().st_size == 0:
        return None
    try:
        conn = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, timeout=60)  # '?', '#' quoted
    except sqlite3.Error as exc:
        return f"cannot open it: {exc}"
    try:
        rows = conn.execute("PRAGMA quick_check").fetchall()
        if [r[0] for r in rows] != ["ok"]:
            return "SQLite's quick_check: " + "; ".join(str(r[0]) for r in rows[:3])
        for table, columns in (tables or {}).items():
            have = [r[1] for r in conn.execute(f"PRAGMA table_info({table})").fetchall()]
            if have and have != list(columns):
                return f"its table {table!r} has columns {have}, not {list(columns)}"
    except sqlite3.DatabaseError as exc:
        return str(exc)
    finally:
        conn.close()
    return None


@contextlib.contextmanager
def file_lock(path: Path) -> Iterator[None]:
    """An exclusive ``flock`` on ``<path>.lock``: one process at a time checks (and sets aside, or builds) a shared
    file or folder. The lock file stays (deleting it would let two processes lock two different files)."""
    import fcntl

    with open(path.with_name(path.name + ".lock"), "a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def open_sqlite(path: Path | None, statements: Sequence[str]):
    """A SQLite connection for an on-disk cache shared by parallel jobs (``path=None``: in memory): WAL journal,
    60 s busy timeout, usable from several threads (callers hold their own lock), ``statements`` (the schema) run
    once. Used by the LLM cache and the score cache.

    A cache is derived data: an existing file that fails :func:`sqlite_damage` (random bytes, cut short, a failed
    ``PRAGMA quick_check``, a table of the schema with other columns) is set aside (:func:`set_aside`, with its ``-wal`` and
    ``-shm`` files) with a warning and a new, empty cache takes its place. The check runs under an exclusive lock
    on ``<path>.lock`` so that parallel jobs opening the same damaged file set it aside once."""
    import sqlite3
    import time

    if path is not None:
        if path.is_dir():  # a folder is nobody's damaged cache: never set aside
            from unstereo.errors import InputError

            raise InputError("is a folder; give a cache file (SQLite)", path=path)
        path.parent.mkdir(parents=True, exist_ok=True)
        with file_lock(path):
            why = sqlite_damage(path, schema_tables(statements)) if path.exists() else None
            if why is not None:
                aside = set_aside(path, why)
                for side in ("-wal", "-shm"):  # SQLite's journal files go with the file they belong to
                    extra = path.with_name(path.name + side)
                    if extra.exists():
                        os.replace(extra, aside.with_name(aside.name + side))
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


#: The environment variable that names the machine-wide cache (:func:`cache_root`).
CACHE_ENV = "UNSTEREO_CACHE_DIR"


def cache_root() -> Path:
    """The machine-wide cache of converted models and passed probes (``$UNSTEREO_CACHE_DIR`` or the user's cache
    folder)."""
    if os.environ.get(CACHE_ENV):
        return Path(os.environ[CACHE_ENV])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "unstereo"
