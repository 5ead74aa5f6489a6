"""Token sequences packed into one prefix tree, so that a prefix shared by several sequences is run once.

In a causal language model the hidden state at a position depends only on the tokens up to it, so every distinct
prefix of a batch of sequences needs one position, whichever sequences share it: 1,000 USE-10 pairs (2,000
sentences, ~15 tokens each) have ~1.3x fewer distinct prefixes than tokens (the BOS token, the two sentences of a
pair up to the pronoun, templates that start alike). :func:`pack_prefix_tree` lays the distinct prefixes out as the
nodes of one row: node ``i`` holds the last token of its prefix at position ``positions[i]`` (its depth) and attends
to its ancestors and itself only (:func:`ancestor_mask`); the model run on that row with those positions and that
mask gives each node the hidden state of its prefix in a plain causal pass. The queries say which node's logits
score which token of which sequence.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np


@dataclass
class PrefixTree:
    """Nodes (``tokens``, ``positions``, ``parents``: -1 for a root; a parent always comes before its children) and
    queries: the scored token ``query_token[q]`` of sequence ``query_seq[q]`` is predicted by node ``query_node[q]``.
    """

    tokens: list[int] = field(default_factory=list)
    positions: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)
    query_node: list[int] = field(default_factory=list)
    query_token: list[int] = field(default_factory=list)
    query_seq: list[int] = field(default_factory=list)

    def __len__(self) -> int:
        return len(self.tokens)


def pack_prefix_tree(seqs: Sequence[Sequence[int]]) -> PrefixTree:
    """The prefix tree of ``seqs``: one node per distinct proper prefix ``s[:k]`` (1 <= k < len(s)), one query per
    scored token ``s[k]`` (k >= 1). The last token of a sequence predicts nothing scored, so it is no node."""
    tree = PrefixTree()
    children: dict[tuple[int, int], int] = {}
    for si, s in enumerate(seqs):
        parent = -1
        for k in range(len(s) - 1):
            node = children.get((parent, s[k]))
            if node is None:
                node = len(tree.tokens)
                children[(parent, s[k])] = node
                tree.tokens.append(int(s[k]))
                tree.positions.append(k)
                tree.parents.append(parent)
            tree.query_node.append(node)
            tree.query_token.append(int(s[k + 1]))
            tree.query_seq.append(si)
            parent = node
    return tree


def ancestor_mask(parents: Sequence[int]) -> np.ndarray:
    """Boolean ``[n, n]`` matrix: ``m[i, j]`` is True when node ``j`` is node ``i`` or one of its ancestors."""
    n = len(parents)
    mask = np.zeros((n, n), dtype=bool)
    for i, p in enumerate(parents):
        if p >= i:
            raise ValueError(f"node {i} has parent {p}: parents must come before their children")
        if p >= 0:
            mask[i] = mask[p]
        mask[i, i] = True
    return mask
