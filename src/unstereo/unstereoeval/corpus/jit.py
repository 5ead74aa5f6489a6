"""What the compiled (numba) kernels of the corpus counter share: whether numba is there, LLVM intrinsics numba
lacks, byte-wise (SWAR) masks, and UTF-8 lead-byte decoding.

The kernels (:mod:`.hashing`, :mod:`.word_table`, :mod:`.count_loop`, :mod:`.row_sort`, :mod:`.token_edges`,
:mod:`.lower_scan`, :mod:`.json_strings`, :mod:`.jsonl_scan`) are plain Python functions, compiled where numba is
importable (the ``corpus`` extra installs it; :data:`AVAILABLE`): each module wraps its own functions once, at the
end, with ``njit(cache=True)``, and a kernel that calls a helper of another module calls that module's compiled
one. Without numba the counter stays on numpy and nothing here is called.

- Compiled once per machine (numba's on-disk cache), about 5 s for all of them. Numba's cache checks only the source
  file of the function it compiled: after editing a helper that a kernel of another module inlines (this module,
  :mod:`.hashing`, ...), delete the ``*.nbi``/``*.nbc`` files beside the sources (``__pycache__``) or in
  ``NUMBA_CACHE_DIR``, or that kernel keeps the old helper.
- Helpers inlined into the hot loops take scalars, never an array, and never return one: numba then counts
  references to the array (two atomic operations) at every call where it cannot prove them useless, which had
  cost a sixth of the counting time (5.8 s instead of 6.8 s for a 1.25 GB synthetic shard's spans and counts).
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit
    from numba.cpython.unsafe.numbers import trailing_zeros
except ImportError:  # pragma: no cover - exercised where numba is missing
    AVAILABLE = False
    njit = trailing_zeros = None
else:
    AVAILABLE = True


def _prefetch_intrinsic():
    """``prefetch(array, index)``: ask for the cache line of ``array[index]`` (LLVM's prefetch; a hint, never a
    fault). The table of a shard's vocabulary (~100 MB) is far larger than the caches: without it every rare word
    is a stall of a memory round trip the loop cannot hide, as the next token's lookup depends on this one's."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, array, index):
        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0i8"
            )
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
            # read, high temporal locality, data cache
            builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return types.void(array, index), codegen

    return prefetch


def _unaligned_intrinsics():
    """``load8(array, i)`` and ``store8(array, i, value)``: the 8 bytes at byte offset ``i`` of a uint8 array as a
    little-endian uint64, at any alignment (LLVM loads and stores of alignment 1; numba has none)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    def pointer(context, builder, array_type, array, index):
        ary = context.make_array(array_type)(context, builder, array)
        return builder.bitcast(builder.gep(ary.data, [index]), ir.IntType(64).as_pointer())

    @intrinsic
    def load8(typingctx, array, index):
        def codegen(context, builder, signature, args):
            return builder.load(pointer(context, builder, signature.args[0], *args), align=1)

        return types.uint64(array, index), codegen

    @intrinsic
    def store8(typingctx, array, index, value):
        def codegen(context, builder, signature, args):
            builder.store(args[2], pointer(context, builder, signature.args[0], args[0], args[1]), align=1)
            return context.get_dummy_value()

        return types.void(array, index, types.uint64), codegen

    return load8, store8


def ones(b):
    """The byte ``b`` in each of the 8 bytes of a uint64."""
    return np.uint64(b * 0x0101010101010101)


HIGH, LOW7 = ones(0x80), ones(0x7F)


def code_point(arr, i):
    """The code point of the UTF-8 character whose lead byte (>= 0xC0) is at ``i`` (as tokenize.code_points)."""
    b0 = np.int64(arr[i])
    b1 = np.int64(arr[i + 1]) & 0x3F
    b2 = np.int64(arr[i + 2]) & 0x3F
    b3 = np.int64(arr[i + 3]) & 0x3F
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | b1
    if b0 < 0xF0:
        return ((b0 & 0x0F) << 12) | (b1 << 6) | b2
    return min(((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3, 0x10FFFF)


if AVAILABLE:
    prefetch = _prefetch_intrinsic()
    load8, store8 = _unaligned_intrinsics()
    code_point = njit(cache=True, inline="always")(code_point)
else:  # pragma: no cover - only compiled code calls them
    prefetch = load8 = store8 = None
