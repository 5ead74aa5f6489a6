"""Linear layers through oneDNN on CPU: the same products as PyTorch's default, faster on the shapes scoring gives.

PyTorch computes an fp32 ``nn.Linear`` on an x86 CPU as an MKL sgemm. On the products of a small model's scoring
batch (a prefix tree of ~370 positions times SmolLM2-135M's 576 x 192..1536 projections, the LM head's blocks of
~1,400 vocabulary rows) that reaches 140-196 GFLOP/s on the 2-core AMD EPYC (Zen 4) of our CI machine, where
oneDNN's matmul, ``torch.ops.mkldnn._linear_pointwise`` (the kernel PyTorch's own compiler emits for CPU linears),
reaches 191-212 with the weight as it is: no packed copy, no extra memory. Scoring 1,000 USE-10 pairs in one
process, switched in turn: SmolLM2-135M 48.0 -> 37.5 s, Gemma-3-270M (300 pairs) 26.6 -> 22.6 s.

A gated MLP (``down(act(gate(x)) * up(x))``, Llama's and the models built from it: Qwen2, Gemma-3, ...) can also run
as three oneDNN products with the activation and the product fused into the first two (``fuse_mlp=True``, the
scorer's fast paths): no separate pass over the ``rows x intermediate`` activations, no fresh buffers for them.
Scoring 300 USE-10 pairs with Qwen2.5-Coder-1.5B on a 2-core AMD Zen 5, the body outside its products drops from 5.0
to 2.1 % of the time, the fused products cost a little more, and the scoring takes 1.2-2.0 % less time
(docs/performance.md). The fused activation is oneDNN's (SiLU as its ``swish``, GELU's tanh form as its ``gelu``
with ``tanh``): within a few units of float32 rounding of PyTorch's on the probe (:func:`_fused_works`).

Used only where it is the same computation: fp32 weights on the CPU, plain ``torch.nn.Linear`` modules (subclasses,
e.g. quantised layers, and layers whose ``forward`` something already replaced keep theirs), and only when a probe
product equals ``F.linear``'s (:func:`available`). The scorer switches it on around its fast paths
(:func:`linears_through_onednn`) and checks them, on a probe, against the full forward pass, which keeps PyTorch's
default (:mod:`unstereo.scoring.causal`).
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any


def linear(x: Any, weight: Any, bias: Any = None) -> Any:
    """``x @ weight.T + bias`` by oneDNN (``weight`` ``[out, in]`` as ``nn.Linear`` holds it, any leading dims)."""
    import torch

    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, "none", [], "")


@functools.cache
def _works() -> bool:
    """Whether this PyTorch has the oneDNN linear and it gives ``F.linear``'s product on a probe."""
    import torch
    import torch.nn.functional as F

    if not torch.backends.mkldnn.is_available():
        return False
    g = torch.Generator().manual_seed(0)
    x, w, b = torch.randn(3, 5, 4, generator=g), torch.randn(6, 4, generator=g), torch.randn(6, generator=g)
    try:
        got = linear(x, w, b)
    except Exception:  # a build without the op, or an op of another signature
        return False
    return got.shape == (3, 5, 6) and bool(torch.allclose(got, F.linear(x, w, b), atol=1e-5))


def fused_linear(x: Any, weight: Any, bias: Any, activation: tuple[str, str]) -> Any:
    """``act(x @ weight.T + bias)`` by oneDNN, ``activation`` an (attr, algorithm) post-op (:func:`_activation`)."""
    import torch

    attr, algorithm = activation
    return torch.ops.mkldnn._linear_pointwise(x, weight, bias, attr, [], algorithm)


def linear_mul(x: Any, other: Any, weight: Any, bias: Any = None) -> Any:
    """``(x @ weight.T + bias) * other`` by oneDNN (``other`` of the product's shape), the product fused."""
    import torch

    return torch.ops.mkldnn._linear_pointwise.binary(x, other, weight, bias, "mul")


def _activation(module: Any) -> tuple[str, str] | None:
    """The oneDNN post-op (attr, algorithm) computing ``module`` (an MLP's ``act_fn``), None when there is none.

    SiLU (``torch.nn.SiLU``, transformers' ``SiLUActivation``) is ``swish`` (x * sigmoid(1 * x)); transformers'
    ``GELUTanh`` (GELU's tanh approximation, Gemma's ``gelu_pytorch_tanh``) is ``gelu`` with ``tanh``."""
    import torch

    name = type(module).__name__
    if type(module) is torch.nn.SiLU or (name == "SiLUActivation" and "forward" not in vars(module)):
        return ("swish", "")
    act = getattr(module, "act", None)
    if (
        name == "GELUTanh"
        and isinstance(act, functools.partial)
        and act.func is torch.nn.functional.gelu
        and act.keywords == {"approximate": "tanh"}
    ):
        return ("gelu", "tanh")
    return None


def _reference_gated_mlp(
    self, x
):  # the forward of Llama's MLP, as transformers writes it (compared by bytecode)
    down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
    return down_proj


def gated_mlp_activation(module: Any) -> tuple[str, str] | None:
    """The activation post-op of ``module`` when it is a gated MLP this module can fuse, else None: its class's
    ``forward`` is Llama's ``down_proj(act_fn(gate_proj(x)) * up_proj(x))`` (the same bytecode, names included;
    transformers copies it into Qwen2, Mistral, Gemma-3 and the rest), nothing replaced its ``forward``, its three
    projections are plain fp32 CPU ``nn.Linear`` layers (:func:`available`) and its activation has a post-op."""

    forward = getattr(type(module), "forward", None)
    code, ref = getattr(forward, "__code__", None), _reference_gated_mlp.__code__
    if (
        code is None
        or (code.co_code, code.co_names) != (ref.co_code, ref.co_names)
        or "forward" in vars(module)
    ):
        return None
    layers = [getattr(module, n, None) for n in ("gate_proj", "up_proj", "down_proj")]
    if not all(_plain_linear(m) for m in layers):
        return None
    activation = _activation(getattr(module, "act_fn", None))
    return activation if activation is not None and _fused_works(activation) else None


@functools.cache
def _fused_works(activation: tuple[str, str]) -> bool:
    """Whether the fused products of this PyTorch give ``act(linear) * linear`` (:func:`linear`, unfused) on a
    probe: the activation within 4 float32 roundings of its input's size (oneDNN's ``exp`` and ``tanh`` are its
    own: at most 1 measured on AMD Zen 5, for SiLU and GELU-tanh), the product exactly."""
    import torch
    import torch.nn.functional as F

    if not _works():
        return False
    g = torch.Generator().manual_seed(0)
    x, w = 3 * torch.randn(2, 5, 8, generator=g), torch.randn(6, 8, generator=g)
    act = F.silu if activation[0] == "swish" else functools.partial(F.gelu, approximate="tanh")
    try:
        gate = fused_linear(x, w, None, activation)
        both = linear_mul(x.reshape(-1, 8), gate.reshape(-1, 6), w).reshape(2, 5, 6)
    except Exception:  # a build without the op or the post-op
        return False
    pre = linear(x, w)
    want = act(pre)
    tol = 4 * 2.0**-23 * pre.abs()
    return bool(((gate - want).abs() <= tol).all()) and bool(torch.equal(both, pre * gate))


def _routed_here(layer: Any) -> bool:
    """Whether ``layer`` runs its own forward or :func:`linear` (not a router entered inside, e.g. int8's)."""
    forward = vars(layer).get("forward")
    return forward is None or (
        isinstance(forward, functools.partial) and forward.func in (_forward, _packed_forward)
    )


def _gated_forward(module: Any, activation: tuple[str, str], x: Any) -> Any:
    """``down(act(gate(x)) * up(x))`` as three oneDNN products, the activation and the product fused; the module's
    own forward when a projection was routed elsewhere inside the block (its router wins)."""
    if not all(_routed_here(getattr(module, n)) for n in ("gate_proj", "up_proj", "down_proj")):
        return type(module).forward(module, x)
    shape = x.shape
    x = x.reshape(-1, shape[-1])
    gate, up, down = module.gate_proj, module.up_proj, module.down_proj
    hidden = linear_mul(x, fused_linear(x, gate.weight, gate.bias, activation), up.weight, up.bias)
    return linear(hidden, down.weight, down.bias).view(*shape[:-1], -1)


def available(weight: Any) -> bool:
    """Whether products with ``weight`` (a model's tensor) may go through oneDNN: fp32, on the CPU, op working."""
    import torch

    return weight.device.type == "cpu" and weight.dtype == torch.float32 and _works()


def _forward(layer: Any, x: Any) -> Any:
    return linear(x, layer.weight, layer.bias)


def _plain_linear(module: Any) -> bool:
    """Whether ``module`` is a plain ``nn.Linear`` (no subclass, no replaced ``forward``) whose weight may go
    through oneDNN (:func:`available`)."""
    import torch

    return type(module) is torch.nn.Linear and "forward" not in vars(module) and available(module.weight)


def plain_linears(module: Any) -> list[Any]:
    """The layers of ``module`` that :func:`linears_through_onednn` routes (:func:`_plain_linear`)."""
    return [m for m in module.modules() if _plain_linear(m)]


# ------------------------------------------------------------------------------------- pre-packed weights
# oneDNN multiplies in a blocked layout of the weight; given the plain ``[out, in]`` weight it lays each call's
# weight out again, which at a decode step's 2-256 rows costs as much as a good part of the product. A copy packed
# once (``torch.ops.mkldnn._reorder_linear_weight``, the form PyTorch's compiler freezes weights into) skips that:
# streamed products 1.1-1.5x faster at 32 rows and 1.1-1.2x at 100 on a 2-core AMD Zen 5, the same at 1 row
# (docs/performance.md; ``benchmarks/bench_decode_products.py --packed``). Its products equal the plain weight's
# bit for bit at 2 rows and more (the same kernel), not at 1 row, where the plain weight takes another kernel: one
# row keeps the plain weight, so a row's numbers do not change with the packing.

#: Row counts (the product's leading dims multiplied) that take a packed weight; others take the plain one.
PACKED_ROWS = (2, 256)
#: Rows the packed layout is chosen for (oneDNN's batch-size hint: a decode step's usual batch).
PACK_HINT = 32
# Rows the probe multiplies at: both ends of PACKED_ROWS, the hint and odd counts between.
_PROBE_ROWS = (2, 3, 7, 31, 32, 33, 100, 128, 255, 256)


def pack(weight: Any) -> Any:
    """A copy of ``weight`` (``[out, in]``, fp32 CPU) in oneDNN's blocked layout, which :func:`linear` takes in its
    place (:data:`PACK_HINT`)."""
    import torch

    return torch.ops.mkldnn._reorder_linear_weight(weight, PACK_HINT)


def packing_works(weight: Any, rows: tuple[int, int] = PACKED_ROWS) -> bool:
    """Whether products with :func:`pack`'s copy of ``weight`` equal the plain weight's bit for bit at every row
    count of :data:`_PROBE_ROWS` within ``rows`` (random inputs, with and without a bias)."""
    import torch

    if not available(weight):
        return False
    g = torch.Generator().manual_seed(0)
    try:
        packed = pack(weight)
        bias = torch.randn(weight.shape[0], generator=g)
        return packed_products_equal(packed, bias, lambda x, b: linear(x, weight, b), g, rows)
    except Exception:  # a build without the reorder op
        return False


def packed_products_equal(
    packed: Any, bias: Any, reference: Any, generator: Any, rows: tuple[int, int] = PACKED_ROWS
) -> bool:
    """Whether :func:`linear` by ``packed`` (:func:`pack`'s form, ``[out, in]``) equals ``reference(x, bias)`` bit
    for bit for random ``x`` (from ``generator``) at every row count of :data:`_PROBE_ROWS` within ``rows``, without
    a bias and with ``bias`` (when not None); the probe of :func:`packing_works` and of products it fuses."""
    import torch

    for n in (n for n in _PROBE_ROWS if rows[0] <= n <= rows[1]):
        x = torch.randn(n, packed.shape[1], generator=generator)
        for b in (None, bias) if bias is not None else (None,):
            if not torch.equal(linear(x, packed, b), reference(x, b)):
                return False
    return True


def packed_weights(module: Any) -> dict[Any, Any]:
    """``{layer: packed copy of its weight}`` for the plain fp32 ``nn.Linear`` layers of ``module`` whose weight
    shape passes :func:`packing_works` (probed once per shape on one of its weights); {} when none does."""
    layers = plain_linears(module)
    works: dict[tuple[int, ...], bool] = {}
    for layer in layers:
        shape = tuple(layer.weight.shape)
        if shape not in works:
            works[shape] = packing_works(layer.weight)
    return {layer: pack(layer.weight) for layer in layers if works[tuple(layer.weight.shape)]}


def packed_linear(x: Any, weight: Any, packed: Any, bias: Any = None) -> Any:
    """:func:`linear` of ``x`` by ``packed`` (:func:`pack`'s copy of ``weight``) where ``x`` has
    :data:`PACKED_ROWS` rows (leading dims multiplied), else by ``weight``."""
    n = x.numel() // max(1, x.shape[-1])
    return linear(x, packed if PACKED_ROWS[0] <= n <= PACKED_ROWS[1] else weight, bias)


def _packed_forward(layer: Any, packed: Any, x: Any) -> Any:
    return packed_linear(x, layer.weight, packed, layer.bias)


@contextlib.contextmanager
def linears_through_onednn(
    module: Any, fuse_mlp: bool = False, packed: dict[Any, Any] | None = None
) -> Iterator[int]:
    """Route every plain ``nn.Linear`` of ``module`` through :func:`linear` while the block runs (yields how many),
    and with ``fuse_mlp`` every gated MLP it can fuse through :func:`_gated_forward` (:func:`gated_mlp_activation`);
    the modules get their own ``forward`` back on exit, whatever happens inside. ``packed``
    (:func:`packed_weights`): those layers multiply by their packed copy at :data:`PACKED_ROWS` rows."""

    mlps = []
    if fuse_mlp:
        mlps = [(m, a) for m in module.modules() if (a := gated_mlp_activation(m)) is not None]
    layers = plain_linears(module)
    packed = packed or {}
    for layer in layers:
        copy = packed.get(layer)
        layer.forward = (
            functools.partial(_forward, layer)
            if copy is None
            else functools.partial(_packed_forward, layer, copy)
        )
    for mlp, activation in mlps:
        mlp.forward = functools.partial(_gated_forward, mlp, activation)
    try:
        yield len(layers)
    finally:
        for layer in layers:
            vars(layer).pop("forward", None)
        for mlp, _ in mlps:
            vars(mlp).pop("forward", None)
