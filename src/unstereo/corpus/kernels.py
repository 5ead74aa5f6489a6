"""Compiled (numba) kernels of the fast counter: one loop over a batch's tokens instead of ~20 numpy passes.

Same definitions as the numpy path of :class:`~unstereo.corpus.count.FastCounter` (tokens, stop words, windows,
document ends); the tests hold both to the plain reference. Used when numba is importable (the ``corpus`` extra
installs it); without it the counter stays on numpy (:data:`AVAILABLE`).

- tokens are found by numpy (:func:`~unstereo.corpus.tokenize.token_spans`: vectorised, no branch per byte, which a
  byte loop cannot avoid at every token boundary);
- :func:`assign` gives every token a 64-bit key (tokens of <= 8 bytes are their bytes, low byte = first letter,
  never 0; longer tokens a hash with low byte 0 plus an independent check hash compared on every hit, so a
  collision is reported, never counted) and maps it to a run-wide word id through an open-addressing hash table,
  inserting unseen words (their token indices are returned, so Python decodes only new words).
- :func:`count` walks the token ids document by document: stop words out, unigram counts, ordered position pairs,
  and the co-occurrences of every target occurrence within the window (dense rows in place, others returned).

Compiled once per machine (``cache=True``: numba's on-disk cache), about 5 s.
"""

from __future__ import annotations

import numpy as np

try:
    from numba import njit
except ImportError:  # pragma: no cover - exercised where numba is missing
    AVAILABLE = False
else:
    AVAILABLE = True

SEPARATOR = -1  # id of a document separator in assign's output
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


def _mix(z):
    """splitmix64 finaliser (wrapping uint64 arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def _key(buf, start, end):
    """(key, check) of the token ``buf[start:end]`` (check 0 for tokens of <= 8 bytes)."""
    length = end - start
    if length <= 8:
        key = np.uint64(0)
        for k in range(length):
            key |= np.uint64(buf[start + k]) << np.uint64(8 * k)
        return key, np.uint64(0)
    h = _mix(np.uint64(length) ^ np.uint64(0x243F6A8885A308D3))
    c = _mix(np.uint64(length) ^ np.uint64(0x13198A2E03707344))
    pos = start
    while pos < end:
        w = np.uint64(0)
        for k in range(min(8, end - pos)):
            w |= np.uint64(buf[pos + k]) << np.uint64(8 * k)
        h = _mix(h ^ w)
        c = _mix((c + w) * _GOLDEN)
        pos += 8
    return h & np.uint64(0xFFFFFFFFFFFFFF00), c


def _slot(key, mask):
    return ((key * _GOLDEN) >> np.uint64(32)) & mask  # high bits of the product: short keys spread too


def _find(table, key):
    """Id of ``key`` in the table, -1 if absent (key 0 marks empty slots: never a word)."""
    if key == 0:
        return -1
    mask = np.uint64(table.size // 2 - 1)
    s = _slot(key, mask)
    while True:
        k = table[2 * s]
        if k == key:
            return np.int64(table[2 * s + 1])
        if k == 0:
            return -1
        s = (s + np.uint64(1)) & mask


def _assign(buf, words, starts, ends, t, table, word_checks, nwords, ids, new_tok):
    """Word ids of the tokens ``buf[starts[k]:ends[k]]``, k = t, t + 1, ... (spans of
    :func:`~unstereo.corpus.tokenize.token_spans`; NUL separators are tokens of key 0) into ``ids`` (SEPARATOR for
    separators), inserting unseen words with the ids ``nwords, nwords + 1, ...`` (their token indices into
    ``new_tok``). ``words`` is ``buf`` viewed as little-endian uint64 (a key of <= 8 bytes is cut out of two of them,
    without a branch). ``table`` is the hash table: slot s holds a key at ``2s`` (0 = empty) and its id at ``2s + 1``
    (one cache line per probe). Iterations are independent, so the CPU overlaps the cache misses of a large table.

    Stops early, at a token, when one more word would fill the table beyond half or ``word_checks`` (per word id)
    is full: the caller grows them and calls again from the returned token. Returns (token reached, new words, id
    of a word whose key collides with a token's or -1, that token's index); a collision stops it too."""
    mask = np.uint64(table.size // 2 - 1)
    limit = min(table.size // 4, word_checks.size)
    nnew = 0
    ntok = starts.size
    while t < ntok:
        start = starts[t]
        length = ends[t] - start
        q = start >> 3
        shift = np.uint64((start & 7) * 8)
        # (x << (63 - shift)) << 1: a shift by 64 when shift is 0 would be undefined
        key = (words[q] >> shift) | ((words[q + 1] << (np.uint64(63) - shift)) << np.uint64(1))
        key &= _MASKS[min(length, 8)]
        check = np.uint64(0)
        if length > 8:
            key, check = _key(buf, start, start + length)
        if key == 0:
            ids[t] = SEPARATOR
            t += 1
            continue
        s = _slot(key, mask)
        while True:
            k = table[2 * s]
            if k == key:
                wid = np.int64(table[2 * s + 1])
                if word_checks[wid] != check:
                    return t, nnew, wid, t
                break
            if k == 0:
                if nwords + nnew + 1 > limit:
                    return t, nnew, -1, -1
                wid = nwords + nnew
                table[2 * s] = key
                table[2 * s + 1] = wid
                word_checks[wid] = check
                new_tok[nnew] = t
                nnew += 1
                break
            s = (s + np.uint64(1)) & mask
        ids[t] = wid
        t += 1
    return t, nnew, -1, -1


def _rehash(table, new_table):
    """Insert every entry of ``table`` into the empty ``new_table``."""
    mask = np.uint64(new_table.size // 2 - 1)
    for s in range(table.size // 2):
        key = table[2 * s]
        if key != 0:
            t = _slot(key, mask)
            while new_table[2 * t] != 0:
                t = (t + np.uint64(1)) & mask
            new_table[2 * t] = key
            new_table[2 * t + 1] = table[2 * s + 1]


def _lookup(table, keys, out):
    for i in range(keys.size):
        out[i] = _find(table, keys[i])


def _count(ids, ntok, stop, tid, uni, dense, dense_rows, n_targets, window, kept):
    """Count the tokens ``ids[:ntok]`` document by document (documents end at SEPARATOR).

    Updates ``uni`` (per word id) and ``dense`` (``g * dense_rows + w`` for word ids below ``dense_rows``) in place;
    ``kept`` is scratch space of ``ntok`` ids. Returns (kept tokens, ordered position pairs, sparse co-occurrence
    codes ``w * n_targets + g`` of the other words, one per pair occurrence)."""
    sparse = np.empty(1024, np.int64)
    nsparse = 0
    n_tokens = 0
    n_pairs = 0
    w1 = window - 1
    i = 0
    while i <= ntok:
        # one document: ids[i:j]
        j = i
        m = 0
        while j < ntok and ids[j] != SEPARATOR:
            wid = ids[j]
            kept[m] = wid
            m += not stop[wid]  # no branch: stop words are ~45 % of tokens, a branch would mispredict
            j += 1
        n_tokens += m
        n_pairs += 2 * (w1 * m - w1 * (w1 + 1) // 2) if m > w1 else m * (m - 1)
        for p in range(m):
            wid = kept[p]
            uni[wid] += 1
            g = tid[wid]
            if g < 0:
                continue
            lo = max(0, p - w1)
            hi = min(m, p + window)
            row = g * dense_rows
            for q in range(lo, hi):
                if q == p:
                    continue
                w = kept[q]
                if w < dense_rows:
                    dense[row + w] += 1
                else:
                    code = w * n_targets + g
                    if nsparse == sparse.size:
                        grown = np.empty(2 * sparse.size, np.int64)
                        grown[:nsparse] = sparse[:nsparse]
                        sparse = grown
                    sparse[nsparse] = code
                    nsparse += 1
        i = j + 1
    return n_tokens, n_pairs, sparse[:nsparse]


def _word_keys(buf, starts, ends, keys, checks):
    for i in range(starts.size):
        keys[i], checks[i] = _key(buf, starts[i], ends[i])


if AVAILABLE:
    _mix = njit(cache=True, inline="always")(_mix)
    _key = njit(cache=True)(_key)
    _slot = njit(cache=True, inline="always")(_slot)
    _find = njit(cache=True)(_find)
    assign = njit(cache=True, nogil=True)(_assign)
    rehash = njit(cache=True, nogil=True)(_rehash)
    lookup = njit(cache=True, nogil=True)(_lookup)
    count = njit(cache=True, nogil=True)(_count)
    word_keys = njit(cache=True)(_word_keys)
