"""Compiled scan of a batch lowercased as ASCII (:func:`~unstereo.unstereoeval.corpus.tokenize.encode_batch`): the NULs inside
texts, and the space-delimited stretches holding a character that ``str.lower`` still changes (the only ones
Python has to lowercase).
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus.jit import AVAILABLE, code_point, njit


def _scan(arr, n, lower_changes):
    """One pass over a batch lowercased as ASCII (:func:`~unstereo.unstereoeval.corpus.tokenize.encode_batch`): the number of
    NUL bytes among the first ``n`` and the space-delimited stretches (start, end) holding a character that
    ``str.lower`` still changes (``lower_changes``: the table of :func:`~unstereo.unstereoeval.corpus.tokenize
    .lower_changes_table`), one per character, in order. (The counting loop stays minimal, ~2 GB/s; the stretches
    are found in a second loop from the first such character.)"""
    nuls = 0
    k = 0
    first = n
    for i in range(n):
        b = arr[i]
        if b == 0:
            nuls += 1
        elif b >= 0xC0 and lower_changes[code_point(arr, i)]:
            first = min(first, i)
            k += 1
    pos = np.empty(k, np.int64)
    j = 0
    for i in range(first, n):
        if arr[i] >= 0xC0 and lower_changes[code_point(arr, i)]:
            pos[j] = i
            j += 1
    lo, hi = stretches(arr, n, pos)
    return nuls, lo, hi


def _stretches(arr, n, pos):
    """The space-delimited stretches (start, end) of the first ``n`` bytes around the offsets ``pos`` (in order),
    one per offset, as :func:`scan` gives them; one walk per stretch."""
    lo, hi = np.empty(pos.size, np.int64), np.empty(pos.size, np.int64)
    a = e = -1
    for k in range(pos.size):
        p = pos[k]
        if p >= e:
            a = p
            while a > 0 and arr[a - 1] != 32:
                a -= 1
            e = p
            while e < n and arr[e] != 32:
                e += 1
        lo[k], hi[k] = a, e
    return lo, hi


if AVAILABLE:
    scan = njit(cache=True, nogil=True)(_scan)
    stretches = njit(cache=True, nogil=True)(_stretches)
