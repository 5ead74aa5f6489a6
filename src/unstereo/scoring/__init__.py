"""The score stage: sentence log-likelihoods of pair tables under causal LMs (and PLL under masked LMs).

- :mod:`.causal`: :class:`CausalScorer`, BOS policy, fp32 token log-probs, length-sorted right-padded batches;
- :mod:`.masked`: :class:`MaskedScorer`, pseudo-log-likelihood;
- :mod:`.gguf_tokenizer`: repair of the tokenizer transformers builds for Gemma GGUF files;
- :mod:`.batching`: length sorting and the batch size that halves on out-of-memory;
- :mod:`.chunks`: resumable chunked scoring of a pair table into a SCORES table;
- :mod:`.run`: :func:`score_file`, the whole stage for one (model, pair table); :mod:`.cli`: ``unstereo score``.
"""

from .causal import CausalScorer, resolve_prefix
from .chunks import score_pairs
from .masked import MaskedScorer, load_masked_lm
from .run import load_scoring_model, score_file

__all__ = [
    "CausalScorer",
    "MaskedScorer",
    "load_masked_lm",
    "resolve_prefix",
    "load_scoring_model",
    "score_file",
    "score_pairs",
]
