"""The compiled counter's vocabulary: an open-addressing hash table from a word's 64-bit key
(:mod:`.hashing`) to everything the count needs about the word, so a token costs one cache line however large the
vocabulary.

A slot is ``[key, info, count, check]`` (key 0 = empty) with ``info = id | (target index + 1) << 32 | stop << 48``.
Stop words and targets are inserted first (:func:`insert`), so every word met later is neither; the counting loop
(:func:`~unstereo.unstereoeval.corpus.count_loop.count`) inserts the others as they come.
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus.hashing import _slot
from unstereo.unstereoeval.corpus.jit import AVAILABLE, njit

SLOT = 4  # uint64 entries per slot: key (0 = empty), info, count, check
_ID = np.uint64(0xFFFFFFFF)


def _probe(table, key):
    """Index (in entries) of the slot holding ``key``, or of the empty slot where it goes."""
    mask = np.uint64(table.size // SLOT - 1)
    s = _slot(key, mask)
    while True:
        k = table[SLOT * s]
        if k == key or k == 0:
            return SLOT * s
        s = (s + np.uint64(1)) & mask


def _insert(table, keys, checks, infos):
    """Put words with their info (see the module doc) into the table; returns the index of a key already there
    with another check hash (a collision) or -1."""
    for i in range(keys.size):
        e = _probe(table, keys[i])
        if table[e] == keys[i] and table[e + 3] != checks[i]:
            return i
        table[e] = keys[i]
        table[e + 1] = infos[i]
        table[e + 3] = checks[i]
    return -1


def _rehash(table, new_table):
    """Insert every slot of ``table`` into the empty ``new_table``."""
    for s in range(0, table.size, SLOT):
        if table[s] != 0:
            e = _probe(new_table, table[s])
            for k in range(SLOT):
                new_table[e + k] = table[s + k]


def _unigrams(table, out):
    """Counts per word id (``out[id]``) from the table."""
    for s in range(0, table.size, SLOT):
        if table[s] != 0:
            out[np.int64(table[s + 1] & _ID)] = np.int64(table[s + 2])


if AVAILABLE:
    _probe = njit(cache=True, inline="always")(_probe)
    insert = njit(cache=True)(_insert)
    rehash = njit(cache=True, nogil=True)(_rehash)
    unigrams = njit(cache=True, nogil=True)(_unigrams)
