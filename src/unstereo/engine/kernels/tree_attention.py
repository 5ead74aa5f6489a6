"""Attention of a prefix tree in small segments, so its cost grows with the tree's size, not with its square.

A prefix tree of a batch (:mod:`unstereo.scoring.prefix_tree`) is one row of ~370 positions for 32 USE-10
sentences, and its mask lets each node see only its ancestors (a dozen). Dense attention over the row computes
all 370 x 370 scores and masks nearly all of them: 13 % of SmolLM2-135M's scoring time. Here the row is cut
into *segments*: the largest subtrees of at most :data:`SEGMENT` nodes, packed in order, each segment with the
shared ancestors its subtrees hang from (the BOS token, a first word many sentences share: they appear in
every segment that needs them). Attention runs per segment (a batch of ``segments x S x S`` scores, S the
longest segment) and the outputs go back to the row. Every ancestor of a node is in its segment, so this is
the same attention as the dense mask's; only the linear layers see the row, unpadded.

It plugs into transformers' attention interface: :func:`segmented_attention` switches the model's attention
implementation to :data:`NAME` while the body runs, and the function registered under that name reads the layout
of the current tree from a context variable (plain SDPA when there is none). The scorer checks the result against
the full forward pass on a probe before using it (:mod:`unstereo.scoring.causal`).
"""

from __future__ import annotations

import contextlib
import contextvars
from dataclasses import dataclass
from typing import Any

import numpy as np

NAME = "unstereo_tree_segments"
# Target nodes per segment: the attention's cost is ~ nodes x SEGMENT (370 x 370 before); smaller segments pad
# more when subtrees do not fill them (a USE-10 pair's subtree has ~20 nodes). 32 USE-10 sentences: 17 segments of
# 31 slots, 8.5x fewer scores than the dense row.
SEGMENT = 32

# (gather, take, additive masks) of the tree being run, as tensors
_layout: contextvars.ContextVar[tuple | None] = contextvars.ContextVar("tree_layout", default=None)


@dataclass(frozen=True)
class SegmentLayout:
    """Where the tree's nodes go: ``gather[g, s]`` is the node at slot s of segment g (padding repeats a node of the
    segment), ``allowed[g, i, j]`` whether slot i attends to slot j (ancestors and itself; a padding slot only to
    itself), ``take[node]`` the flat slot (``g * S + s``) whose output is the node's."""

    gather: np.ndarray  # [G, S] int64
    allowed: np.ndarray  # [G, S, S] bool
    take: np.ndarray  # [nodes] int64


def segment_layout(
    parents: list[int] | np.ndarray, ancestors: np.ndarray, size: int = SEGMENT
) -> SegmentLayout:
    """The segments of a prefix tree with ``parents`` (parents before children) and its :func:`~.prefix_tree
    .ancestor_mask` ``ancestors``.

    The tree is cut into *units*, the largest subtrees of at most ``size`` nodes; the nodes above them (whose
    subtrees are larger: the BOS token, a first word many sentences share) are *shared*. Units are packed in node
    order into segments of about ``size`` nodes, each segment with the shared ancestors of its units, so every node
    finds all its ancestors in its segment."""
    parents = np.asarray(parents, dtype=np.int64)
    n = parents.size
    subtree = np.ones(n, np.int64)
    for i in range(n - 1, -1, -1):  # children come after their parents
        if parents[i] >= 0:
            subtree[parents[i]] += subtree[i]
    shared = subtree > size
    head = np.arange(n)  # the unit of a node: its highest ancestor-or-self that is not shared
    for i in range(n):
        p = parents[i]
        if p >= 0 and not shared[p]:
            head[i] = head[p]
    members: dict[int, list[int]] = {}
    for i in np.flatnonzero(~shared).tolist():
        members.setdefault(int(head[i]), []).append(i)
    segments: list[list[int]] = []
    current: list[int] = []  # nodes of the segment being filled (whole units and their shared ancestors)
    present: set[int] = set()
    for h, nodes in members.items():  # units in node order of their heads
        need = [a for a in np.flatnonzero(ancestors[h] & shared).tolist() if a != h]
        if current and len(current) + len(nodes) + sum(a not in present for a in need) > size:
            segments.append(current)
            current, present = [], set()
        extra = [a for a in need if a not in present]
        current += extra + nodes
        present.update(extra)
    if current:
        segments.append(current)
    width = max(len(s) for s in segments)
    gather = np.empty((len(segments), width), np.int64)
    valid = np.zeros((len(segments), width), bool)
    take = np.full(n, -1, np.int64)
    for g, seg in enumerate(segments):
        gather[g, : len(seg)] = seg
        gather[g, len(seg) :] = seg[0]
        valid[g, : len(seg)] = True
        slots = np.arange(len(seg)) + g * width
        first = take[seg] < 0
        take[np.asarray(seg)[first]] = slots[first]
    allowed = ancestors[gather[:, :, None], gather[:, None, :]] & valid[:, :, None] & valid[:, None, :]
    allowed |= np.eye(width, dtype=bool)[None]  # padding slots see themselves: no row without a key
    return SegmentLayout(gather, allowed, take)


def _attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, **kwargs: Any):
    """transformers attention function: per segment of the current layout, else plain SDPA.

    Grouped-query attention without copies of the keys and values: the queries of the heads that share a key head
    are stacked along the sequence axis (``[segments x key heads, groups x S, head_dim]``, the mask repeated to
    match), the order ``repeat_kv`` gives the heads. Scores, mask and softmax (in fp32) as transformers' eager
    attention does them, in two batched products: for segments this small that is ~2x faster than SDPA's kernel."""
    import torch
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    layout = _layout.get()
    if layout is None:
        return sdpa_attention_forward(module, query, key, value, attention_mask, **kwargs)
    if query.shape[0] != 1 or kwargs.get("softcap") is not None or kwargs.get("head_mask") is not None:
        raise NotImplementedError("segmented tree attention: one row, no attention soft-capping or head mask")
    gather, take, masks = layout
    heads, kv_heads, dim = query.shape[1], key.shape[1], query.shape[3]
    groups = heads // kv_heads
    segments, width = masks[None].shape[0], masks[None].shape[-1]
    if (kv_heads, groups) not in masks:
        repeated = masks[None][:, None, None].expand(segments, kv_heads, groups, width, width)
        masks[kv_heads, groups] = repeated.reshape(segments * kv_heads, groups * width, width)

    def segmented(x: Any) -> Any:  # [1, h, nodes, dim] -> [segments, h, S, dim]
        x = x[0].transpose(0, 1).index_select(0, gather).view(segments, width, x.shape[1], dim)
        return x.transpose(1, 2)

    q = segmented(query).reshape(segments * kv_heads, groups * width, dim)
    k = segmented(key).reshape(segments * kv_heads, width, dim)
    v = segmented(value).reshape(segments * kv_heads, width, dim)
    scale = kwargs.get("scaling")
    scale = dim**-0.5 if scale is None else scale
    scores = torch.baddbmm(masks[kv_heads, groups], q, k.transpose(1, 2), alpha=scale)
    probs = scores.softmax(-1, dtype=torch.float32).to(q.dtype)
    out = torch.bmm(probs, v).view(segments, kv_heads, groups, width, dim)
    out = out.permute(0, 3, 1, 2, 4).reshape(-1, heads, dim)
    return out.index_select(0, take)[None], None


def _configs(model: Any) -> list[Any]:
    """Every config object of ``model``'s modules and their sub-configs (each decides its layers' attention)."""
    seen: dict[int, Any] = {}
    todo = [getattr(m, "config", None) for m in model.modules()]
    while todo:
        config = todo.pop()
        if config is None or id(config) in seen or not hasattr(config, "_attn_implementation_internal"):
            continue
        seen[id(config)] = config
        todo += [getattr(config, key, None) for key in getattr(config, "sub_configs", {}) or {}]
    return list(seen.values())


@contextlib.contextmanager
def segmented_attention(model: Any, layout: SegmentLayout, device: Any, dtype: Any):
    """Run ``model``'s attention per segment of ``layout`` inside the block (masks in ``dtype`` on ``device``)."""
    import torch
    from transformers import AttentionInterface

    if NAME not in AttentionInterface._global_mapping:
        AttentionInterface.register(NAME, _attention)
    configs = _configs(model)
    saved = [c._attn_implementation_internal for c in configs]
    mask = torch.zeros(layout.allowed.shape, dtype=dtype, device=device)
    mask.masked_fill_(~torch.from_numpy(layout.allowed).to(device), torch.finfo(dtype).min)
    gather = torch.from_numpy(layout.gather.reshape(-1)).to(device)
    take = torch.from_numpy(layout.take).to(device)
    token = _layout.set((gather, take, {None: mask}))  # the mask, and its repeats by head layout (_attention)
    try:
        for c in configs:
            c._attn_implementation_internal = NAME
        yield
    finally:
        for c, value in zip(configs, saved, strict=True):
            c._attn_implementation_internal = value
        _layout.reset(token)
