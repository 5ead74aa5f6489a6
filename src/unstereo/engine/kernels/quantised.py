"""A linear layer held only in an engine form (:class:`~unstereo.engine.kernels.int8.Int8Linear` or
:class:`~unstereo.engine.kernels.bf16.Bf16Linear`), as a GGUF file loaded straight into such products holds its
body's linears (:mod:`unstereo.models.gguf_direct`), and the switch of such layers to exact products for the
engine's probe (:func:`exact_products`)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any


def _module_class():
    import torch

    class QuantisedLinear(torch.nn.Module):
        """A linear layer held only as its engine form ``q`` (:class:`~unstereo.engine.kernels.int8.Int8Linear` or
        :class:`~unstereo.engine.kernels.bf16.Bf16Linear`); ``exact``: products whose rows do not depend on each
        other (see :func:`exact_products`)."""

        def __init__(self, q: Any, in_features: int, out_features: int, form: str):
            super().__init__()
            self.q, self.in_features, self.out_features, self.form = q, in_features, out_features, form
            self.exact = False

        def forward(self, x):
            return self.q.exact(x) if self.exact else self.q(x)

        def extra_repr(self) -> str:
            return f"in_features={self.in_features}, out_features={self.out_features}, {self.form}"

    return QuantisedLinear


_CLASS: Any = None


def quantised_linear_class():
    """The :class:`QuantisedLinear` module class (built on first use: torch is imported lazily)."""
    global _CLASS
    if _CLASS is None:
        _CLASS = _module_class()
    return _CLASS


def is_quantised(model: Any) -> bool:
    """Whether ``model`` holds layers loaded by :func:`load_gguf` in a quantised form (int8 or bf16)."""
    cls = quantised_linear_class()
    return any(isinstance(m, cls) for m in model.modules())


@contextlib.contextmanager
def exact_products(model: Any) -> Iterator[int]:
    """While the block runs, every :class:`QuantisedLinear` of ``model`` computes each row of its input on its own
    (``exact``: int8 layers quantise each row by itself, bf16 ones multiply the fp32 row by the widened weight): no
    batch dependence, for the engine's probe. Yields how many layers were switched."""
    cls = quantised_linear_class()
    layers = [m for m in model.modules() if isinstance(m, cls)]
    for m in layers:
        m.exact = True
    try:
        yield len(layers)
    finally:
        for m in layers:
            m.exact = False
