"""Score a pair table with a model, end to end: load the model, score in resumable chunks, write SCORES."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..log import get_logger
from ..models import ModelSpec, load_causal_lm, resolve_device, resolve_dtype
from ..tables import PAIRS, read_table
from .causal import CausalScorer
from .chunks import score_pairs
from .gguf_tokenizer import needs_bpe_repair, repair_gemma_tokenizer
from .masked import MaskedScorer, load_masked_lm

log = get_logger("scoring")


def load_scoring_model(spec: ModelSpec | str, dtype: str = "auto", device: str = "auto"):
    """(model, tokenizer) of a causal LM for scoring: :func:`unstereo.models.load_causal_lm`, plus the repair of
    the Unigram tokenizer transformers builds for Gemma GGUF files (:mod:`.gguf_tokenizer`)."""
    model, tokenizer = load_causal_lm(spec, dtype=dtype, device=device)
    if needs_bpe_repair(model, tokenizer):
        tokenizer = repair_gemma_tokenizer(tokenizer)
    return model, tokenizer


def score_file(
    model: str,
    pairs: str | Path | pd.DataFrame,
    out: str | Path,
    *,
    name: str | None = None,
    gguf_file: str | None = None,
    revision: str | None = None,
    masked: bool = False,
    batch_size: int | str = "auto",
    max_batch_size: int | None = None,
    dtype: str = "auto",
    device: str = "auto",
    chunk_size: int = 500,
    bos_policy: str = "auto",
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """Score every pair of ``pairs`` (a PAIRS table or its path) under ``model`` and write SCORES to ``out``.

    ``model`` is a hub id, a local folder or a ``.gguf`` file (or a folder plus ``gguf_file``); ``name`` goes into
    the ``model`` column (default: ``model`` as given). See :func:`unstereo.scoring.chunks.score_pairs` for resuming.
    """
    source = pairs if not isinstance(pairs, pd.DataFrame) else None
    table = read_table(pairs, PAIRS) if source is not None else pairs
    spec = ModelSpec.parse(model, gguf_file=gguf_file, revision=revision)
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

    def make_scorer():
        log.info("loading %s (%s) on %s in %s", model, run["scorer"], device, run["dtype"])
        if masked:
            m, tok = load_masked_lm(spec, dtype=dtype, device=device)
            return MaskedScorer(m, tok, device=device, batch_size=batch_size, max_batch_size=max_batch_size)
        m, tok = load_scoring_model(spec, dtype=dtype, device=device)
        return CausalScorer(
            m, tok, device=device, batch_size=batch_size, bos_policy=bos_policy, max_batch_size=max_batch_size
        )

    return score_pairs(
        table,
        make_scorer,
        out,
        model_name=name or model,
        run=run,
        chunk_size=chunk_size,
        reference_quirks=reference_quirks,
        source=source,
    )
