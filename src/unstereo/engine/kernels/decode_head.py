"""The LM head of a decode step, a block of the vocabulary at a time, into logits the caller keeps.

A decode step's head product at once gives a fresh ``[rows, vocabulary]`` fp32 tensor: 34 MB at 32 rows of
Gemma-3's 262k words, 105 MB at 100. Above 32 MB glibc's allocator maps such a tensor anew every step and the kernel
zeroes it page by page as the product first writes it: 8 ms a step at 32 rows, 27 ms at 100, on a 2-core AMD Zen 5
(about 1 us a 4 KiB page; docs/performance.md); the int8 product makes three such tensors. Here the head runs
:data:`BLOCK` words at a time: each block's output (a few MB) is memory the allocator hands back at once, is scaled
and capped while it is in cache, and is copied into the caller's logits buffer. A block's products are the whole
product's columns, bit for bit (each output is reduced over the same inputs in the same order whatever the block,
in oneDNN's fp32 products and in the int8 ones alike): :meth:`DecodeHead.build` checks that on a probe and keeps the
head whole (one block) where it does not hold. The fp32 blocks' weights may be packed once (:func:`.onednn.pack`),
like the body's, where that too gives the same products.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from unstereo.engine.kernels.lm_head import LMHead
from unstereo.engine.kernels.onednn import linear, pack, packed_linear, packing_works

#: Vocabulary words per block: 16,384 x 32 rows is 2 MiB of output. 8,192 to 32,768 timed the same (AMD Zen 5).
BLOCK = 16384
# Row counts the blocks are checked at against the whole product: one row (its own kernel) and decode batches.
_PROBE_ROWS = (1, 2, 7, 32, 100)


@dataclass
class DecodeHead:
    """``head``'s logits by blocks of its vocabulary (:data:`BLOCK`, or one block: the whole head). The products:
    ``int8``, each block's :class:`.int8.Int8Linear`; else fp32 on oneDNN, by ``packed`` (each block's weight in
    oneDNN's layout, taken at :data:`.onednn.PACKED_ROWS` rows) or the plain weight's blocks."""

    head: LMHead
    blocks: list[slice]
    packed: list[Any] | None = None
    int8: list[Any] | None = None

    @classmethod
    def build(cls, head: LMHead, packed: bool = True, int8: bool = False) -> DecodeHead:
        """The blocked head of ``head`` (fp32 weight on the CPU): fp32 products on oneDNN, with packed blocks when
        ``packed`` and they give the same products; ``int8``: int8 products. One block where the blocks' products
        differ from the whole product's on the probe."""
        from unstereo.engine.kernels.int8 import Int8Linear

        vocab = head.weight.shape[0]
        blocks = [slice(a, min(a + BLOCK, vocab)) for a in range(0, vocab, BLOCK)]
        if int8:
            # the head's input is the final norm's output, the hidden size wide: no fp32 outlier columns
            # (.int8.keeps_outliers); a bf16 weight is widened a block at a time
            def make(b: slice) -> Int8Linear:
                return Int8Linear(head.weight[b], _part(head.bias, b), outliers=False)

            quantised = [make(b) for b in blocks]
            parts = cls(head, blocks, int8=quantised)
            if len(blocks) == 1:
                return parts
            # checked on the first two blocks against one product over both: an int8 form of the whole head at once
            # would widen it all to fp32 (0.9 GB for the 1.5B's) for the check
            span = slice(0, blocks[1].stop)
            pair = cls(
                replace(head, weight=head.weight[span], bias=_part(head.bias, span)),
                blocks[:2],
                int8=quantised[:2],
            )
            if _same(pair, make(span)):
                return parts
            return cls(head, [slice(0, vocab)], int8=[make(slice(0, vocab))])
        plain = cls(head, blocks)
        if len(blocks) > 1 and not _same(plain, lambda x: linear(x, head.weight, head.bias)):
            plain = cls(head, [slice(0, vocab)])
        if not packed:
            return plain
        # one block of each width is probed for the others
        shapes = {(b.stop - b.start): head.weight[b] for b in plain.blocks}
        if not all(packing_works(w) for w in shapes.values()):
            return plain
        return cls(head, plain.blocks, [pack(head.weight[b]) for b in plain.blocks])

    def __call__(self, hidden: Any, out: Any = None, packed: bool = True) -> Any:
        """fp32 logits ``[n, vocabulary]`` of ``hidden`` ``[n, hidden]``, written into ``out`` (a new tensor when
        None) and returned; ``packed`` False: the plain fp32 blocks (benchmarks)."""
        import torch

        head = self.head
        if out is None:
            out = torch.empty((hidden.shape[0], head.weight.shape[0]), dtype=torch.float32)
        for i, block in enumerate(self.blocks):
            weight, bias = head.weight[block], _part(head.bias, block)
            if self.int8 is not None:
                logits = self.int8[i](hidden)
            elif packed and self.packed is not None:
                logits = packed_linear(hidden, weight, self.packed[i], bias)
            else:
                logits = linear(hidden, weight, bias)
            out[:, block] = head.scale_and_cap_(logits)
        return out


def _part(bias: Any, block: slice) -> Any:
    return None if bias is None else bias[block]


def _same(blocked: DecodeHead, whole: Any) -> bool:
    """Whether ``blocked`` gives ``whole``'s products (scaled and capped) bit for bit at every probe row count
    (random inputs, one column 40 times the others: int8's outlier path)."""
    import torch

    g = torch.Generator().manual_seed(0)
    for n in _PROBE_ROWS:
        x = torch.randn(n, blocked.head.weight.shape[1], generator=g)
        x[:, 0] *= 40
        if not torch.equal(blocked(x), blocked.head.scale_and_cap_(whole(x))):
            return False
    return True
