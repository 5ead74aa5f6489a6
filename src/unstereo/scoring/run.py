"""Score a pair table (SCORES) or a text table (TEXT_SCORES) with a model, end to end: load the model (only when
some chunk is left), score in resumable chunks, write the table."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

import pandas as pd

from unstereo.log import get_logger
from unstereo.scoring.cache import ScoreCache
from unstereo.scoring.chunks import score_pairs
from unstereo.scoring.registry import scorer_for
from unstereo.scoring.texts import score_texts
from unstereo.tables import PAIRS, TEXTS, read_table

if TYPE_CHECKING:
    from unstereo.models.request import ModelRequest

log = get_logger("scoring")


def score_file(
    request: ModelRequest,
    table: str | Path | pd.DataFrame,
    out: str | Path,
    *,
    texts: bool = False,
    name: str | None = None,
    chunk_size: int = 500,
    reference_quirks: bool = False,
    cache: ScoreCache | str | Path | None = None,
) -> pd.DataFrame:
    """Score ``table`` under the model run ``request``, write the scores to ``out`` and return them.

    ``table`` is a PAIRS table (or its path): SCORES, one row per pair (:func:`unstereo.scoring.chunks.score_pairs`);
    with ``texts``, a TEXTS table (``id, text``): TEXT_SCORES, one row per text (``id, model, logp, ntok``,
    :func:`unstereo.scoring.texts.score_texts`). ``chunk_size`` counts pairs, or texts. ``request`` is a
    :class:`~unstereo.models.request.ModelRequest` (:func:`unstereo.models.request.model_request`: spec, scorer
    kind, dtype, device, batch sizes, BOS policy), scored through :func:`unstereo.scoring.registry.scorer_for`;
    ``name`` goes into the ``model`` column (default: the spec's label). ``cache`` (a :class:`ScoreCache` or its
    file): texts already scored under the same model and settings cost no forward pass
    (:mod:`unstereo.scoring.cache`).
    """
    if texts and reference_quirks:
        raise ValueError("reference_quirks re-fills pair templates; it does not apply to a text table")
    source = table if not isinstance(table, pd.DataFrame) else None
    if source is not None:
        table = read_table(source, TEXTS if texts else PAIRS)
    run, make_scorer = scorer_for(request)
    own = cache is not None and not isinstance(cache, ScoreCache)
    if own:  # opened here, closed here: its WAL is folded back into the file
        cache = ScoreCache(cache)
    name = name or request.spec.label
    try:
        if texts:
            return score_texts(
                table,
                make_scorer,
                out,
                run=run,
                chunk_size=chunk_size,
                model_name=name,
                source=source,
                cache=cache,
            )
        return score_pairs(
            table,
            make_scorer,
            out,
            model_name=name,
            run=run,
            chunk_size=chunk_size,
            reference_quirks=reference_quirks,
            source=source,
            cache=cache,
        )
    finally:
        if own:
            cache.close()
