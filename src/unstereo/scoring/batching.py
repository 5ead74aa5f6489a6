"""Length-sorted batching with a batch size that halves on out-of-memory, shared by the causal and masked scorers.

Items (sentences, or masked copies of sentences) are sorted by length, longest first, so that padding is small and
the biggest batch comes first: an out-of-memory error shows up at once, the batch size is halved and the same batch
is retried. Results come back in the caller's order.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

from tqdm.auto import tqdm

from unstereo.errors import UnstereoError
from unstereo.log import get_logger

log = get_logger("scoring")

R = TypeVar("R")


class OutOfMemory(UnstereoError):
    """Out of memory even with batch size 1."""


def is_oom(exc: BaseException) -> bool:
    """True for an out-of-memory error of any torch backend (CUDA, MPS, CPU allocator)."""
    import torch

    if isinstance(exc, torch.OutOfMemoryError):
        return True
    msg = str(exc).lower()
    return isinstance(exc, RuntimeError) and ("out of memory" in msg or "can't allocate memory" in msg)


def free_memory() -> None:
    """Release cached accelerator memory after an out-of-memory error."""
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    mps = getattr(torch, "mps", None)
    if mps is not None and torch.backends.mps.is_available():
        mps.empty_cache()


#: Floats of one batch's logits at most (items x padded length x vocabulary) for an ``auto`` batch size, per device:
#: on the CPU an allocation rarely fails (the kernel kills the process instead), so halving on out-of-memory is
#: not enough (4 GiB, 1 GiB, 1 GiB in fp32).
LOGITS_BUDGET = {"cuda": 2**30, "mps": 2**28, "cpu": 2**28}


def vocab_size(model: Any, tokenizer: Any) -> int:
    """The model's vocabulary size (its config's, else the tokenizer's length)."""
    config = getattr(model, "config", None)
    size = getattr(config, "vocab_size", None)
    return int(size) if size else max(1, len(tokenizer))


def scorer_batcher(
    model: Any,
    tokenizer: Any,
    device: str,
    batch_size: int | str,
    max_batch_size: int | None,
    auto_start: Mapping[str, int],
) -> Batcher:
    """A scorer's :class:`Batcher`: ``batch_size`` items per batch, or for ``auto`` a start at ``max_batch_size``
    or the device's ``auto_start`` (the CPU's for another device), halved on out-of-memory, with a batch's logits
    bounded by :data:`LOGITS_BUDGET`."""
    if batch_size != "auto":
        return Batcher(int(batch_size))
    dev = device.split(":")[0]
    cells = max(1, LOGITS_BUDGET.get(dev, LOGITS_BUDGET["cpu"]) // vocab_size(model, tokenizer))
    return Batcher(max_batch_size or auto_start.get(dev, auto_start["cpu"]), max_cells=cells)


class Batcher:
    """Runs a batch function over items sorted by length; halves the batch size on out-of-memory.

    ``batch_size`` is the starting (and maximal) number of items per batch. ``max_cells`` optionally bounds
    ``items x padded length`` per batch (a proxy for the memory of the logits), so long items get smaller batches.
    ``batch_size`` is lowered for the rest of the run after an out-of-memory error; :attr:`largest_batch` is the
    largest batch actually run (recorded in the output metadata).
    """

    def __init__(self, batch_size: int, max_cells: int | None = None):
        if batch_size < 1:
            raise ValueError(f"batch size must be >= 1, got {batch_size}")
        self.batch_size = batch_size
        self.max_cells = max_cells
        self.largest_batch = 0
        self.n_batches = 0  # forward passes that returned (tests count them)
        self.n_oom = 0

    def _size_for(self, lengths: Sequence[int], start: int) -> int:
        """Items in the batch that starts at ``start`` of ``lengths`` (the items' lengths in run order)."""
        size = min(self.batch_size, len(lengths) - start)
        if self.max_cells is not None:
            while size > 1 and size * max(lengths[start : start + size]) > self.max_cells:
                longest = max(1, max(lengths[start : start + size]))
                size = max(1, min(size - 1, self.max_cells // longest))
        return size

    def run(
        self,
        lengths: Sequence[int],
        fn: Callable[[list[int]], list[R]],
        desc: str = "scoring",
        unit: str = "sent",
        order: Sequence[int] | None = None,
    ) -> list[R]:
        """Call ``fn(indices)`` on batches of item indices (longest items first, or in ``order``: a permutation of
        the indices); return results in input order."""
        if order is None:
            order = sorted(range(len(lengths)), key=lambda i: (-lengths[i], i))
        elif sorted(order) != list(range(len(lengths))):
            raise ValueError("order must be a permutation of the item indices")
        ordered_lengths = [lengths[i] for i in order]
        results: list[R | None] = [None] * len(lengths)
        # Same settings as unstereo.log.progress: plain lines every 10 s when stderr is a log file.
        bar = tqdm(
            total=len(order),
            desc=desc,
            unit=unit,
            file=sys.stderr,
            mininterval=0.1 if sys.stderr.isatty() else 10.0,
        )
        pos = 0
        while pos < len(order):
            size = self._size_for(ordered_lengths, pos)
            batch = order[pos : pos + size]
            try:
                out = fn(batch)
            except Exception as exc:
                if not is_oom(exc):
                    raise
                free_memory()
                self.n_oom += 1
                if len(batch) == 1:
                    raise OutOfMemory(
                        f"out of memory with batch size 1 (item length {lengths[batch[0]]}); use a smaller "
                        "dtype or another device"
                    ) from exc
                self.batch_size = max(1, len(batch) // 2)
                log.warning("out of memory with batch size %d; halving to %d", len(batch), self.batch_size)
                continue
            if len(out) != len(batch):
                raise RuntimeError(f"batch function returned {len(out)} results for {len(batch)} items")
            for i, r in zip(batch, out, strict=True):
                results[i] = r
            self.n_batches += 1
            self.largest_batch = max(self.largest_batch, len(batch))
            pos += len(batch)
            bar.update(len(batch))
        bar.close()
        return results  # type: ignore[return-value]
