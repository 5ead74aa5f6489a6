"""A resumable, fingerprinted, chunked map: input table -> chunk files -> final table.

:func:`chunked_map` applies ``fn`` to consecutive slices of ``chunk_size`` input rows and writes the final table
``out`` (e.g. ``results/scores/m/USE-5.parquet``) through a chunk folder beside it (``USE-5.chunks/``):

- ``RUN.json``: the fingerprint, a sha256 over the caller's run description (``fingerprint``: model, settings ...),
  the chunk size, the key column and every input row (column names and values);
- ``NNNN.parquet``: ``fn``'s output for input rows ``[N * chunk_size, (N + 1) * chunk_size)``, written atomically;
  its parquet metadata records the run fingerprint and a hash of the input keys the chunk covers.

A killed job leaves its finished chunks; the next call with the same fingerprint skips them and computes only the
rest. Another fingerprint (other model, settings or input rows) discards the old chunks with a warning. A chunk that
records another fingerprint or other input keys is computed again; one that cannot be read (cut short, random
bytes) is set aside (:func:`unstereo.io.set_aside`: ``USE-5.chunks-0003.parquet.damaged-<time>``, out of the folder)
and computed again, and a folder whose ``RUN.json`` cannot be read is set aside whole. Once every chunk is done their
concatenation (optionally passed through ``finalize``) is written atomically to ``out`` and the chunk folder is
removed. A call that fails before finishing any chunk leaves no chunk folder.

``fn`` may return any number of rows per input row (one score per text, n samples per prompt, none for a filtered
row), but each output row carries the ``key`` of the input row it came from, and only keys of its own chunk.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.errors import InputError
from unstereo.io import atomic_path, set_aside, write_json
from unstereo.log import get_logger, progress
from unstereo.tables import TableSchema, write_table

log = get_logger("chunked_map")

META_KEY = b"unstereo.chunk"  # parquet schema metadata of a chunk file: {"fingerprint": ..., "keys": ...}


def chunk_dir_for(out: str | Path) -> Path:
    """The chunk folder of a final table: ``results/scores/m/USE-5.parquet`` -> ``results/scores/m/USE-5.chunks``."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".parquet") + ".chunks")


def table_fingerprint(run: dict[str, Any], table: pd.DataFrame, chunk_size: int, key: str) -> str:
    """sha256 over the run description, chunk size, key column and every row of ``table`` (names and values)."""
    h = hashlib.sha256(
        json.dumps(
            {
                "run": run,
                "chunk_size": int(chunk_size),
                "key": key,
                "columns": [str(c) for c in table.columns],
            },
            sort_keys=True,
            default=str,
        ).encode()
    )
    for row in table.itertuples(index=False, name=None):
        h.update(json.dumps(row, default=str).encode())
        h.update(b"\x1e")
    return h.hexdigest()


def keys_hash(keys: Sequence[Any]) -> str:
    """sha256 of an ordered list of keys (what a chunk covers)."""
    return hashlib.sha256(json.dumps([str(k) for k in keys]).encode()).hexdigest()


def chunked_map(
    table: pd.DataFrame,
    fn: Callable[..., pd.DataFrame],
    out: str | Path,
    *,
    fingerprint: dict[str, Any],
    chunk_size: int,
    key: str,
    schema: TableSchema | None = None,
    setup: Callable[[], Any] | None = None,
    finalize: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    columns: Sequence[str] | None = None,
    desc: str = "chunks",
    past: str = "done",
    after_chunk: Callable[[int, int], None] | None = None,
    source: Any = None,
) -> pd.DataFrame:
    """Apply ``fn`` chunk by chunk to ``table``, resumably, and write the result to ``out``; return it.

    - ``fn(chunk)`` (or ``fn(chunk, state)`` when ``setup`` is given) maps a slice of input rows (index reset) to
      output rows, each with the ``key`` of its input row;
    - ``setup()`` is called once, lazily, before the first chunk that is left to compute (load a model only when
      there is work for it); its result is ``fn``'s ``state``;
    - ``fingerprint`` describes everything else the output depends on (model, settings); the input rows, chunk
      size and key are hashed in as well (see :func:`table_fingerprint`);
    - ``key`` names a column whose values identify the input rows (unique, non-null);
    - ``finalize`` turns the concatenated chunks into the final table (default: as they are); ``schema``
      validates the final table; ``columns`` are the chunk columns when there is no chunk (empty input);
    - ``desc`` names the work in progress bars and logs, ``past`` the finished state ("scored"): a skipped chunk
      logs ``chunk k/n: already <past>, skipped``;
    - ``after_chunk(k, n_chunks)`` runs after chunk ``k`` is written (a hook for tests: count, or raise to
      simulate a kill).
    """
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, int) or chunk_size < 1:
        raise ValueError(f"chunk size must be an integer >= 1, got {chunk_size!r}")
    if key not in table.columns:
        raise InputError(f"key column {key!r} missing; the table has {list(table.columns)}", path=source)
    table = table.reset_index(drop=True)
    keys = table[key]
    if keys.isna().any():
        raise InputError(
            f"key column {key!r} has missing values (row {int(keys.isna().argmax())})", path=source
        )
    dup = keys.duplicated()
    if dup.any():
        raise InputError(f"key column {key!r} repeats {keys[dup].iloc[0]!r}", path=source)

    fp = table_fingerprint(fingerprint, table, chunk_size, key)
    chunk_dir = chunk_dir_for(out)
    _prepare_chunk_dir(
        chunk_dir, fp, {"run": fingerprint, "chunk_size": chunk_size, "key": key, "n": len(table)}
    )
    try:
        n_chunks = (len(table) + chunk_size - 1) // chunk_size
        state: list[Any] = []  # [setup()] once set up
        parts = []
        for k in progress(range(n_chunks), desc=desc, total=n_chunks, unit="chunk"):
            chunk = table.iloc[k * chunk_size : (k + 1) * chunk_size].reset_index(drop=True)
            path = chunk_dir / f"{k:04d}.parquet"
            covered = keys_hash(list(chunk[key]))
            done = _read_chunk(path, fp, covered)
            if done is None:
                if setup is not None and not state:
                    state.append(setup())
                log.info(
                    "%s: chunk %d/%d, rows %d-%d",
                    desc,
                    k + 1,
                    n_chunks,
                    k * chunk_size,
                    k * chunk_size + len(chunk) - 1,
                )
                done = fn(chunk, state[0]) if setup is not None else fn(chunk)
                _check_output(done, chunk, key, k)
                _write_chunk(done, path, fp, covered)
                if after_chunk is not None:
                    after_chunk(k, n_chunks)
            else:
                log.info("chunk %d/%d: already %s, skipped", k + 1, n_chunks, past)
            parts.append(done)

        result = (
            pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=list(columns or [key]))
        )
        if finalize is not None:
            result = finalize(result)
        write_table(result, out, schema)
        shutil.rmtree(chunk_dir, ignore_errors=True)
        return result
    except BaseException:
        # a failure before any chunk was finished (a model that cannot be loaded, a bad input found by ``fn``)
        # leaves nothing worth resuming: no empty chunk folder beside the output
        if chunk_dir.is_dir() and not any(chunk_dir.glob("[0-9]*.parquet")):
            shutil.rmtree(chunk_dir, ignore_errors=True)
        raise


def _prepare_chunk_dir(chunk_dir: Path, fp: str, run: dict[str, Any]) -> None:
    """Keep the chunks of an interrupted run with the same fingerprint; discard anything else."""
    marker = chunk_dir / "RUN.json"
    if chunk_dir.exists():
        try:
            old = json.loads(marker.read_text())["fingerprint"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            # damaged (a RUN.json cut short, a folder that is a file): kept aside, never taken for another run's
            set_aside(chunk_dir, f"its {marker.name} is unreadable: {type(exc).__name__}: {exc}")
            old = None
        if old == fp:
            n = len(list(chunk_dir.glob("[0-9]*.parquet")))
            log.info("resuming from %s (%d finished chunk(s))", chunk_dir, n)
            return
        if old is not None:
            log.warning(
                "discarding chunks in %s: they belong to another run (model, settings or input changed)",
                chunk_dir,
            )
            shutil.rmtree(chunk_dir)
    chunk_dir.mkdir(parents=True, exist_ok=True)
    write_json(marker, {"fingerprint": fp, **run})


def _check_output(df: Any, chunk: pd.DataFrame, key: str, k: int) -> None:
    """``fn``'s output is a table whose rows carry keys of its own chunk (a bug in ``fn`` otherwise)."""
    if not isinstance(df, pd.DataFrame):
        raise TypeError(f"chunk {k}: the mapped function returned {type(df).__name__}, not a DataFrame")
    if key not in df.columns:
        raise ValueError(f"chunk {k}: the mapped function's output lacks the key column {key!r}")
    stray = set(df[key]) - set(chunk[key])
    if stray:
        raise ValueError(
            f"chunk {k}: the mapped function returned rows for keys not in its chunk: {sorted(map(str, stray))[:5]}"
        )


def _write_chunk(df: pd.DataFrame, path: Path, fp: str, covered: str) -> None:
    """Write one chunk atomically, with the fingerprint and the covered keys in its parquet metadata."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    arrow = pa.Table.from_pandas(df, preserve_index=False)
    meta = dict(arrow.schema.metadata or {})
    meta[META_KEY] = json.dumps({"fingerprint": fp, "keys": covered}).encode()
    with atomic_path(path) as tmp:
        pq.write_table(arrow.replace_schema_metadata(meta), tmp)


def _read_chunk(path: Path, fp: str, covered: str) -> pd.DataFrame | None:
    """A finished chunk, or None when it is missing, unreadable, or from another run or other input rows."""
    if not path.exists():
        return None
    import pyarrow.parquet as pq

    try:
        arrow = pq.read_table(path)
        meta = json.loads((arrow.schema.metadata or {})[META_KEY])
    except Exception as exc:  # noqa: BLE001 - any unreadable chunk is set aside and computed again
        # out of the chunk folder (removed once the table is done): USE-5.chunks-0003.parquet.damaged-<time>
        set_aside(
            path, f"unreadable chunk: {exc}", dest=path.parent.with_name(f"{path.parent.name}-{path.name}")
        )
        return None
    if meta != {"fingerprint": fp, "keys": covered}:
        log.warning("ignoring chunk %s: it holds other input rows", path)
        return None
    return arrow.to_pandas()
