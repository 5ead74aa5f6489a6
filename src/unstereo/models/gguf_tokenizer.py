"""Repair of the tokenizer that transformers builds for Gemma GGUF files.

transformers (4.57) converts the tokenizer of a Gemma-2/3 GGUF file into a *Unigram* model with the GGUF scores.
Gemma's tokenizer is a SentencePiece *BPE* model, whose scores are merge priorities (minus the merge rank), not
log-probabilities: the Unigram model then prefers many short pieces (``the`` -> ``▁t`` ``he``: -0 - 5 > -12),
and the model is scored on text split in ways it never saw in training. This rebuilds the BPE model from the same
vocabulary and scores the way SentencePiece does (merge ``(l, r)`` when ``l + r`` is a piece; higher score first;
the same extraction as ``transformers.convert_slow_tokenizer.SentencePieceExtractor``) and keeps the normalizer,
pre-tokenizer, decoder and special tokens.
"""

from __future__ import annotations

import json
from typing import Any

from unstereo.log import get_logger

log = get_logger("models")

# model_type values whose GGUF tokenizer transformers converts with GGUFGemmaConverter (Unigram).
GEMMA_TYPES = ("gemma", "gemma2", "gemma3", "gemma3_text")


def needs_bpe_repair(model: Any, tokenizer: Any) -> bool:
    """True for a Gemma model whose fast tokenizer has a Unigram backend (the GGUF conversion)."""
    model_type = getattr(getattr(model, "config", None), "model_type", None)
    backend = getattr(tokenizer, "backend_tokenizer", None)
    if model_type not in GEMMA_TYPES or backend is None:
        return False
    from tokenizers import models

    # the backend's model object, not its JSON: serialising a 262k-token vocabulary took 2.3 s at every load
    return isinstance(backend.model, models.Unigram)


def sentencepiece_bpe_merges(
    vocab_scores: list[tuple[str, float]], exclude: set[str]
) -> list[tuple[str, str]]:
    """Merges of a SentencePiece BPE model: ``(l, r)`` for every piece ``l + r`` whose halves are pieces, ordered by
    the merged piece's score (highest first), ties by the halves' ids."""
    vocab = {piece: i for i, (piece, _) in enumerate(vocab_scores)}
    ranked = []
    for piece, score in vocab_scores:
        if piece in exclude or len(piece) < 2:
            continue
        local = [
            (piece[:k], piece[k:])
            for k in range(1, len(piece))
            if piece[:k] in vocab
            and piece[k:] in vocab
            and piece[:k] not in exclude
            and piece[k:] not in exclude
        ]
        local.sort(key=lambda lr: (vocab[lr[0]], vocab[lr[1]]))
        ranked += [(-score, vocab[piece], n, lr) for n, lr in enumerate(local)]
    ranked.sort(key=lambda r: r[:3])
    return [lr for *_, lr in ranked]


def repair_gemma_tokenizer(tokenizer: Any) -> Any:
    """Replace the Unigram backend of ``tokenizer`` (a transformers fast tokenizer) by the equivalent BPE model."""
    from tokenizers import Tokenizer

    state = json.loads(tokenizer.backend_tokenizer.to_str())
    unigram = state["model"]
    vocab_scores = [(piece, float(score)) for piece, score in unigram["vocab"]]
    # Special and added tokens are matched whole, never merged; byte-fallback pieces <0xNN> neither.
    exclude = {t["content"] for t in state.get("added_tokens", [])}
    exclude |= {p for p, _ in vocab_scores if p.startswith("<0x") and p.endswith(">") and len(p) == 6}
    merges = sentencepiece_bpe_merges(vocab_scores, exclude)
    unk_id = unigram.get("unk_id")
    state["model"] = {
        "type": "BPE",
        "dropout": None,
        "unk_token": vocab_scores[unk_id][0] if unk_id is not None else None,
        "continuing_subword_prefix": None,
        "end_of_word_suffix": None,
        "fuse_unk": True,
        "byte_fallback": bool(unigram.get("byte_fallback", True)),
        "ignore_merges": False,
        "vocab": {piece: i for i, (piece, _) in enumerate(vocab_scores)},
        "merges": [[left, right] for left, right in merges],
    }
    tokenizer._tokenizer = Tokenizer.from_str(json.dumps(state))
    log.info(
        "rebuilt the GGUF Gemma tokenizer as SentencePiece BPE (%d pieces, %d merges)",
        len(vocab_scores),
        len(merges),
    )
    return tokenizer
