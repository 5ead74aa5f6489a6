"""The variants' training text: the section's text sources split into sentences, shuffled by the seed, held-out
sentences first (never trained on, they measure perplexity), then at most ``max_sentences`` training sentences; and
the text each intervention trains on."""

from __future__ import annotations

import hashlib
import json
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unstereo.errors import InputError
from unstereo.finetune.regularised import CounterfactualExample
from unstereo.finetune.text import read_texts, split_sentences
from unstereo.sentiment.settings import resource_path
from unstereo.variants.swap import Swapper, augment, gendered_spans


def digest(texts: Sequence[str]) -> str:
    """sha256 of the texts, in order (one JSON list)."""
    return hashlib.sha256(json.dumps(list(texts), ensure_ascii=False).encode()).hexdigest()


@dataclass(frozen=True)
class Split:
    """The training sentences and the held-out ones."""

    train: list[str]
    heldout: list[str]


def split_text(section: Mapping[str, Any], seed: int, external_dir: str | Path | None = None) -> Split:
    """The sentences of ``section["text"]``, shuffled by ``seed``: the first ``heldout_sentences`` held out, the next
    ``max_sentences`` for training (duplicates of a held-out sentence dropped from training); an InputError when
    fewer than 2 are left to train on."""
    sentences = split_sentences(read_texts([resource_path(p, external_dir) for p in section["text"]]))
    random.Random(seed).shuffle(sentences)
    n_held = section["heldout_sentences"]
    heldout = sentences[:n_held]
    held = set(heldout)
    train = [s for s in sentences[n_held:] if s not in held][: section["max_sentences"]]
    if len(train) < 2:
        raise InputError(
            f"the training text has {len(sentences)} sentence(s): after {n_held} held out, {len(train)} are left "
            "to train on (need 2); give variants.text more text or fewer variants.heldout_sentences"
        )
    return Split(train, heldout)


def gendered_examples(sentences: Sequence[str], sw: Swapper) -> list[CounterfactualExample]:
    """The sentences that hold a gendered word, each with its first one swapped in the counterfactual prefix (the
    regularisers' training examples)."""
    out = []
    for s in sentences:
        spans = gendered_spans(s, sw)
        if spans:
            start, end, word = spans[0]
            out.append(CounterfactualExample(s, start, end, word))
    return out


def cda_text(sentences: Sequence[str], sw: Swapper, share: float, seed: int) -> tuple[list[str], int]:
    """(the sentences with ``share`` of the gendered ones swapped, how many were swapped): CDA's training text
    (share 0: the control's)."""
    text, flags = augment(sentences, sw, share, seed)
    return text, sum(flags)
