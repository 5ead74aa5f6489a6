"""Pair scoring, a thin layer on the text scorer: a PAIRS table -> two texts per pair -> a SCORES table.

``score_pairs`` turns pair ``p`` into the texts ``p|female`` and ``p|male`` (see :data:`TEXT_ID`), scores them with
:func:`unstereo.scoring.texts.score_texts` and pivots the text scores back into one SCORES row per pair. So
``out = results/scores/{model}/{benchmark}.parquet`` is built through ``{benchmark}.chunks/`` (``RUN.json``, then
``NNNN.parquet`` holding the text scores of pairs ``[N * chunk_size, (N + 1) * chunk_size)``); a killed job resumes at
its first unfinished chunk (:mod:`unstereo.chunked_map`). ``chunk_size`` counts pairs: a chunk lists the female
sentences of its pairs, then the male ones, the order in which the scorer has always seen them. The fingerprint holds
the run description, ``reference_quirks``, the chunk size and every (id, text).

Which strings are scored: by default the pair table's ``sentence_female`` / ``sentence_male`` as they are (the
benchmarks stage filled them with :func:`unstereo.templates.fill_template`; user tables may carry sentences that are
not template fillings). With ``reference_quirks=True`` both sentences are re-filled from ``template`` with the
reference code's ``.strip().capitalize()`` and quote removal (docs/methods.md#quirk-1-capitalize), the strings
the released scores were computed on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.errors import InputError
from unstereo.scoring.cache import ScoreCache
from unstereo.scoring.texts import SCORE_COLUMNS, Scorer, score_texts
from unstereo.tables import PAIRS, SCORES, validate
from unstereo.templates import fill_template

# Text ids of a pair's two sentences (pair ids are unique, so these are too).
TEXT_ID = {"female": "{pair_id}|female", "male": "{pair_id}|male"}


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


def pair_texts(pair_ids: list[str], female: list[str], male: list[str], chunk_size: int) -> pd.DataFrame:
    """The TEXTS table of the pairs: per block of ``chunk_size`` pairs, their female texts, then their male ones."""
    ids: list[str] = []
    texts: list[str] = []
    for lo in range(0, len(pair_ids), chunk_size):
        block = pair_ids[lo : lo + chunk_size]
        ids += [TEXT_ID["female"].format(pair_id=p) for p in block]
        ids += [TEXT_ID["male"].format(pair_id=p) for p in block]
        texts += [str(t) for t in female[lo : lo + chunk_size]] + [str(t) for t in male[lo : lo + chunk_size]]
    return pd.DataFrame({"id": ids, "text": texts})


def pairs_from_texts(scores: pd.DataFrame, pair_ids: list[str]) -> pd.DataFrame:
    """Text scores (id, logp, ntok, metadata...) -> one row per pair (pair_id, logp/ntok female/male, metadata...).

    The metadata of a pair is its female text's (both texts of a pair are scored in the same chunk).
    """
    by_id = scores.set_index("id")
    rows = {sex: by_id.loc[[TEXT_ID[sex].format(pair_id=p) for p in pair_ids]] for sex in ("female", "male")}
    out = pd.DataFrame({"pair_id": pair_ids})
    for col in ("logp", "ntok"):
        for sex in ("female", "male"):
            out[f"{col}_{sex}"] = rows[sex][col].to_numpy()
    for col in scores.columns:
        if col not in SCORE_COLUMNS:
            out[col] = rows["female"][col].to_numpy()
    return out


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
    cache: ScoreCache | None = None,
) -> pd.DataFrame:
    """Score every pair of ``pairs`` in resumable chunks of ``chunk_size`` pairs and write the SCORES table ``out``.

    ``make_scorer`` is called only if some chunk is left to score (a finished run does not load the model again).
    ``run`` describes the model (model_id, model_revision, gguf_file, dtype, bos_policy, scorer ...); it enters the
    fingerprint and the output columns. ``cache``: a score cache (:mod:`.cache`) answering texts already scored
    under the same model and settings. Returns the table written.
    """
    if chunk_size < 1:
        raise ValueError(f"chunk size must be >= 1, got {chunk_size}")
    pairs = validate(pairs.reset_index(drop=True), PAIRS, source=source)
    female, male = sentences_to_score(pairs, reference_quirks, source)
    pair_ids = [str(p) for p in pairs["pair_id"]]
    run = {**run, "reference_quirks": bool(reference_quirks), "chunk_size": int(chunk_size)}

    def to_scores(text_scores: pd.DataFrame) -> pd.DataFrame:
        scores = pairs_from_texts(text_scores, pair_ids)
        scores.insert(1, "model", model_name)
        if "benchmark" in pairs.columns:
            scores.insert(2, "benchmark", list(pairs["benchmark"]))
        return scores.astype({"ntok_female": "int64", "ntok_male": "int64"})

    return score_texts(
        pair_texts(pair_ids, female, male, chunk_size),
        make_scorer,
        out,
        run=run,
        chunk_size=2 * chunk_size,
        finalize=to_scores,
        schema=SCORES,
        source=source,
        cache=cache,
    )
