"""The scorers the methods share (UnStereoEval's score stage, :mod:`unstereo.unstereoeval.score`, and the
others): sentence log-likelihoods of pair tables under causal LMs (and PLL under masked LMs).

- :mod:`.causal`: :class:`CausalScorer`, BOS policy, fp32 token log-probs, the scoring paths (prefix tree,
  padded, full forward pass); :mod:`.prefix_tree`, :mod:`unstereo.engine.kernels.tree_attention` (the tree's attention
  per segment) and :mod:`unstereo.engine.kernels.lm_head` (the head only on scored positions);
- :mod:`.masked`: :class:`MaskedScorer`, pseudo-log-likelihood (models loaded by :func:`unstereo.models.load.load`);
- :mod:`.batching`: length sorting and the batch size that halves on out-of-memory;
- :mod:`.texts`: :func:`score_texts`, the one scoring path: a TEXTS table (id, text) -> TEXT_SCORES (id, logp,
  ntok), resumable through :func:`unstereo.chunked_map.chunked_map`, each distinct text of a chunk scored once;
- :mod:`.chunks`: :func:`score_pairs`, pair scoring as a thin layer on it (two texts per pair -> a SCORES table);
- :mod:`.run`: :func:`score_file`, the whole score stage for one (model, pair or text table), which
  :mod:`unstereo.unstereoeval.score.cli` runs as ``unstereo score`` (``--texts`` for a text table).
"""

from unstereo.scoring.causal import CausalScorer, resolve_prefix
from unstereo.scoring.chunks import score_pairs
from unstereo.scoring.masked import MaskedScorer
from unstereo.scoring.run import score_file
from unstereo.scoring.texts import score_texts

__all__ = [
    "CausalScorer",
    "MaskedScorer",
    "resolve_prefix",
    "score_file",
    "score_pairs",
    "score_texts",
]
