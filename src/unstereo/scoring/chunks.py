"""Resumable scoring of a pair table: scores are written in chunks, then assembled into one SCORES table.

``out = results/scores/{model}/{benchmark}.parquet`` is built through ``{benchmark}.chunks/``:
- ``RUN.json``: a fingerprint of everything the scores depend on (model id, revision, GGUF file, scorer kind, dtype,
  bos policy, reference_quirks, chunk size, and a hash of the pair ids and the sentences to score);
- ``NNNN.parquet``: scores of pairs ``[N * chunk_size, (N + 1) * chunk_size)`` in table order, with the run metadata.
A killed job leaves its finished chunks (each written atomically); the next run with the same fingerprint skips them
and scores the rest. A different fingerprint (another model, dtype, input ...) discards the old chunks. Device and
batch size are not in the fingerprint (the scores do not depend on them beyond float rounding); they are recorded
per row, so a resumed run on other hardware stays visible. When the final table is written the chunks are removed.

Which strings are scored: by default the pair table's ``sentence_female`` / ``sentence_male`` as they are (the
benchmarks stage filled them with :func:`unstereo.templates.fill_template`; user tables may carry sentences that are
not template fillings). With ``reference_quirks=True`` both sentences are re-filled from ``template`` with the
reference code's ``.strip().capitalize()`` and quote removal (SPEC 1.4 quirk 1), the strings the released scores
were computed on.
"""

from __future__ import annotations

import hashlib
import json
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from ..errors import InputError
from ..io import write_json
from ..log import get_logger
from ..tables import PAIRS, SCORES, read_table, validate, write_table
from ..templates import fill_template

log = get_logger("scoring")

CHUNK_COLUMNS = ["pair_id", "logp_female", "logp_male", "ntok_female", "ntok_male"]


class Scorer(Protocol):
    kind: str

    def score(self, sentences: list[str]) -> list[tuple[float, int]]: ...

    def metadata(self) -> dict[str, Any]: ...


def package_versions() -> dict[str, str]:
    """Versions of the packages that determine the scores."""
    import torch
    import transformers

    from .. import __version__

    return {
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "unstereo_version": __version__,
    }


def sentences_to_score(
    pairs: pd.DataFrame, reference_quirks: bool = False, source: Any = None
) -> tuple[list, list]:
    """The female and male strings to score for each pair (see the module doc); empty strings are an InputError."""
    if reference_quirks:
        female = [fill_template(t, "female", reference_quirks=True) for t in pairs["template"]]
        male = [fill_template(t, "male", reference_quirks=True) for t in pairs["template"]]
    else:
        female, male = list(pairs["sentence_female"]), list(pairs["sentence_male"])
    for row, (f, m) in enumerate(zip(female, male, strict=True)):
        if not str(f).strip() or not str(m).strip():
            raise InputError(
                f"row {row} (pair_id {pairs['pair_id'].iloc[row]!r}): empty sentence to score", path=source
            )
    return female, male


def chunk_dir_for(out: str | Path) -> Path:
    """``results/scores/m/USE-5.parquet`` -> ``results/scores/m/USE-5.chunks``."""
    out = Path(out)
    return out.with_name(out.name.removesuffix(".parquet") + ".chunks")


def fingerprint(run: dict[str, Any], pair_ids: list[str], female: list[str], male: list[str]) -> str:
    """sha256 over the run description and the exact inputs."""
    h = hashlib.sha256(json.dumps(run, sort_keys=True, default=str).encode())
    for p, f, m in zip(pair_ids, female, male, strict=True):
        h.update(f"{p}\x1f{f}\x1f{m}\x1e".encode())
    return h.hexdigest()


def score_pairs(
    pairs: pd.DataFrame,
    make_scorer: Callable[[], Scorer],
    out: str | Path,
    *,
    model_name: str,
    run: dict[str, Any],
    chunk_size: int = 500,
    reference_quirks: bool = False,
    source: Any = None,
) -> pd.DataFrame:
    """Score every pair of ``pairs`` in resumable chunks and write the SCORES table ``out``; return it.

    ``make_scorer`` is called only if some chunk is left to score (a finished run does not load the model again).
    ``run`` describes the model (model_id, model_revision, gguf_file, dtype, bos_policy, scorer ...); it enters the
    fingerprint and the output columns.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {chunk_size}")
    pairs = validate(pairs.reset_index(drop=True), PAIRS, source=source)
    female, male = sentences_to_score(pairs, reference_quirks, source)
    pair_ids = [str(p) for p in pairs["pair_id"]]
    run = {**run, "reference_quirks": bool(reference_quirks), "chunk_size": int(chunk_size)}
    fp = fingerprint(run, pair_ids, female, male)
    chunk_dir = chunk_dir_for(out)
    _prepare_chunk_dir(chunk_dir, fp, run)

    n_chunks = (len(pairs) + chunk_size - 1) // chunk_size
    scorer: Scorer | None = None
    versions = package_versions()
    parts = []
    for k in range(n_chunks):
        lo, hi = k * chunk_size, min(len(pairs), (k + 1) * chunk_size)
        path = chunk_dir / f"{k:04d}.parquet"
        done = _read_chunk(path, pair_ids[lo:hi])
        if done is None:
            if scorer is None:
                scorer = make_scorer()
            log.info("chunk %d/%d: scoring pairs %d-%d", k + 1, n_chunks, lo, hi - 1)
            scores = scorer.score(female[lo:hi] + male[lo:hi])
            n = hi - lo
            done = pd.DataFrame(
                {
                    "pair_id": pair_ids[lo:hi],
                    "logp_female": [s for s, _ in scores[:n]],
                    "logp_male": [s for s, _ in scores[n:]],
                    "ntok_female": [c for _, c in scores[:n]],
                    "ntok_male": [c for _, c in scores[n:]],
                }
            )
            for key, value in {**scorer.metadata(), **versions}.items():
                done[key] = value
            write_table(done, path)
        else:
            log.info("chunk %d/%d: already scored, skipped", k + 1, n_chunks)
        parts.append(done)

    scores = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=CHUNK_COLUMNS)
    scores.insert(1, "model", model_name)
    if "benchmark" in pairs.columns:
        scores.insert(2, "benchmark", list(pairs["benchmark"]))
    for key, value in run.items():
        if key not in scores.columns:
            scores[key] = value
    scores = scores.astype({"ntok_female": "int64", "ntok_male": "int64"})
    write_table(scores, out, SCORES)
    shutil.rmtree(chunk_dir, ignore_errors=True)
    return scores


def _prepare_chunk_dir(chunk_dir: Path, fp: str, run: dict[str, Any]) -> None:
    """Keep the chunks of an interrupted run with the same fingerprint; discard anything else."""
    marker = chunk_dir / "RUN.json"
    if chunk_dir.exists():
        try:
            old = json.loads(marker.read_text())["fingerprint"]
        except (OSError, ValueError, KeyError):
            old = None
        if old == fp:
            n = len(list(chunk_dir.glob("[0-9]*.parquet")))
            log.info("resuming from %s (%d finished chunk(s))", chunk_dir, n)
            return
        log.warning(
            "discarding chunks in %s: they belong to another run (model, dtype or input changed)", chunk_dir
        )
        shutil.rmtree(chunk_dir)
    chunk_dir.mkdir(parents=True, exist_ok=True)
    write_json(marker, {"fingerprint": fp, "run": run})


def _read_chunk(path: Path, expected_ids: list[str]) -> pd.DataFrame | None:
    """A finished chunk, or None when it is missing, unreadable or for other pairs."""
    if not path.exists():
        return None
    try:
        df = read_table(path)
    except InputError as exc:
        log.warning("ignoring unreadable chunk %s: %s", path, exc)
        return None
    if list(df.get("pair_id", [])) != expected_ids or not set(CHUNK_COLUMNS) <= set(df.columns):
        log.warning("ignoring chunk %s: it holds other pairs", path)
        return None
    return df
