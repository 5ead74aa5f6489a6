"""Score a pair table (SCORES) or a text table (TEXT_SCORES) with a model, end to end: load the model (only when
some chunk is left), score in resumable chunks, write the table."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import UnstereoError
from ..gguf_tokenizer import needs_bpe_repair, repair_gemma_tokenizer
from ..log import get_logger
from ..model_spec import resolve_model
from ..models import ModelSpec, load_causal_lm, resolve_device, resolve_dtype
from ..tables import PAIRS, TEXTS, read_table
from .cache import ScoreCache
from .causal import CausalScorer
from .chunks import score_pairs
from .masked import MaskedScorer, load_masked_lm
from .texts import Scorer, score_texts

log = get_logger("scoring")


def load_scoring_model(spec: ModelSpec | str, dtype: str = "auto", device: str = "auto"):
    """(model, tokenizer) of a causal LM for scoring: :func:`unstereo.models.load_causal_lm`, plus the repair of
    the Unigram tokenizer transformers builds for Gemma GGUF files (:mod:`unstereo.gguf_tokenizer`)."""
    model, tokenizer = load_causal_lm(spec, dtype=dtype, device=device)
    if needs_bpe_repair(model, tokenizer):
        tokenizer = repair_gemma_tokenizer(tokenizer)
    return model, tokenizer


def scorer_factory(
    model: str | ModelSpec,
    *,
    gguf_file: str | None = None,
    revision: str | None = None,
    masked: bool = False,
    batch_size: int | str = "auto",
    max_batch_size: int | None = None,
    dtype: str = "auto",
    device: str = "auto",
    bos_policy: str = "auto",
) -> tuple[dict[str, Any], Callable[[], Scorer]]:
    """(run description, scorer factory) for ``model``: the description enters the fingerprint and the output
    columns; the factory loads the model and is called only when some chunk is left to score."""
    spec = resolve_model(model, gguf_file=gguf_file, revision=revision, key="MODEL")
    if spec.is_remote:
        raise UnstereoError(
            f"cannot score with {spec.to_arg()!r}: log-likelihoods need the model's weights (a hub id, folder or GGUF file)"
        )
    device = resolve_device(device)
    torch_dtype = resolve_dtype(dtype, device)
    run: dict[str, Any] = {
        "model_id": spec.path,
        "model_revision": spec.revision,
        "gguf_file": spec.gguf_file,
        "scorer": "masked-pll" if masked else "causal",
        "dtype": str(torch_dtype).replace("torch.", ""),
        "bos_policy_requested": "pll" if masked else bos_policy,
    }

    def make_scorer() -> Scorer:
        log.info("loading %s (%s) on %s in %s", model, run["scorer"], device, run["dtype"])
        if masked:
            m, tok = load_masked_lm(spec, dtype=dtype, device=device)
            return MaskedScorer(m, tok, device=device, batch_size=batch_size, max_batch_size=max_batch_size)
        m, tok = load_scoring_model(spec, dtype=dtype, device=device)
        return CausalScorer(
            m, tok, device=device, batch_size=batch_size, bos_policy=bos_policy, max_batch_size=max_batch_size
        )

    return run, make_scorer


def score_file(
    model: str | ModelSpec,
    table: str | Path | pd.DataFrame,
    out: str | Path,
    *,
    texts: bool = False,
    name: str | None = None,
    chunk_size: int = 500,
    reference_quirks: bool = False,
    cache: ScoreCache | str | Path | None = None,
    **model_options: Any,
) -> pd.DataFrame:
    """Score ``table`` under ``model``, write the scores to ``out`` and return them.

    ``table`` is a PAIRS table (or its path): SCORES, one row per pair (:func:`unstereo.scoring.chunks.score_pairs`);
    with ``texts``, a TEXTS table (``id, text``): TEXT_SCORES, one row per text (``id, model, logp, ntok``,
    :func:`unstereo.scoring.texts.score_texts`). ``chunk_size`` counts pairs, or texts. ``model`` is a model spec
    (:func:`unstereo.model_spec.resolve_model`: hub id, folder, ``.gguf`` file, ``resource:NAME/FILE``, or a
    :class:`ModelSpec`); ``name`` goes into the ``model`` column (default: ``model`` as given); ``model_options`` are those of :func:`scorer_factory` (gguf_file, revision, masked,
    batch_size, max_batch_size, dtype, device, bos_policy). ``cache`` (a :class:`ScoreCache` or its file): texts
    already scored under the same model and settings cost no forward pass (:mod:`unstereo.scoring.cache`).
    """
    if texts and reference_quirks:
        raise ValueError("reference_quirks re-fills pair templates; it does not apply to a text table")
    source = table if not isinstance(table, pd.DataFrame) else None
    if source is not None:
        table = read_table(source, TEXTS if texts else PAIRS)
    run, make_scorer = scorer_factory(model, **model_options)
    if cache is not None and not isinstance(cache, ScoreCache):
        cache = ScoreCache(cache)
    name = name or (model.label if isinstance(model, ModelSpec) else model)
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
