"""Tokenization for corpus counts: lowercase, then maximal runs of alphabetic characters (``str.isalpha``).

Two implementations of the same definition:

- :func:`tokenize` returns the tokens of one text as strings (the reference; used by the naive counter);
- :func:`encode_batch` + :func:`token_spans` + :func:`token_keys` work on the UTF-8 bytes of a whole batch of
  documents with numpy, and give every token a 64-bit key without creating a Python string per token (the fast
  counter). Keys of tokens of at most 8 bytes are the bytes themselves (exact); longer tokens get a 56-bit mixed hash
  plus an independent 64-bit check hash, so the counter can verify that equal keys mean equal words.

"Alphabetic" is Python's ``str.isalpha`` on the lowercased text, code point by code point: "don't" gives
"don", "t"; "naïve" is one token; digits, apostrophes, hyphens and combining marks split tokens.
"""

from __future__ import annotations

import hashlib
import re
from functools import cache

import numpy as np

SEP = "\x00"  # document separator inside a batch (not alphabetic; removed from texts first)
DOC_SEP = f" {SEP} "  # spaces keep the separator a token of its own
PAD = 40  # zero bytes after a batch so that 8-byte reads past a token's end stay inside the buffer
MAX_BLOCKS = 4  # tokens up to 32 bytes are hashed with numpy; longer ones (rare) with blake2b one by one

_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


@cache
def alpha_table() -> np.ndarray:
    """Boolean table over all code points: ``chr(i).isalpha()``."""
    return np.fromiter((chr(i).isalpha() for i in range(0x110000)), dtype=bool, count=0x110000)


@cache
def _token_re() -> re.Pattern:
    """A regex whose character class is exactly the code points with ``isalpha()`` (built from the table)."""
    table = alpha_table()
    edges = np.flatnonzero(np.diff(table.astype(np.int8), prepend=0, append=0))
    ranges = []
    for lo, hi in zip(edges[::2], edges[1::2] - 1, strict=True):
        ranges.append(re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}")
    return re.compile("[" + "".join(ranges) + "]+")


def tokenize(text: str) -> list[str]:
    """The tokens of ``text``: lowercase, maximal runs of alphabetic characters."""
    return _token_re().findall(text.lower())


def encode_batch(texts: list[str]) -> tuple[bytes, int]:
    """Lowercase and join ``texts`` with " NUL " (a one-byte token of key 0 that marks document ends), encode as
    UTF-8 and pad; returns ``(buffer, n)``, n = size without padding."""
    joined = DOC_SEP.join(texts)
    if joined.count(SEP) != len(texts) - 1:  # a text holds NUL itself: blank it (it is not a letter anyway)
        joined = DOC_SEP.join(t.replace(SEP, " ") for t in texts)
    data = (joined + SEP * PAD).lower().encode("utf-8", "surrogatepass")
    return data, len(data) - PAD


def letter_mask(arr: np.ndarray, n: int) -> np.ndarray:
    """Boolean mask over the first ``n`` bytes: True where the byte belongs to an alphabetic character."""
    body = arr[:n]
    mask = (body - np.uint8(97)) < np.uint8(26)  # ASCII: after lower() only a-z are letters
    hi = np.flatnonzero(body >= 0x80)
    if hi.size:
        lead = hi[body[hi] >= 0xC0]
        b0 = arr[lead].astype(np.uint32)
        b1 = arr[lead + 1].astype(np.uint32) & 0x3F
        b2 = arr[lead + 2].astype(np.uint32) & 0x3F
        b3 = arr[lead + 3].astype(np.uint32) & 0x3F
        nbytes = 2 + (b0 >= 0xE0) + (b0 >= 0xF0)
        cp = np.where(
            nbytes == 2,
            ((b0 & 0x1F) << 6) | b1,
            np.where(
                nbytes == 3,
                ((b0 & 0x0F) << 12) | (b1 << 6) | b2,
                ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3,
            ),
        )
        alpha = alpha_table()[np.minimum(cp, 0x10FFFF)]
        for k in range(4):
            sel = k < nbytes
            mask[lead[sel] + k] = alpha[sel]
    return mask


def token_spans(arr: np.ndarray, n: int, separators: bool = False) -> tuple[np.ndarray, np.ndarray]:
    """Start and end (exclusive) byte offsets of the tokens in the first ``n`` bytes of ``arr``; with
    ``separators`` the NUL bytes of :func:`encode_batch` are tokens too (key 0)."""
    mask = letter_mask(arr, n)
    if separators:
        mask |= arr[:n] == 0
    mask = mask.view(np.int8)
    edges = np.flatnonzero(np.diff(mask, prepend=np.int8(0), append=np.int8(0)) != 0)  # bool: fast nonzero
    return edges[::2], edges[1::2]  # runs alternate: start, end, start, end, ...


def _mix(z: np.ndarray) -> np.ndarray:
    """splitmix64 finaliser (vectorised, wrapping uint64 arithmetic)."""
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


def token_keys(buf: bytes, starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """64-bit keys of the tokens ``buf[starts:ends]``.

    Returns ``(keys, long_idx, check)``: tokens of <= 8 bytes have their bytes as key (little-endian, so the low byte
    is the first letter and never 0); longer tokens (indices ``long_idx``) have a hash with low byte 0, so the two
    kinds never meet, and ``check`` holds an independent hash of each long token for collision checks.
    """
    aligned = np.frombuffer(buf, dtype="<u8", count=len(buf) // 8)

    def words(pos: np.ndarray) -> np.ndarray:
        # the 8 bytes at byte offsets pos, from two aligned words (a shift by 64 gives 0 in numpy)
        i, shift = pos >> 3, ((pos & 7) << 3).astype(np.uint64)
        return (aligned[i] >> shift) | (aligned[i + 1] << (np.uint64(64) - shift))

    lengths = ends - starts
    keys = words(starts) & _MASKS[np.minimum(lengths, 8)]
    long_idx = np.flatnonzero(lengths > 8)
    if long_idx.size == 0:
        return keys, long_idx, np.empty(0, np.uint64)
    ls, ll = starts[long_idx], lengths[long_idx]
    h = _mix(ll.astype(np.uint64) ^ np.uint64(0x243F6A8885A308D3))
    c = _mix(ll.astype(np.uint64) ^ np.uint64(0x13198A2E03707344))
    for blk in range(MAX_BLOCKS):
        part = np.flatnonzero(ll > 8 * blk)
        if part.size == 0:
            break
        rem = np.minimum(ll[part] - 8 * blk, 8)
        w = words(ls[part] + 8 * blk) & _MASKS[rem]
        h[part] = _mix(h[part] ^ w)
        c[part] = _mix((c[part] + w) * np.uint64(0x9E3779B97F4A7C15))
    very = np.flatnonzero(ll > 8 * MAX_BLOCKS)
    for i in very.tolist():  # very long tokens: rare; one digest each
        digest = hashlib.blake2b(buf[ls[i] : ls[i] + ll[i]], digest_size=16).digest()
        h[i] = np.uint64(int.from_bytes(digest[:8], "little"))
        c[i] = np.uint64(int.from_bytes(digest[8:], "little"))
    keys[long_idx] = h & np.uint64(0xFFFFFFFFFFFFFF00)
    return keys, long_idx, c
