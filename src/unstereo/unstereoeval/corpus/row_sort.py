"""Compiled counting sorts of rows by integer code, O(rows) where a comparison sort of millions of codes takes
seconds: :func:`sorted_rows` puts a run's co-occurrence rows in (word, target) order, :func:`group_sum` sums a merge
part's rows by (word rank, target) code (:func:`~unstereo.unstereoeval.corpus.parts.sum_codes`).
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus.jit import AVAILABLE, njit


def _sorted_rows(keys, counts, rank, n_targets):
    """Co-occurrence rows ``keys = w * n_targets + g`` (distinct) with ``counts`` as (rank[w], g, count) columns in
    (rank, g) order, O(rows) where a comparison sort of millions of codes takes seconds: a counting sort by rank
    (stable), then an insertion sort by g inside each word's rows (at most ``n_targets``; the dense rows come in
    g order already, the sparse words have a few)."""
    n = keys.size
    bins = np.zeros(rank.size + 1, np.int64)
    for i in range(n):
        bins[rank[keys[i] // n_targets] + 1] += 1
    for r in range(rank.size):
        bins[r + 1] += bins[r]
    word, target, count = np.empty(n, np.int64), np.empty(n, np.int64), np.empty(n, np.int64)
    for i in range(n):
        w = keys[i] // n_targets
        r = rank[w]
        d = bins[r]
        word[d], target[d], count[d] = r, keys[i] - w * n_targets, counts[i]
        bins[r] += 1
    start = 0
    for r in range(rank.size):  # bins[r] is now the end of word r's rows
        for j in range(start + 1, bins[r]):
            g, c = target[j], count[j]
            k = j - 1
            while k >= start and target[k] > g:
                target[k + 1], count[k + 1] = target[k], count[k]
                k -= 1
            target[k + 1], count[k + 1] = g, c
        start = bins[r]
    return word, target, count


def _group_sum(codes, counts, n_low):
    """The distinct ``codes`` (``hi * n_low + lo``, non-negative) in ascending order and the sum of ``counts`` of
    each: the rows are put in order of ``hi`` by a counting sort, then each ``hi``'s rows are summed by ``lo`` in
    a scratch row of ``n_low`` cells and the ``lo`` seen are sorted (a handful: a word's targets). O(rows + number
    of hi) against a radix sort's two passes over every row."""
    n = codes.size
    out_codes, out_counts = np.empty(n, np.int64), np.empty(n, np.int64)
    if n == 0:
        return out_codes, out_counts
    n_hi = codes.max() // n_low + 1
    start = np.zeros(n_hi + 1, np.int64)
    for i in range(n):
        start[codes[i] // n_low + 1] += 1
    for h in range(n_hi):
        start[h + 1] += start[h]
    lo, cnt, fill = np.empty(n, np.int64), np.empty(n, np.int64), start[:-1].copy()
    for i in range(n):
        h = codes[i] // n_low
        lo[fill[h]], cnt[fill[h]] = codes[i] - h * n_low, counts[i]
        fill[h] += 1
    scratch, seen, touched = (
        np.zeros(n_low, np.int64),
        np.full(n_low, -1, np.int64),
        np.empty(n_low, np.int64),
    )
    j = 0
    for h in range(n_hi):
        k = 0
        for r in range(start[h], start[h + 1]):
            if seen[lo[r]] != h:
                seen[lo[r]] = h
                scratch[lo[r]] = 0
                touched[k] = lo[r]
                k += 1
            scratch[lo[r]] += cnt[r]
        for a in range(1, k):  # insertion sort: a word has few targets
            x, b = touched[a], a - 1
            while b >= 0 and touched[b] > x:
                touched[b + 1] = touched[b]
                b -= 1
            touched[b + 1] = x
        for a in range(k):
            out_codes[j], out_counts[j] = h * n_low + touched[a], scratch[touched[a]]
            j += 1
    return out_codes[:j], out_counts[:j]


if AVAILABLE:
    sorted_rows = njit(cache=True, nogil=True)(_sorted_rows)
    group_sum = njit(cache=True, nogil=True)(_group_sum)
