"""64-bit keys of words and hashes of strings, compiled: the keys the counter's table is looked up by, and the hash
that splits a merge's words into parts.

A token of <= 8 bytes is its bytes as a little-endian key (low byte = first letter, never 0); a longer token gets a
hash with low byte 0 plus an independent check hash, compared on every hit so that a collision is reported, never
counted (the numpy path's :func:`~unstereo.unstereoeval.corpus.tokenize.token_keys` gives the same keys for tokens of up to 32
bytes). :func:`string_hashes` hashes arrow strings for :func:`~unstereo.unstereoeval.corpus.parts.partition`.
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus.jit import AVAILABLE, njit
from unstereo.unstereoeval.corpus.tokenize import _MASKS, _mix

_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _key(words, start, end):
    """(key, check) of the token at ``start:end`` of the buffer viewed as little-endian uint64 ``words`` (check 0
    for tokens of <= 8 bytes)."""
    length = end - start
    if length <= 8:
        return _short_key(words[start >> 3], words[(start >> 3) + 1], start, end), np.uint64(0)
    h = _mix(np.uint64(length) ^ np.uint64(0x243F6A8885A308D3))
    c = _mix(np.uint64(length) ^ np.uint64(0x13198A2E03707344))
    pos = start
    while pos < end:
        w = _short_key(words[pos >> 3], words[(pos >> 3) + 1], pos, min(pos + 8, end))
        h = _mix(h ^ w)
        c = _mix((c + w) * _GOLDEN)
        pos += 8
    return h & np.uint64(0xFFFFFFFFFFFFFF00), c


def _short_key(lo, hi, start, end):
    """The key of a token of <= 8 bytes at byte ``start`` (its first 8 bytes for a longer one), cut without a
    branch out of ``lo, hi``: the buffer's little-endian uint64 words ``start // 8`` and the one after. (Scalars,
    not the array: see :mod:`.jit` on reference counting.)"""
    shift = np.uint64((start & 7) * 8)
    # (x << (63 - shift)) << 1: a shift by 64 when shift is 0 would be undefined
    key = (lo >> shift) | ((hi << (np.uint64(63) - shift)) << np.uint64(1))
    return key & _MASKS[min(end - start, 8)]


def _slot(key, mask):
    """The hash-table slot (``mask``: the number of slots - 1) where a search for ``key`` starts."""
    return ((key * _GOLDEN) >> np.uint64(32)) & mask  # high bits of the product: short keys spread too


def _word_keys(words, starts, ends, keys, checks):
    """The (key, check) of each token ``starts[i]:ends[i]`` of ``words`` (as :func:`_key`) into ``keys, checks``."""
    for i in range(starts.size):
        keys[i], checks[i] = _key(words, starts[i], ends[i])


def _string_hashes(offsets, data):
    """A 64-bit hash of each string ``data[offsets[i]:offsets[i + 1]]`` (FNV-1a over its bytes, then the splitmix64
    finaliser so that every bit depends on every byte)."""
    out = np.empty(offsets.size - 1, np.uint64)
    for i in range(out.size):
        h = np.uint64(0xCBF29CE484222325)
        for k in range(offsets[i], offsets[i + 1]):
            h = (h ^ np.uint64(data[k])) * np.uint64(0x100000001B3)
        out[i] = _mix(h)
    return out


if AVAILABLE:
    _mix = njit(cache=True, inline="always")(_mix)  # the numpy path's splitmix64 finaliser, on scalars
    _key = njit(cache=True)(_key)
    _slot = njit(cache=True, inline="always")(_slot)
    _short_key = njit(cache=True, inline="always")(_short_key)
    word_keys = njit(cache=True)(_word_keys)
    string_hashes = njit(cache=True, nogil=True)(_string_hashes)
