"""A decode step of a Llama-family body (Llama, Qwen2) without transformers' module calls: the same operations on
the same numbers in the same order, so the same hidden states bit for bit, in fewer and cheaper calls.

A decode step of SmolLM2-135M at 32 rows runs about 40 PyTorch operations per layer for its 7 products, and
transformers' layers add their own Python around each (decorators, keyword arguments, the cache's ``update``): about
a fifth of the step on a 2-core AMD Zen 5, the part that kept the engine behind llama.cpp there (docs/performance.md).
:class:`LlamaDecodeStep` runs one token per row through the body directly:

- each projection by its module's own ``forward`` (whatever routes it: oneDNN, a packed copy, int8 or bf16 forms),
  except where :meth:`LlamaDecodeStep.fuse` made one packed product of a layer's query, key and value projections,
  and one of its gate and up projections: the concatenated products are the separate ones' columns bit for bit where
  :func:`fusing_works` finds so on a probe (oneDNN reduces each output over the same inputs in the same order), and
  are taken only at :data:`.kernels.onednn.PACKED_ROWS` rows, as packed weights are;
- the rotary embedding of the query and key heads at once when they come out of one product (the same
  element-wise operations);
- the new keys and values written into :class:`~unstereo.engine.engine.SlotCache` by one ``index_copy_`` per
  tensor (positions worked out once a step for all layers), where the cache's ``update`` indexes by rows and
  positions in every layer;
- the attention of :func:`grouped_attention` (the engine's for transformers' layers too), the RMS norms and the MLP as transformers'
  modules compute them (``weight * (x * rsqrt(mean(x^2) + eps))``, ``down(act(gate(x)) * up(x))``).

:meth:`LlamaDecodeStep.build` takes a body only where every piece is the kind this was written against (fp32, the
layer and norm classes listed, no sliding window, no hooks, no replaced norm ``forward``), and the engine's probe
still compares its log-probabilities with the model's full forward pass. Other bodies (Gemma-3, GPT-2) keep the
module calls.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

#: The decoder layers whose forward :class:`LlamaDecodeStep` repeats (transformers' Llama and Qwen2 code: pre-norm,
#: rotary query and key, grouped-query attention, a gated MLP; Qwen2's projections have biases, passed along).
LAYERS = ("LlamaDecoderLayer", "Qwen2DecoderLayer")
NORMS = ("LlamaRMSNorm", "Qwen2RMSNorm")


@dataclass
class _Fused:
    """A layer's packed concatenated weights (query-key-value, gate-up) and biases; None where not fused."""

    qkv: Any = None
    qkv_bias: Any = None
    gate_up: Any = None
    gate_up_bias: Any = None


@dataclass
class _Layer:
    """What a decode step reads of a decoder layer, looked up once (module attribute lookups cost a step ~0.5 ms)."""

    norm: tuple[Any, float]  # input norm: (weight, eps)
    q: Any
    k: Any
    v: Any
    o: Any
    scaling: float
    post_norm: tuple[Any, float]
    act: Any
    gate: Any
    up: Any
    down: Any

    @classmethod
    def of(cls, layer: Any) -> _Layer:
        attn, mlp = layer.self_attn, layer.mlp
        return cls(
            _norm(layer.input_layernorm),
            attn.q_proj,
            attn.k_proj,
            attn.v_proj,
            attn.o_proj,
            float(attn.scaling),
            _norm(layer.post_attention_layernorm),
            mlp.act_fn,
            mlp.gate_proj,
            mlp.up_proj,
            mlp.down_proj,
        )


@dataclass
class LlamaDecodeStep:
    """One token per row through ``body`` (a ``LlamaModel`` or ``Qwen2Model``); see the module doc."""

    body: Any
    heads: int
    kv_heads: int
    head_dim: int
    layers: list[_Layer]
    norm: tuple[Any, float]  # the final norm: (weight, eps)
    fused: list[_Fused] = field(default_factory=list)

    @classmethod
    def build(cls, body: Any, config: Any) -> LlamaDecodeStep | None:
        """The step for ``body``, or None where it is not a body this repeats exactly (see the module doc)."""
        import torch

        layers = getattr(body, "layers", None)
        if not layers or not all(hasattr(body, a) for a in ("embed_tokens", "norm", "rotary_emb")):
            return None
        if any(type(layer).__name__ not in LAYERS for layer in layers):
            return None
        if any(t != "full_attention" for t in getattr(config, "layer_types", None) or ()):
            return None
        norms = [body.norm] + [
            n for layer in layers for n in (layer.input_layernorm, layer.post_attention_layernorm)
        ]
        if any(type(n).__name__ not in NORMS or "forward" in vars(n) for n in norms):
            return None  # a norm replaced by another kernel computes other numbers
        if any(m._forward_hooks or m._forward_pre_hooks for m in body.modules()):
            return None  # hooks (device placement, offloading) run only through module calls
        if any(p.dtype != torch.float32 for p in (body.norm.weight, body.embed_tokens.weight)):
            return None  # a half-precision body casts around its norms, which this does not repeat
        attn = layers[0].self_attn
        heads = int(config.num_attention_heads)
        kv_heads = int(getattr(config, "num_key_value_heads", None) or heads)
        if heads % kv_heads or getattr(attn, "num_key_value_groups", None) != heads // kv_heads:
            return None
        layer_parts = [_Layer.of(layer) for layer in layers]
        return cls(body, heads, kv_heads, int(attn.head_dim), layer_parts, _norm(body.norm))

    def fuse(self, packed: dict[Any, Any]) -> None:
        """Concatenate and pack each layer's query-key-value and gate-up weights where their products equal the
        separate plain ones' (:func:`fusing_works`, probed once per shape), dropping the separate packed copies of
        those projections from ``packed`` (the body's, :func:`.kernels.onednn.packed_weights`): the memory stays
        that of one packed copy. Only layers whose projections are all packed are fused."""
        from unstereo.engine.kernels.onednn import pack

        works: dict[tuple[Any, ...], bool] = {}
        self.fused = []
        for layer in self.layers:
            fused = _Fused()
            for parts, attr in (((layer.q, layer.k, layer.v), "qkv"), ((layer.gate, layer.up), "gate_up")):
                if not all(m in packed for m in parts):
                    continue
                key = tuple((tuple(m.weight.shape), m.bias is not None) for m in parts)
                if key not in works:
                    works[key] = fusing_works(list(parts))
                if works[key]:
                    setattr(fused, attr, pack(_cat([m.weight for m in parts])))
                    setattr(fused, f"{attr}_bias", _cat_bias(parts))
                    for m in parts:
                        del packed[m]
            self.fused.append(fused)

    def __call__(self, ids: Any, positions: Any, cache: Any, mask: Any, fused: bool = True) -> Any:
        """The final hidden states ``[rows, hidden]`` for tokens ``ids`` ``[rows]`` at ``positions`` ``[rows]``,
        their keys and values written into ``cache`` (a :class:`~unstereo.engine.engine.SlotCache` holding the rows
        in its first slots); ``mask``: the additive ``[rows, 1, 1, span]`` attention mask. ``fused``: take the
        fused products where built."""
        import torch

        from unstereo.engine.kernels.onednn import PACKED_ROWS, linear

        body, heads, kv_heads, dim = self.body, self.heads, self.kv_heads, self.head_dim
        rows, span = ids.shape[0], mask.shape[-1]
        fuse = fused and bool(self.fused) and PACKED_ROWS[0] <= rows <= PACKED_ROWS[1]
        h = body.embed_tokens(ids)
        cos, sin = body.rotary_emb(h, positions[:, None])  # [rows, 1, dim]
        cos, sin = cos[:, :, None], _signed_sin(sin[:, :, None])  # over the heads of [rows, heads, 1, dim]
        # where each (row, kv head) writes in a layer's cache, viewed as [slots * kv heads * length, dim]
        heads_at = torch.arange(kv_heads, device=ids.device)
        row_at = torch.arange(rows, device=ids.device)[:, None]
        slots = ((row_at * kv_heads + heads_at) * cache.length + positions[:, None]).reshape(-1)
        for i, layer in enumerate(self.layers):
            f = self.fused[i] if fuse else None
            x = _rms(h, layer.norm)
            if f is not None and f.qkv is not None:
                qkv = linear(x, f.qkv, f.qkv_bias)
                qk = _rotate(
                    qkv[:, : (heads + kv_heads) * dim].view(rows, heads + kv_heads, 1, dim), cos, sin
                )
                q, k = qk[:, :heads], qk[:, heads:]
                v = qkv[:, (heads + kv_heads) * dim :].view(rows, kv_heads, 1, dim)
            else:
                q = _rotate(layer.q.forward(x).view(rows, heads, 1, dim), cos, sin)
                k = _rotate(layer.k.forward(x).view(rows, kv_heads, 1, dim), cos, sin)
                v = layer.v.forward(x).view(rows, kv_heads, 1, dim)
            if cache.keys[i] is None:
                cache._alloc(i, k)
            keys, values = cache.keys[i], cache.values[i]
            keys.view(-1, dim).index_copy_(0, slots, k.reshape(-1, dim))
            values.view(-1, dim).index_copy_(0, slots, v.reshape(-1, dim))
            out = grouped_attention(q, keys[:rows, :, :span], values[:rows, :, :span], mask, layer.scaling)
            h.add_(layer.o.forward(out.reshape(rows, heads * dim)))  # h: the step's own tensor
            x = _rms(h, layer.post_norm)
            if f is not None and f.gate_up is not None:
                gate_up = linear(x, f.gate_up, f.gate_up_bias)
                width = gate_up.shape[-1] // 2
                inner = layer.act(gate_up[:, :width]) * gate_up[:, width:]
            else:
                inner = layer.act(layer.gate.forward(x)) * layer.up.forward(x)
            h.add_(layer.down.forward(inner))
        return _rms(h, self.norm)


def grouped_attention(query: Any, key: Any, value: Any, mask: Any, scaling: float) -> Any:
    """Attention of one new token per row, ``query`` ``[rows, heads, 1, dim]``, over keys and values ``[rows, kv
    heads, length, dim]`` with an additive ``mask``: two batched products with the query heads grouped by their key
    head (where ``sdpa`` first copies every key and value head once per query head). ``[rows, kv heads, group,
    dim]``."""
    import torch

    rows, heads, _, dim = query.shape
    kv_heads = key.shape[1]
    grouped = query.reshape(rows, kv_heads, heads // kv_heads, dim)
    scores = torch.matmul(grouped, key.transpose(-1, -2)).mul_(scaling).add_(mask)
    probs = torch.softmax(scores, dim=-1, dtype=torch.float32).to(query.dtype)
    return torch.matmul(probs, value)


def _norm(norm: Any) -> tuple[Any, float]:
    return norm.weight, float(norm.variance_epsilon)


def _rms(x: Any, norm: tuple[Any, float]) -> Any:
    """transformers' Llama RMS norm of fp32 ``x``: ``weight * (x * rsqrt(mean(x^2) + eps))``."""

    weight, eps = norm
    scale = (
        x.pow(2).mean(-1, keepdim=True).add_(eps).rsqrt_()
    )  # in place: the same operations, no new tensors
    return (x * scale).mul_(weight)


def _signed_sin(sin: Any) -> Any:
    """``sin`` with its first half negated: ``rotate_half(x) * sin == roll(x, half) * _signed_sin(sin)`` exactly
    (``(-a) * b`` and ``a * (-b)`` are the same float)."""
    import torch

    half = sin.shape[-1] // 2
    return torch.cat((-sin[..., :half], sin[..., half:]), dim=-1)


def _rotate(x: Any, cos: Any, signed_sin: Any) -> Any:
    """transformers' ``apply_rotary_pos_emb`` of one tensor, ``x * cos + rotate_half(x) * sin``, as
    ``x * cos + roll(x, half) * signed_sin`` (:func:`_signed_sin`): one copy of ``x`` where ``rotate_half``
    makes three."""
    import torch

    return (x * cos).add_(torch.roll(x, x.shape[-1] // 2, dims=-1).mul_(signed_sin))


def _cat(weights: list[Any]) -> Any:
    import torch

    return torch.cat(weights, dim=0)


def _cat_bias(layers: Sequence[Any]) -> Any:
    """The concatenated biases of ``layers`` (all or none have one)."""
    biases = [m.bias for m in layers]
    return None if any(b is None for b in biases) else _cat(biases)


def fusing_works(layers: list[Any]) -> bool:
    """Whether the packed concatenation of ``layers``' weights (plain ``nn.Linear``, one input width) gives the
    separate plain products' columns bit for bit (:func:`.kernels.onednn.packed_products_equal`: random inputs at
    the packed row counts; with their biases, and without)."""
    import torch

    from unstereo.engine.kernels.onednn import available, linear, pack, packed_products_equal

    weights = [m.weight for m in layers]
    if not all(available(w) for w in weights) or len({w.shape[1] for w in weights}) != 1:
        return False

    def separate(x: Any, bias: Any) -> Any:  # with a bias: each layer's own
        return torch.cat([linear(x, m.weight, m.bias if bias is not None else None) for m in layers], dim=-1)

    try:
        packed = pack(_cat(weights))
        return packed_products_equal(packed, _cat_bias(layers), separate, torch.Generator().manual_seed(0))
    except Exception:  # a build without the reorder op
        return False
