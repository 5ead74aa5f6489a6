"""The compiled counting loop: one pass over a batch's tokens instead of ~20 numpy passes (same definitions as the
numpy path of :class:`~unstereo.unstereoeval.corpus.fast.FastCounter`; the tests hold both to the plain reference).

:func:`count` gives every token its key (:mod:`.hashing`), finds its word in the vocabulary table
(:mod:`.word_table`; unseen words are inserted, their token indices returned, so Python decodes only new words) and
counts it in the same slot. At each document end the document's ordered position pairs and the co-occurrences of
its target occurrences within the window are counted: words of the first ``dense_rows`` ids in a dense array, the
others in a hash table of ``[code + 1, count]`` slots (:func:`co_items` reads both out).

The table's slot of the token 16 ahead, and the cells of the next target's window, are prefetched: a shard's
vocabulary table (~100 MB) is far larger than the caches, and without it each rare word stalls the loop for a
memory round trip (the kernel took ~40 % less time on a 1 GB synthetic shard). The keys are computed when their
slot is requested and kept in a ring until their token comes, so a long word's slot is requested too.
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus.hashing import _key, _short_key, _slot
from unstereo.unstereoeval.corpus.jit import AVAILABLE, njit, prefetch
from unstereo.unstereoeval.corpus.word_table import _ID, SLOT, _probe

PREFETCH = 16  # tokens ahead whose hash-table slot is requested from memory before it is needed
RING = 32  # keys computed ahead, kept until their token is counted (a power of two > PREFETCH)


def _sparse_grow(sp):
    """The sparse table ``sp`` rehashed into one twice its size."""
    new = np.zeros(2 * sp.size, np.uint64)
    mask = new.size // 2 - 1
    for s in range(0, sp.size, 2):
        if sp[s] != 0:
            e = np.int64(_slot(sp[s], np.uint64(mask)))
            while new[2 * e] != 0:
                e = (e + 1) & mask
            new[2 * e] = sp[s]
            new[2 * e + 1] = sp[s + 1]
    return new


def _sparse_reserve(sp, nsp, more):
    """The sparse table ``sp`` holding ``nsp`` codes, or a copy grown by doubling, so that ``more`` new codes keep
    it at or below 70 % load."""
    while 10 * (nsp + more) > 7 * (sp.size // 2):
        sp = _sparse_grow(sp)
    return sp


def _sparse_add(sp, code):
    """Count one co-occurrence ``code`` (``w * n_targets + g``) in the open-addressing table ``sp`` (slots
    ``[code + 1, count]``), which has room (:func:`_sparse_reserve`); returns 1 if the code is new, else 0. (It
    never replaces the table: an array that an inlined helper returns costs reference counting per call.)"""
    key = np.uint64(code + 1)
    mask = sp.size // 2 - 1
    s = np.int64(_slot(key, np.uint64(mask)))
    while True:
        k = sp[2 * s]
        if k == key:
            sp[2 * s + 1] += np.uint64(1)
            return 0
        if k == 0:
            sp[2 * s] = key
            sp[2 * s + 1] = np.uint64(1)
            return 1
        s = (s + 1) & mask


def _co_items(dense, n_targets, dense_rows, n_words, sp, nsp):
    """A run's co-occurrence rows as (codes ``w * n_targets + g``, counts) in one pair of arrays (no
    concatenation: fresh pages are slow to map here): the nonzero cells of the target-major dense counts
    (``dense[g * dense_rows + w]``, words below ``n_words``) in (g, w) order, as ``np.nonzero`` gives them, then
    the ``nsp`` codes of the sparse table ``sp`` (slots ``[code + 1, count]``) in slot order."""
    nnz = 0
    for g in range(n_targets):
        for w in range(n_words):
            nnz += dense[g * dense_rows + w] != 0
    codes, counts = np.empty(nnz + nsp, np.int64), np.empty(nnz + nsp, np.int64)
    j = 0
    for g in range(n_targets):
        for w in range(n_words):
            c = dense[g * dense_rows + w]
            if c != 0:
                codes[j], counts[j] = w * n_targets + g, c
                j += 1
    for s in range(0, sp.size, 2):
        if sp[s] != 0:
            codes[j] = np.int64(sp[s] - np.uint64(1))
            counts[j] = np.int64(sp[s + 1])
            j += 1
    return codes, counts


def _document(kept, m, dense, dense_rows, n_targets, window, sp, nsp, at):
    """Co-occurrences of one document's kept tokens (infos): words below ``dense_rows`` in ``dense``, the others
    in the sparse table; returns (sparse table, its distinct codes). The cells of the next target's window are
    prefetched while this one's are counted (``at``: scratch for the target positions)."""
    nt = 0
    for p in range(m):
        at[nt] = p
        nt += ((kept[p] >> np.uint64(32)) & np.uint64(0xFFFF)) != 0
    for i in range(nt + 1):
        if i < nt:
            _fetch_window(kept, at[i], m, window, dense, dense_rows, n_targets, sp)
        if i > 0:
            if 10 * (nsp + 2 * window) > 7 * (sp.size // 2):  # room for this window's codes
                sp = _sparse_reserve(sp, nsp, 2 * window)
            nsp += _window(kept, at[i - 1], m, dense, dense_rows, n_targets, window, sp)
    return sp, nsp


def _window(kept, p, m, dense, dense_rows, n_targets, window, sp):
    """Count the co-occurrences of the target at ``p`` with the kept tokens of its window; returns the number of
    new codes in the sparse table ``sp`` (which has room for them). A function of its own: where the table can
    be replaced (:func:`_document`), numba counts references to it at every cell."""
    g = np.int64((kept[p] >> np.uint64(32)) & np.uint64(0xFFFF)) - 1
    row = g * dense_rows
    new = 0
    for q in range(max(0, p - window + 1), min(m, p + window)):
        if q == p:
            continue
        w = np.int64(kept[q] & _ID)
        if w < dense_rows:
            dense[row + w] += 1
        else:
            new += _sparse_add(sp, w * n_targets + g)
    return new


def _fetch_window(kept, p, m, window, dense, dense_rows, n_targets, sp):
    """Prefetch the cells the window of the target at ``p`` will count."""
    g = np.int64((kept[p] >> np.uint64(32)) & np.uint64(0xFFFF)) - 1
    mask = np.uint64(sp.size // 2 - 1)
    for q in range(max(0, p - window + 1), min(m, p + window)):
        w = np.int64(kept[q] & _ID)
        if w < dense_rows:
            prefetch(dense, g * dense_rows + w)
        else:
            prefetch(sp, 2 * np.int64(_slot(np.uint64(w * n_targets + g + 1), mask)))


def _count(
    words,
    edges,
    ntok,
    t,
    table,
    nwords,
    new_tok,
    kept,
    m,
    dense,
    dense_rows,
    n_targets,
    window,
    sp,
    nsp,
):
    """Count the tokens ``edges[2 * k]:edges[2 * k + 1]``, k = t, t + 1, ... < ``ntok`` (of
    :func:`~unstereo.unstereoeval.corpus.token_edges.edges`; a NUL, key 0, ends a document) of a batch's buffer viewed as
    little-endian uint64 ``words`` (a key of <= 8 bytes is cut out of two of them, without a branch). Unseen words
    get the ids ``nwords, nwords + 1, ...`` (their token indices into ``new_tok``). ``kept[:m]`` holds the infos of
    the kept tokens of the document in progress (carried over when the call stops early; the batch's last document
    ends with the batch).

    Stops early, at a token, when one more word would fill the table beyond half: the caller grows it and calls
    again from the returned token. Returns (token reached, new words, m, kept tokens, ordered position pairs, the
    sparse table of the co-occurrences ``w * n_targets + g`` of the words beyond the dense rows (``sp``, or a grown
    copy), its distinct codes, the id of a word whose key collides with a token's or -1, that token's index); a
    collision stops it too."""
    limit = table.size // SLOT // 2
    mask = np.uint64(table.size // SLOT - 1)
    at = np.empty(kept.size, np.int64)
    w1 = window - 1
    nnew = 0
    n_tokens = 0
    n_pairs = 0
    ring_keys = np.empty(RING, np.uint64)
    ring_checks = np.empty(RING, np.uint64)
    for a in range(t, min(t + PREFETCH, ntok)):
        ring_keys[a & (RING - 1)], ring_checks[a & (RING - 1)] = _key(words, edges[2 * a], edges[2 * a + 1])
        prefetch(table, np.int64(_slot(ring_keys[a & (RING - 1)], mask)) * SLOT)
    while t < ntok:
        a = t + PREFETCH
        if a < ntok:  # the key of a token ahead, and its slot requested from memory
            s, e = edges[2 * a], edges[2 * a + 1]
            ka = _short_key(words[s >> 3], words[(s >> 3) + 1], s, e)
            ca = np.uint64(0)
            if e - s > 8:
                ka, ca = _key(words, s, e)
            ring_keys[a & (RING - 1)], ring_checks[a & (RING - 1)] = ka, ca
            prefetch(table, np.int64(_slot(ka, mask)) * SLOT)
        key = ring_keys[t & (RING - 1)]
        check = ring_checks[t & (RING - 1)]
        if key == 0:  # a document ends
            n_tokens += m
            n_pairs += 2 * (w1 * m - w1 * (w1 + 1) // 2) if m > w1 else m * (m - 1)
            sp, nsp = _document(kept, m, dense, dense_rows, n_targets, window, sp, nsp, at)
            m = 0
            t += 1
            continue
        e = _probe(table, key)
        if table[e] == 0:
            if nwords + nnew + 1 > limit:
                return t, nnew, m, n_tokens, n_pairs, sp, nsp, -1, -1
            table[e] = key
            table[e + 1] = nwords + nnew
            table[e + 3] = check
            new_tok[nnew] = t
            nnew += 1
        elif table[e + 3] != check:
            return t, nnew, m, n_tokens, n_pairs, sp, nsp, np.int64(table[e + 1] & _ID), t
        info = table[e + 1]
        keep = np.int64(1) - np.int64(info >> np.uint64(48))
        table[e + 2] += np.uint64(keep)
        kept[m] = info
        m += keep  # no branch: stop words are ~45 % of tokens, a branch would mispredict
        t += 1
    if t >= ntok:  # the batch's last document ends here
        n_tokens += m
        n_pairs += 2 * (w1 * m - w1 * (w1 + 1) // 2) if m > w1 else m * (m - 1)
        sp, nsp = _document(kept, m, dense, dense_rows, n_targets, window, sp, nsp, at)
        m = 0
    return t, nnew, m, n_tokens, n_pairs, sp, nsp, -1, -1


if AVAILABLE:
    _sparse_grow = njit(cache=True)(_sparse_grow)
    _sparse_reserve = njit(cache=True)(_sparse_reserve)
    _sparse_add = njit(cache=True, inline="always")(_sparse_add)
    _fetch_window = njit(cache=True, inline="always")(_fetch_window)
    _window = njit(cache=True)(_window)
    _document = njit(cache=True)(_document)
    co_items = njit(cache=True, nogil=True)(_co_items)
    count = njit(cache=True, nogil=True)(_count)
