"""Linear layers through oneDNN on CPU: the same products as PyTorch's default, faster on the shapes scoring gives.

PyTorch computes an fp32 ``nn.Linear`` on an x86 CPU as an MKL sgemm. On the products of a small model's scoring
batch (a prefix tree of ~370 positions times SmolLM2-135M's 576 x 192..1536 projections, the LM head's blocks of
~1,400 vocabulary rows) that reaches 140-196 GFLOP/s on the 2-core AMD EPYC (Zen 4) of our CI machine, where
oneDNN's matmul, ``torch.ops.mkldnn._linear_pointwise`` (the kernel PyTorch's own compiler emits for CPU linears),
reaches 191-212 with the weight as it is: no packed copy, no extra memory. Scoring 1,000 USE-10 pairs in one
process, switched in turn: SmolLM2-135M 48.0 -> 37.5 s, Gemma-3-270M (300 pairs) 26.6 -> 22.6 s.

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


def available(weight: Any) -> bool:
    """Whether products with ``weight`` (a model's tensor) may go through oneDNN: fp32, on the CPU, op working."""
    import torch

    return weight.device.type == "cpu" and weight.dtype == torch.float32 and _works()


def _forward(layer: Any, x: Any) -> Any:
    return linear(x, layer.weight, layer.bias)


@contextlib.contextmanager
def linears_through_onednn(module: Any) -> Iterator[int]:
    """Route every plain ``nn.Linear`` of ``module`` through :func:`linear` while the block runs (yields how many);
    the layers get their own ``forward`` back on exit, whatever happens inside."""
    import torch

    layers = [
        m
        for m in module.modules()
        if type(m) is torch.nn.Linear and "forward" not in vars(m) and available(m.weight)
    ]
    for layer in layers:
        layer.forward = functools.partial(_forward, layer)
    try:
        yield len(layers)
    finally:
        for layer in layers:
            vars(layer).pop("forward", None)
