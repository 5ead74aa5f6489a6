"""Compiled token edges of a batch: :func:`edges` finds the tokens in one branch-free byte pass (the same spans as
:func:`~unstereo.unstereoeval.corpus.tokenize.token_spans`, as start/end pairs in one array), :func:`join_spans` gathers the
bytes of some of them (a counter's new words) for one decode.
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus.jit import AVAILABLE, HIGH, LOW7, code_point, load8, njit, ones


def _edges(arr, n, alpha):
    """The tokens in the first ``n`` bytes (as :func:`~unstereo.unstereoeval.corpus.tokenize.token_spans` with separators:
    letters by ``alpha``, the code point table, and NUL) as ``(edges, k)``: token i is ``edges[2 * i]:edges[2 * i
    + 1]``, ``k // 2`` tokens (the counting loop reads them so, without copies into start and end arrays).
    Branch-free at token edges (every byte writes its offset, the count moves on only at an edge): a branch there
    would mispredict at nearly every token. Eight ASCII bytes at a time: their classes from one 8-byte load
    (:func:`_ascii_classes`), the edges among them as the bits where a class differs from the one before; a block
    with a non-ASCII byte goes byte by byte (a continuation byte keeps its lead byte's class). Indices are uint64
    where they cannot be negative (numba leaves out the wraparound of negative ones: 10 % faster)."""
    edges = np.empty(n + 8, np.int64)
    k = np.uint64(0)
    cur = np.uint64(0)  # the class of the last byte
    i = 0
    while i < n:
        end = min(i + 8, n)
        if end - i == 8:
            w = load8(arr, i)
            if w & HIGH == 0:
                bits = np.uint64(_ascii_classes(w))
                x = ((bits ^ ((bits << np.uint64(1)) | cur)) & np.uint64(0xFF)) << np.uint64(4)
                for j in range(8):  # the stores do not wait on each other: k moves once per block
                    edges[k + np.uint64(j)] = i + _EDGE_AT[x + np.uint64(j)]
                k += np.uint64(_EDGE_AT[x + np.uint64(8)])
                cur = bits >> np.uint64(7)
                i = end
                continue
        for p in range(i, end):
            b = arr[p]
            prev = cur
            if b < 0x80:
                cur = np.uint64(((b >= 97) & (b <= 122)) | (b == 0))
            elif b >= 0xC0:  # a lead byte: the class of its character; continuation bytes keep it
                cur = np.uint64(alpha[code_point(arr, p)])
            edges[k] = p
            k += np.uint64(cur != prev)
        i = end
    edges[k] = n
    return edges, np.int64(k + cur)


_C1F, _C05 = ones(0x1F), ones(0x05)
_GATHER = np.uint64(0x0102040810204080)  # times bits at 8j: bit j of the top byte is bit 8j
# for each byte x of edge bits, at 16 * x: the offsets of its set bits, then (at 16 * x + 8) how many
_EDGE_AT = np.zeros(256 * 16, np.int64)
for _x in range(256):
    _at = [j for j in range(8) if _x >> j & 1]
    _EDGE_AT[16 * _x : 16 * _x + len(_at)], _EDGE_AT[16 * _x + 8] = _at, len(_at)
del _x, _at


def _ascii_classes(w):
    """The token class of each of the 8 ASCII bytes of ``w`` (a-z or NUL: 1, else 0) as bit j for byte j. On
    7-bit bytes ``b + c`` sets the high bit iff ``b >= 0x80 - c``, with no carry into the next byte."""
    letter = (w + _C1F) & ~(w + _C05)  # >= 'a' and not >= '{'
    cls = (letter | ~(w + LOW7)) & HIGH  # or not >= 1 (NUL)
    return np.int64(((cls >> np.uint64(7)) * _GATHER) >> np.uint64(56))


def _join_spans(arr, starts, ends):
    """The bytes ``arr[starts[i]:ends[i]]`` joined with a 0x01 byte (never part of a word) between them."""
    n = starts.size
    size = n - 1
    for i in range(n):
        size += ends[i] - starts[i]
    out = np.empty(max(size, 0), np.uint8)
    j = 0
    for i in range(n):
        if i > 0:
            out[j] = 1
            j += 1
        for k in range(starts[i], ends[i]):
            out[j] = arr[k]
            j += 1
    return out


if AVAILABLE:
    _ascii_classes = njit(cache=True, inline="always")(_ascii_classes)
    edges = njit(cache=True, nogil=True)(_edges)
    join_spans = njit(cache=True, nogil=True)(_join_spans)
