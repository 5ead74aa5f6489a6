"""bfloat16 products for sampling and judging on CPUs that multiply bf16 natively (``sampling_products: bfloat16``).

Why: a model that only writes test material (the generate stage's 1.5B generator and its judge of sense) need not
hold its weights in fp32. As bf16 the body of Qwen2.5-Coder-1.5B takes 2.6 GB instead of 5.2 GB, and on a CPU with
bf16 dot products (x86 ``avx512_bf16`` or ``amx_bf16``) oneDNN multiplies them several times faster than fp32
(docs/performance.md, "bf16 products for generation"). Each product takes its input rounded to bf16 and returns fp32
(the bias added in fp32); norms, attention, the residual stream, the KV cache and the LM head stay fp32, so the
logits a token is drawn from are the fp32 head's.

Unlike int8 (:mod:`unstereo.engine.kernels.int8`), bf16 needs no outlier handling: its 8-bit exponent holds Qwen2's
activations of several hundred as it holds the rest, with 8 bits of mantissa for each.

On a CPU without native bf16 (AVX2 only, e.g. AMD Zen 3) oneDNN emulates the products and they are 2-3x slower than
fp32 (measured with ``ONEDNN_MAX_CPU_ISA=AVX2``): there ``bfloat16`` falls back to fp32 products, logged
(:func:`native`). Holding the weights in bf16 there and widening each into fp32 for an fp32 product
(:meth:`Bf16Linear.exact`) kept the 1.5B in 4.2 GB but sampled at 0.41x of fp32's pace under that emulation
(docs/performance.md, "bf16 products for generation"): pace first. Like int8, bf16 is offered where a model writes test material, not where its samples are the
measurement (FairPair, counterfactual sentiment), and scores are fp32 whatever this says.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

#: The most bytes of fp32 weight :meth:`Bf16Linear.exact` widens at a time.
EXACT_BLOCK_BYTES = 64 << 20
#: The CPU flags (Linux ``/proc/cpuinfo``) of native bf16 dot products.
NATIVE_FLAGS = ("avx512_bf16", "amx_bf16")


class Bf16Linear:
    """One linear layer held as a bf16 weight ``[out, in]`` and an fp32 bias: ``layer(x)`` multiplies ``x`` rounded
    to bf16 (fp32 accumulation, fp32 result); :meth:`exact` multiplies the fp32 ``x`` by the bf16 weight widened to
    fp32, whose rows do not depend on the other rows of the batch (the engine's probe)."""

    __slots__ = ("weight", "bias")

    def __init__(self, weight: Any, bias: Any = None):
        import torch

        self.weight = weight.detach().to(torch.bfloat16).contiguous()
        self.bias = None if bias is None else bias.detach().float()

    def __call__(self, x: Any) -> Any:
        import torch
        import torch.nn.functional as F

        out = F.linear(x.to(torch.bfloat16), self.weight).float()
        return out if self.bias is None else out.add_(self.bias)

    def exact(self, x: Any) -> Any:
        """``x @ weight.T + bias`` in fp32, the weight widened for this call a block of rows at a time (an LM head's
        whole fp32 copy would be 0.93 GB for the 1.5B)."""
        import torch
        import torch.nn.functional as F

        rows = self.weight.shape[0]
        step = max(1, EXACT_BLOCK_BYTES // (4 * self.weight.shape[1]))
        if step >= rows:
            return F.linear(x, self.weight.float(), self.bias)
        out = torch.empty((*x.shape[:-1], rows), dtype=torch.float32, device=x.device)
        for start in range(0, rows, step):
            part = slice(start, start + step)
            out[..., part] = F.linear(
                x, self.weight[part].float(), None if self.bias is None else self.bias[part]
            )
        return out


def cpu_flags(cpuinfo: str | Path = "/proc/cpuinfo") -> set[str]:
    """The flags of the first processor in ``cpuinfo`` (empty where there is no such file: not Linux)."""
    try:
        text = Path(cpuinfo).read_text(errors="replace")
    except OSError:
        return set()
    for line in text.splitlines():
        key, _, value = line.partition(":")
        if key.strip() in ("flags", "Features"):  # x86 names them flags, arm64 Features
            return set(value.split())
    return set()


@functools.cache
def native() -> bool:
    """Whether this CPU multiplies bf16 natively (:data:`NATIVE_FLAGS`) and PyTorch's bf16 product works here."""
    return bool(cpu_flags() & set(NATIVE_FLAGS)) and works()


@functools.cache
def works() -> bool:
    """Whether a bf16 product gives ``F.linear``'s within bf16 rounding on a probe."""
    import torch
    import torch.nn.functional as F

    g = torch.Generator().manual_seed(0)
    x, w, b = (
        torch.randn(3, 5, 64, generator=g),
        torch.randn(32, 64, generator=g),
        torch.randn(32, generator=g),
    )
    try:
        got = Bf16Linear(w, b)(x)
    except Exception:  # a build without bf16 products
        return False
    want = F.linear(x, w, b)
    return got.shape == want.shape and float((got - want).abs().max()) < 0.05 * float(want.abs().max())


def bf16_layers(module: Any) -> dict[Any, Bf16Linear]:
    """The bf16 form of every plain ``nn.Linear`` of ``module`` with fp32 weights on the CPU (by layer)."""
    import torch

    return {
        m: Bf16Linear(m.weight, m.bias)
        for m in module.modules()
        if type(m) is torch.nn.Linear and m.weight.device.type == "cpu" and m.weight.dtype == torch.float32
    }
