"""Perplexity on held-out text, from the project's causal scorer."""

from __future__ import annotations

import math
from collections.abc import Sequence


def perplexity(model, tok, texts: Sequence[str], device: str = "cpu") -> float:
    """exp(- sum ln p / number of scored tokens) over ``texts`` (the project's causal scorer, BOS prepended); NaN
    for no token."""
    from unstereo.scoring.causal import CausalScorer

    scores = CausalScorer(model, tok, device=device, batch_size=16).score(list(texts))
    total, count = sum(s for s, _ in scores), sum(n for _, n in scores)
    return math.exp(-total / count) if count else float("nan")
