"""int8 products for sampling on the CPU (opt-in, ``sampling_products: int8``): every linear layer of the model's body
and its LM head as a dynamic int8 product, with the few outlier input columns kept in fp32.

Why: on the CPU a decode step of a 1.5B model at 16 rows is bound by its fp32 products (on the 2-core AMD EPYC Zen 3
kind, AVX2 only, oneDNN's fp32 products of Qwen2.5-1.5B's body take about 1.06 s a step at 16 rows; fbgemm's int8
products about 0.25 s: docs/performance.md, "int8 products for sampling"). The weights are quantised once per
engine, symmetric per output row (``qint8``, zero point 0, scale ``max |w_row| / 127``); each call quantises its
input per tensor (fbgemm's dynamic linear, 7-bit range, which fbgemm needs on CPUs without VNNI).

Outliers: a few hidden dimensions of such models carry activations hundreds of times larger than the rest (they
sit in the input of Qwen2's ``down_proj``); one scale for the whole input would round every other dimension to a
few levels. As LLM.int8() (Dettmers et al. 2022) does, the input columns whose largest magnitude in the call exceeds
:data:`OUTLIER_THRESHOLD` (and :data:`OUTLIER_RATIO` times the median column's) are kept in fp32 (multiplied by the
same int8 weight, scaled), the rest quantised. Only layers whose input is wider than the model's hidden size (the
MLP's down projection, :func:`keeps_outliers`) do so: the fp32 path needs the layer's int8 weight a second time,
transposed, and the normalised inputs of the other layers lose little without it (docs/performance.md, "int8
outlier columns").
On Qwen2.5-Coder-1.5B this brought the mean KL divergence of next-token distributions from fp32's from 0.45 to
0.03 nats and the greedy top-1 agreement from 81 % to 100 % on a generation prompt (docs/performance.md).

Offered where a model writes test material (the generate stage's ``sampling_products``, ``unstereo llm
--sampling-products``), not where its samples are the measurement (FairPair, counterfactual sentiment): there int8
would measure another model. Scores and the engine's probe keep fp32 products, and so does a model whose
CPU build of PyTorch has no int8 dynamic linear (:func:`available`). For a model loaded as fp32 the layers are
swapped only inside :func:`linears_through`; the model itself is never changed, so another user of the same
weights in the same process sees fp32. A GGUF file sampled in int8 is loaded straight into these layers instead
(:mod:`unstereo.models.gguf_direct`): no fp32 copy exists, and the generate stage's judge, which shares
the generator's weights, runs in int8 too.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Iterator
from typing import Any

#: Input columns whose largest magnitude in a call exceeds this go through fp32 (LLM.int8()'s threshold) ...
OUTLIER_THRESHOLD = 6.0
#: ... and exceeds this many times the median column's: an input whose every column is large (Qwen2's final norm
#: output, the LM head's input: median 4.7, 455 of 1,536 columns above 6) is not one of outliers, and keeping
#: hundreds of columns in fp32 cost more than the int8 product saved.
OUTLIER_RATIO = 4.0


def keeps_outliers(in_features: int, hidden_size: int | None) -> bool:
    """Whether an int8 layer with ``in_features`` inputs, in a model of ``hidden_size``, keeps its outlier input
    columns in fp32: a layer fed something wider than the residual stream (the MLP's down projection, whose input
    carries the large activations); every layer when the hidden size is unknown."""
    return not hidden_size or in_features > hidden_size


class Int8Linear:
    """One linear layer's int8 form: fbgemm's packed per-row int8 weight (bias included), and, where ``outliers``
    (:func:`keeps_outliers`), for the outlier columns the same int8 weight transposed (``rows``: input column -> its
    weights; made on the first call that has an outlier, so a layer that never sees one does not hold it) with the
    per-row ``scale``. ``weight`` may be fp32 or bf16."""

    __slots__ = ("packed", "_rows", "scale", "outliers")

    def __init__(self, weight: Any, bias: Any = None, outliers: bool = True):
        import warnings

        import torch

        self.outliers = outliers
        w = weight.detach().float()
        scale = w.abs().amax(1).clamp_min(1e-12) / 127
        zero = torch.zeros(w.shape[0], dtype=torch.long)
        with warnings.catch_warnings():  # torch.ao's notice that eager quantisation moves to torchao
            warnings.simplefilter("ignore", DeprecationWarning)
            warnings.simplefilter("ignore", UserWarning)
            q = torch.quantize_per_channel(w, scale.double(), zero, 0, torch.qint8)
        self.packed = torch.ops.quantized.linear_prepack(q, None if bias is None else bias.detach())
        self._rows = None
        self.scale = scale.float()

    @property
    def rows(self) -> Any:
        """The int8 weight as [in, out] rows: an outlier column's weights are one contiguous row (a column of the
        [out, in] weight would touch every cache line of it, as much memory as the whole product). Outlier columns
        are many and vary (1,186 of 8,960 in one of Qwen2.5-1.5B's down_proj inputs over a short chat), so the whole
        transposed copy is made once rather than column by column."""
        if self._rows is None:
            import torch

            self._rows = torch.ops.quantized.linear_unpack(self.packed)[0].int_repr().T.contiguous()
        return self._rows

    def exact(self, x: Any) -> Any:
        """The layer's product with each row of ``x`` (its last dimension's vectors) quantised on its own (its own
        scale and outlier columns), so that a row's result does not depend on the other rows of the call, as the
        engine's probe needs. A row at a time through the int8 product: dequantising the weight for every call
        instead made the 1.5B's probe cost more than a minute."""
        import torch

        flat = x.reshape(-1, x.shape[-1])
        rows = [self(flat[i : i + 1]) for i in range(flat.shape[0])]
        out = torch.cat(rows) if rows else self(flat)
        return out.reshape(*x.shape[:-1], out.shape[-1])

    def __call__(self, x: Any, threshold: float | None = None) -> Any:
        """``x @ weight.T + bias`` (``x`` fp32, any leading dims): the input in int8 on the ordinary columns, in fp32
        on the outliers (against the int8 weight, per-row scaled); ``threshold`` replaces the outlier rule."""
        import torch

        x = x.contiguous()
        if not self.outliers and threshold is None:
            return torch.ops.quantized.linear_dynamic(x, self.packed, True)
        flat = x.reshape(-1, x.shape[-1])
        top = flat.abs().amax(0)
        limit = (
            max(OUTLIER_THRESHOLD, OUTLIER_RATIO * float(top.median())) if threshold is None else threshold
        )
        cols = (top > limit).nonzero()[:, 0]
        if not cols.numel():
            return torch.ops.quantized.linear_dynamic(x, self.packed, True)
        ordinary = x.index_fill(-1, cols, 0.0)
        out = torch.ops.quantized.linear_dynamic(ordinary, self.packed, True)
        outliers = x.index_select(-1, cols) @ self.rows.index_select(0, cols).float()
        return out.add_(outliers.mul_(self.scale))


@functools.cache
def works() -> bool:
    """Whether this PyTorch runs the int8 dynamic linear and gets near ``F.linear`` on a probe (with an outlier)."""
    import torch
    import torch.nn.functional as F

    if not torch.backends.quantized.supported_engines or torch.backends.quantized.engine == "none":
        return False
    g = torch.Generator().manual_seed(0)
    x, w, b = (
        torch.randn(4, 3, 64, generator=g),
        torch.randn(32, 64, generator=g),
        torch.randn(32, generator=g),
    )
    x[1, 2, 5] = 50.0  # an outlier column
    try:
        got = Int8Linear(w, b)(x)
    except Exception:  # a build without the quantized ops or an engine without per-row weights
        return False
    want = F.linear(x, w, b)
    return got.shape == want.shape and float((got - want).abs().max()) < 0.05 * float(want.abs().max())


def available(weight: Any) -> bool:
    """Whether products with ``weight`` (a model's tensor) may run in int8: fp32 or bf16 (an LM head held in bf16,
    :mod:`unstereo.models.gguf_direct`), on the CPU, the op working."""
    import torch

    return weight.device.type == "cpu" and weight.dtype in (torch.float32, torch.bfloat16) and works()


def int8_layers(module: Any, hidden_size: int | None = None) -> dict[Any, Int8Linear]:
    """The int8 form of every plain ``nn.Linear`` of ``module`` with fp32 weights on the CPU (by layer); the fp32
    outlier path where :func:`keeps_outliers` (``hidden_size``: the model's, from ``module.config`` when it has one)."""
    import torch

    if hidden_size is None:
        config: Any = getattr(module, "config", None)
        config = config.get_text_config() if hasattr(config, "get_text_config") else config
        hidden_size = getattr(config, "hidden_size", None)
    return {
        m: Int8Linear(m.weight, m.bias, outliers=keeps_outliers(m.in_features, hidden_size))
        for m in module.modules()
        if type(m) is torch.nn.Linear and m.weight.dtype == torch.float32 and available(m.weight)
    }


@contextlib.contextmanager
def linears_through(layers: dict[Any, Any]) -> Iterator[int]:
    """Route each layer of ``layers`` through the form it maps to (:func:`int8_layers`, or
    :func:`unstereo.engine.kernels.bf16.bf16_layers`: any callable of the layer's input) while the block runs (yields how
    many); the layers get their own ``forward`` back on exit, whatever happens inside. Inside another router (e.g.
    :func:`unstereo.engine.kernels.onednn.linears_through_onednn`) this one wins, and the other's is back afterwards."""
    saved = {layer: vars(layer).get("forward") for layer in layers}
    for layer, q in layers.items():
        layer.forward = q
    try:
        yield len(layers)
    finally:
        for layer, before in saved.items():
            if before is None:
                vars(layer).pop("forward", None)
            else:
                layer.forward = before
