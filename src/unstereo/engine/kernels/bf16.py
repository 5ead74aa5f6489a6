"""bfloat16 products for sampling and judging on CPUs that multiply bf16 natively (``sampling_products: bfloat16``).

Why: a model that only writes test material (the generate stage's 1.5B generator and its judge of sense) need not
hold its weights in fp32. As bf16 the body of Qwen2.5-Coder-1.5B takes 2.6 GB instead of 5.2 GB, and on a CPU with
bf16 dot products (x86 ``avx512_bf16`` or ``amx_bf16``) oneDNN multiplies them several times faster than fp32
(docs/performance.md, "bf16 products for generation"). Each product takes its input rounded to bf16 and returns fp32
(the bias added in fp32); norms, attention, the residual stream, the KV cache and the LM head stay fp32, so the
logits a token is drawn from are the fp32 head's.

Unlike int8 (:mod:`unstereo.engine.kernels.int8`), bf16 needs no outlier handling: its 8-bit exponent holds Qwen2's
activations of several hundred as it holds the rest, with 8 bits of mantissa for each.

On a CPU without native bf16 (AVX2 only, e.g. AMD Zen 3) oneDNN emulates bf16 products and they are 2-3x slower
than fp32 (measured with ``ONEDNN_MAX_CPU_ISA=AVX2``). There the weights are still held in bf16, and each product
widens them into fp32 a block of rows at a time, into one reused buffer that stays in the cache, for an fp32 product
with the fp32 input (:meth:`Bf16Linear.widened`): the model takes the bf16 form's memory (4.1 GB for the 1.5B
instead of 7.6), and a decode step reads 2 bytes a weight from memory instead of fp32's 4. Under AVX2 emulation on a
Zen 5 (where memory is fast and the products bound the step) it samples at 0.79x of fp32's pace, the widening
copies being most of the difference; widening a whole weight at once made 6 bytes of traffic a weight and ran at
0.41x (docs/performance.md, "bf16 weights on CPUs without native bf16"). The samples differ from native bf16's (the
input is not rounded): :func:`label` keys them apart.

Like int8, bf16 is offered where a model writes test material, not where its samples are the measurement (FairPair,
counterfactual sentiment), and scores are fp32 whatever this says.
"""

from __future__ import annotations

import functools
from pathlib import Path
from typing import Any

#: The most bytes of fp32 weight :meth:`Bf16Linear.exact` widens at a time.
EXACT_BLOCK_BYTES = 64 << 20
#: The most bytes of fp32 weight :meth:`Bf16Linear.widened` widens at a time: small enough to stay in the cache for
#: its product (of 256 KB, 1 MB and 4 MB, 4 MB was fastest on the 1.5B's shapes at 32 rows: docs/performance.md).
WIDEN_BLOCK_BYTES = 4 << 20
#: The CPU flags (Linux ``/proc/cpuinfo``) of native bf16 dot products.
NATIVE_FLAGS = ("avx512_bf16", "amx_bf16")


class Bf16Linear:
    """One linear layer held as a bf16 weight ``[out, in]`` and an fp32 bias: ``layer(x)`` multiplies ``x`` rounded
    to bf16 (fp32 accumulation, fp32 result) where the CPU multiplies bf16 natively (:func:`native`), else
    :meth:`widened`; :meth:`exact` multiplies the fp32 ``x`` by the bf16 weight widened to fp32, whose rows do not
    depend on the other rows of the batch (the engine's probe)."""

    __slots__ = ("weight", "bias")

    def __init__(self, weight: Any, bias: Any = None):
        import torch

        self.weight = weight.detach().to(torch.bfloat16).contiguous()
        self.bias = None if bias is None else bias.detach().float()

    def __call__(self, x: Any) -> Any:
        return self.product(x) if native() else self.widened(x)

    def product(self, x: Any) -> Any:
        """The bf16 product: ``x`` rounded to bf16 times the bf16 weight, accumulated and returned in fp32."""
        import torch
        import torch.nn.functional as F

        out = F.linear(x.to(torch.bfloat16), self.weight).float()
        return out if self.bias is None else out.add_(self.bias)

    def widened(self, x: Any) -> Any:
        """``x @ weight.T + bias`` in fp32 products of the fp32 ``x``, the weight widened :data:`WIDEN_BLOCK_BYTES` at
        a time into one buffer (:func:`_scratch`), each block's product written as rows of the transposed result
        (contiguous, so no copy per block); one transpose at the end."""
        import torch

        flat = x.reshape(-1, x.shape[-1]).float()
        rows, cols = self.weight.shape
        step = min(rows, max(1, WIDEN_BLOCK_BYTES // (4 * cols)))
        buffer = _scratch(step * cols)
        x_t = flat.T.contiguous()
        out_t = torch.empty((rows, flat.shape[0]), dtype=torch.float32)
        for start in range(0, rows, step):
            stop = min(rows, start + step)
            block = buffer[: (stop - start) * cols].view(stop - start, cols)
            block.copy_(self.weight[start:stop])
            torch.mm(block, x_t, out=out_t[start:stop])
        out = out_t.T.contiguous()
        if self.bias is not None:
            out.add_(self.bias)
        return out.view(*x.shape[:-1], rows)

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


_SCRATCH: list[Any] = []


def _scratch(size: int) -> Any:
    """A flat fp32 buffer of at least ``size`` values, one for every layer of the process (grown, never shrunk: at
    most :data:`WIDEN_BLOCK_BYTES`, or one row of the widest layer)."""
    import torch

    if not _SCRATCH or _SCRATCH[0].numel() < size:
        _SCRATCH[:] = [torch.empty(size, dtype=torch.float32)]
    return _SCRATCH[0]


def label() -> str:
    """The cache label of bf16 sampling on this CPU: native products round the input to bf16, widened ones do not, so
    their samples differ and are keyed apart."""
    return " [bf16 products]" if native() else " [bf16 weights]"


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
        got = Bf16Linear(w, b).product(x)
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
