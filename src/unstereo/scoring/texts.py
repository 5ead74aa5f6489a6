"""Text-level scoring, the one scoring path: a TEXTS table (id, text) -> a TEXT_SCORES table (id, logp, ntok).

Pair tables (:mod:`.chunks`), and any other table of strings to score (generated pairs, robustness constructions,
sentiment prefixes), are turned into texts and scored by :func:`score_texts`, which runs through
:func:`unstereo.chunked_map.chunked_map`: ``out`` is built through ``<out>.chunks/`` (``RUN.json`` with the
fingerprint, ``NNNN.parquet`` per chunk of ``chunk_size`` texts), a killed job resumes at its first unfinished chunk,
and the model is loaded only when some chunk is left. The fingerprint holds the run description (model id, revision,
GGUF file, scorer kind, dtype, bos policy, ...) and every (id, text); device and batch size are not in it (the
scores do not depend on them beyond float rounding) but recorded per row, so a resumed run on other hardware stays
visible.

Within a chunk each distinct text is scored once (:func:`score_distinct`): the scorer sees the chunk's distinct
texts in order of first occurrence. With ``cache`` (a :class:`~unstereo.scoring.cache.ScoreCache`) that list goes
through a :class:`~unstereo.scoring.cache.CachedScorer`: texts already scored under the same model fingerprint and
scorer settings are answered from the cache (in any chunk, table or job), only the others reach the model, which is
loaded at the first miss.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, Protocol

import pandas as pd

from unstereo.chunked_map import chunked_map
from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.scoring.cache import CachedScorer, ScoreCache
from unstereo.tables import TEXT_SCORES, TEXTS, TableSchema, validate

SCORE_COLUMNS = ["id", "logp", "ntok"]

log = get_logger("scoring")


class Scorer(Protocol):
    kind: str

    def score(self, sentences: list[str]) -> list[tuple[float, int]]: ...

    def metadata(self) -> dict[str, Any]: ...


def package_versions() -> dict[str, str]:
    """Versions of the packages that determine the scores."""
    import torch
    import transformers

    from unstereo import __version__

    return {
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "unstereo_version": __version__,
    }


def score_distinct(scorer: Scorer, texts: list[str]) -> list[tuple[float, int]]:
    """(ln p, scored tokens) for each of ``texts``, scoring each distinct text once (first-occurrence order)."""
    distinct = list(dict.fromkeys(texts))
    scores = dict(zip(distinct, scorer.score(distinct), strict=True))
    return [scores[t] for t in texts]


def score_texts(
    texts: pd.DataFrame,
    make_scorer: Callable[[], Scorer],
    out: str | Path,
    *,
    run: dict[str, Any],
    chunk_size: int = 1000,
    model_name: str | None = None,
    finalize: Callable[[pd.DataFrame], pd.DataFrame] | None = None,
    schema: TableSchema = TEXT_SCORES,
    source: Any = None,
    cache: ScoreCache | None = None,
) -> pd.DataFrame:
    """Score every text of ``texts`` (columns ``id``, ``text``) in resumable chunks, write ``out``, return it.

    The table has ``id, logp, ntok`` (``model_name`` as a ``model`` column after ``id`` when given), the scorer's
    metadata and package versions per chunk, then every key of ``run`` (the model description; with ``chunk_size``
    unless ``run`` names its own) not already a column. ``make_scorer`` is called only if some chunk is left to
    score. With ``cache``, texts already in it cost no forward pass (see the module doc). ``finalize`` reshapes that table before it is validated against ``schema`` and written (pair scoring
    pivots it into SCORES). Empty texts are an InputError naming the row and id.
    """
    texts = validate(texts.reset_index(drop=True), TEXTS, source=source)
    for row, (i, t) in enumerate(zip(texts["id"], texts["text"], strict=True)):
        if not t.strip():
            raise InputError(f"row {row} (id {i!r}): empty text to score", path=source)
    run = {**run} if "chunk_size" in run else {**run, "chunk_size": chunk_size}

    scorers: list[CachedScorer] = []  # the cached scorer, once set up (for its hit count)

    def setup() -> tuple[Scorer, dict[str, str]]:
        versions = package_versions()
        if cache is None:
            return make_scorer(), versions
        scorers.append(CachedScorer(make_scorer, cache, run, versions))
        return scorers[0], versions

    def score_chunk(chunk: pd.DataFrame, state: tuple[Scorer, dict[str, str]]) -> pd.DataFrame:
        scorer, versions = state
        scores = score_distinct(scorer, list(chunk["text"]))
        done = pd.DataFrame(
            {"id": chunk["id"], "logp": [s for s, _ in scores], "ntok": [n for _, n in scores]}
        )
        for key, value in {**scorer.metadata(), **versions}.items():
            done[key] = value
        return done

    def complete(df: pd.DataFrame) -> pd.DataFrame:
        if scorers:
            log.info("score cache: %d texts answered, %d scored", scorers[0].hits, scorers[0].misses)
        if model_name is not None:
            df.insert(1, "model", model_name)
        for key, value in run.items():
            if key not in df.columns:
                df[key] = value
        df = df.astype({"ntok": "int64"})
        return finalize(df) if finalize is not None else df

    return chunked_map(
        texts[["id", "text"]],
        score_chunk,
        out,
        fingerprint=run,
        chunk_size=chunk_size,
        key="id",
        schema=schema,
        setup=setup,
        finalize=complete,
        columns=SCORE_COLUMNS,
        desc="scoring",
        past="scored",
        source=source,
    )
