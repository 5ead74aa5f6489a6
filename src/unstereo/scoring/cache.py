"""Content-addressed score cache: (model fingerprint, scorer settings, text) -> (ln p, scored tokens).

One SQLite file shared by every benchmark, construction and rerun: a text already scored under the same model and
settings costs no forward pass, whichever table, chunk or job asked for it first. It sits on the text-level scoring
path (:mod:`.texts`): :class:`CachedScorer` wraps a scorer factory, answers the cached texts of a list and passes only
the others on to the real scorer, which is loaded the first time a text is missing (a fully cached table loads no
model).

The key of a model (:func:`model_key`) is a SHA-256 over
- the scoring settings of the run description (:data:`KEY_SETTINGS`: model id, revision, GGUF file, scorer kind,
  dtype, requested BOS policy),
- the weights' content where the model is local (:func:`weights_fingerprint`): a GGUF file's sha256 (from its
  resource manifest when it lists the file) and the version of the GGUF conversion
  (:data:`unstereo.models.gguf_convert.CONVERSION_VERSION`: a new conversion, e.g. a repaired tokenizer, misses); for a
  folder, size plus hash of the first and last MiB of each weight, config and tokenizer file (an edited or
  re-downloaded file misses),
- the versions of torch and transformers, and :data:`CACHE_VERSION` (bumped when the scorer's definition changes).

Device and batch size are not in the key: the project's scorer gives a sentence the same score whatever its batch
(docs/methods.md#quirk-3-batch-dependent-scores), and the chunked map's fingerprint leaves them out for the
same reason. A hub id without a pinned revision is keyed by its id; pin ``revision`` to make the key follow
the weights.

Concurrent Snakemake jobs share the file: each process has its own connection in WAL mode with a 60 s busy timeout,
and rows are only ever inserted (``INSERT OR IGNORE``), so two jobs scoring the same text keep the first score. Keep
the file on a local disk (SQLite's locking is unreliable on some network file systems).
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from unstereo.io import open_sqlite
from unstereo.log import get_logger

log = get_logger("scoring")

#: Bump when the scorer's definition of (logp, ntok) changes, so older cached scores miss.
CACHE_VERSION = 1
#: Keys of the run description (:func:`unstereo.scoring.registry.scorer_for`) that decide a score.
KEY_SETTINGS = ("model_id", "model_revision", "gguf_file", "scorer", "dtype", "bos_policy_requested")
#: Environment variable naming the cache file when the command line gives none.
ENV_VAR = "UNSTEREO_SCORE_CACHE"
#: Default file name (beside the output of ``unstereo score`` when neither option nor variable names one).
DEFAULT_NAME = "score-cache.sqlite"

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS scores (
        model_key TEXT NOT NULL, text_key TEXT NOT NULL, logp REAL NOT NULL, ntok INTEGER NOT NULL,
        text TEXT NOT NULL, PRIMARY KEY (model_key, text_key)) WITHOUT ROWID""",
    """CREATE TABLE IF NOT EXISTS models (
        model_key TEXT PRIMARY KEY, description TEXT NOT NULL, metadata TEXT NOT NULL, created REAL NOT NULL)""",
)
_WEIGHT_SUFFIXES = (".gguf", ".safetensors", ".bin", ".pt", ".json", ".model", ".txt")
_EDGE = 1 << 20  # bytes hashed at each end of a weight file
_QUERY_BATCH = 500  # texts per SELECT ... IN (...)


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def text_key(text: str) -> str:
    """The content address of a text (SHA-256 of its UTF-8 bytes)."""
    return _sha(text.encode("utf-8"))


def file_fingerprint(path: Path) -> str:
    """Size plus SHA-256 of the first and last MiB of ``path`` (whole-file hashing of a 500 MB GGUF costs seconds
    at every job; any re-quantisation or re-download changes the size or the edges)."""
    size = path.stat().st_size
    h = hashlib.sha256(str(size).encode())
    with path.open("rb") as f:
        h.update(f.read(_EDGE))
        if size > 2 * _EDGE:
            f.seek(size - _EDGE)
            h.update(f.read(_EDGE))
    return h.hexdigest()


def weights_fingerprint(model_id: str | None, gguf_file: str | None) -> str | None:
    """Content fingerprint of a local model (the GGUF file with its conversion version, or the weight/config/tokenizer
    files of a folder); None when ``model_id`` is not a local path (a hub id)."""
    if not model_id:
        return None
    root = Path(model_id)
    if gguf_file:
        from unstereo.models.gguf_convert import CONVERSION_VERSION, gguf_sha256

        file = root / gguf_file
        # the file's sha256 (from its resource manifest when listed) and the conversion that turns it into weights
        return f"{gguf_sha256(file)}:conversion-v{CONVERSION_VERSION}" if file.is_file() else None
    if root.is_file():
        return file_fingerprint(root)
    if not root.is_dir():
        return None
    files = sorted(p for p in root.iterdir() if p.is_file() and p.suffix in _WEIGHT_SUFFIXES)
    return _sha(json.dumps([[p.name, file_fingerprint(p)] for p in files]).encode())


def model_description(run: Mapping[str, Any], versions: Mapping[str, str] | None = None) -> dict[str, Any]:
    """What :func:`model_key` hashes: the settings of ``run``, the weights' fingerprint and the versions."""
    if not run.get("model_id"):
        raise ValueError("a score cache needs the run description's model_id")
    if versions is None:
        import torch
        import transformers

        versions = {"torch_version": torch.__version__, "transformers_version": transformers.__version__}
    return {
        **{k: run.get(k) for k in KEY_SETTINGS},
        "weights": weights_fingerprint(run.get("model_id"), run.get("gguf_file")),
        **{k: versions[k] for k in ("torch_version", "transformers_version") if k in versions},
        "cache_version": CACHE_VERSION,
    }


def model_key(description: Mapping[str, Any]) -> str:
    """SHA-256 of a :func:`model_description`."""
    return _sha(json.dumps(dict(description), sort_keys=True, default=str).encode())


class ScoreCache:
    """The cache file (``path=None``: in memory, for tests and one-offs). Thread-safe within a process."""

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._conn = open_sqlite(self.path, _SCHEMA)

    def get_many(self, key: str, texts: Iterable[str]) -> dict[str, tuple[float, int]]:
        """The cached (logp, ntok) of those of ``texts`` scored under model ``key``."""
        by_key = {text_key(t): t for t in texts}
        found: dict[str, tuple[float, int]] = {}
        addresses = list(by_key)
        with self._lock:
            for lo in range(0, len(addresses), _QUERY_BATCH):
                part = addresses[lo : lo + _QUERY_BATCH]
                rows = self._conn.execute(
                    f"SELECT text_key, logp, ntok FROM scores WHERE model_key = ? "
                    f"AND text_key IN ({','.join('?' * len(part))})",
                    [key, *part],
                ).fetchall()
                for address, logp, ntok in rows:
                    found[by_key[address]] = (float(logp), int(ntok))
        return found

    def put_many(
        self,
        key: str,
        scores: Mapping[str, tuple[float, int]],
        description: Mapping[str, Any],
        metadata: Mapping[str, Any],
    ) -> None:
        """Store ``scores`` (text -> (logp, ntok)) under model ``key``; the first score of a text is kept, and the
        first description/metadata of a model (the run that computed its first scores)."""
        rows = [(key, text_key(t), float(lp), int(n), t) for t, (lp, n) in scores.items()]
        with self._lock:
            self._conn.execute(
                "INSERT OR IGNORE INTO models VALUES (?, ?, ?, ?)",
                (
                    key,
                    json.dumps(dict(description), default=str),
                    json.dumps(dict(metadata), default=str),
                    time.time(),
                ),
            )
            self._conn.executemany("INSERT OR IGNORE INTO scores VALUES (?, ?, ?, ?, ?)", rows)
            self._conn.commit()

    def metadata(self, key: str) -> dict[str, Any] | None:
        """Run metadata of the scorer that first filled model ``key`` (None if the cache has no score of it)."""
        with self._lock:
            row = self._conn.execute("SELECT metadata FROM models WHERE model_key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def count(self, key: str | None = None) -> int:
        """Number of cached scores (of model ``key``, or in all)."""
        with self._lock:
            if key is None:
                return int(self._conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0])
            return int(
                self._conn.execute("SELECT COUNT(*) FROM scores WHERE model_key = ?", (key,)).fetchone()[0]
            )

    def close(self) -> None:
        with self._lock:
            self._conn.close()


class CachedScorer:
    """A :class:`~unstereo.scoring.texts.Scorer` that answers cached texts and passes the rest to the scorer
    ``make_scorer()`` builds, loaded on the first miss. ``hits`` / ``misses`` count texts (``misses`` = texts the
    real scorer ran on: its forward passes, one per text)."""

    def __init__(
        self,
        make_scorer: Callable[[], Any],
        cache: ScoreCache,
        run: Mapping[str, Any],
        versions: Mapping[str, str] | None = None,
    ):
        self._make = make_scorer
        self._inner: Any = None
        self.cache = cache
        self.description = model_description(run, versions)
        self.key = model_key(self.description)
        self.kind = str(run.get("scorer", "causal"))
        self.hits = 0
        self.misses = 0

    @property
    def inner(self) -> Any:
        """The real scorer (loaded now if it was not)."""
        if self._inner is None:
            self._inner = self._make()
            self.kind = getattr(self._inner, "kind", self.kind)
        return self._inner

    def score(self, sentences: list[str]) -> list[tuple[float, int]]:
        found = self.cache.get_many(self.key, sentences)
        missing = list(dict.fromkeys(t for t in sentences if t not in found))
        if missing:
            scored = dict(zip(missing, self.inner.score(missing), strict=True))
            self.cache.put_many(self.key, scored, self.description, self.inner.metadata())
            found.update(scored)
        self.hits += len(sentences) - len(missing)
        self.misses += len(missing)
        return [found[t] for t in sentences]

    def release(self) -> None:
        """Let the real scorer (its model) go; the next miss loads it again. A job that needs the memory for its next
        model (the generate stage's judge after the naturalness scorer) calls this."""
        self._inner = None

    def metadata(self) -> dict[str, Any]:
        """The real scorer's metadata when it ran; else that of the run that filled the cache."""
        if self._inner is not None:
            return self._inner.metadata()
        return self.cache.metadata(self.key) or {"scorer": self.kind}


def resolve_cache_path(option: str | None, out: str | Path) -> Path:
    """The cache file of a command: ``option``, else ``$UNSTEREO_SCORE_CACHE``, else :data:`DEFAULT_NAME` beside
    ``out``."""
    chosen = option or os.environ.get(ENV_VAR)
    return Path(chosen) if chosen else Path(out).parent / DEFAULT_NAME
