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
from dataclasses import dataclass
from functools import cache

import numpy as np

SEP = "\x00"  # document separator inside a batch (not alphabetic; removed from texts first)
DOC_SEP = f" {SEP} "  # spaces keep the separator a token of its own
PAD = 40  # zero bytes after a batch so that 8-byte reads past a token's end stay inside the buffer
MAX_BLOCKS = 4  # tokens up to 32 bytes are hashed with numpy; longer ones (rare) with blake2b one by one

_MASKS = np.array([(1 << (8 * k)) - 1 for k in range(8)] + [(1 << 64) - 1], dtype=np.uint64)


@cache
def alpha_table() -> np.ndarray:
    r"""Boolean table over all code points: ``chr(i).isalpha()``.

    Built in ~0.1 s instead of ~0.7 s for a call per code point: ``re``'s ``[^\W\d_]`` (alphanumeric, not a decimal
    digit, not ``_``) is a superset of ``isalpha`` (it adds numerals such as "½" or "Ⅻ"), so only its runs are looked
    at, and a run is tested per character only when it is not wholly alphabetic."""
    everything = np.arange(0x110000, dtype="<u4").tobytes().decode("utf-32-le", "surrogatepass")
    table = np.zeros(0x110000, dtype=bool)
    for m in re.finditer(r"[^\W\d_]+", everything):
        start, run = m.start(), m.group()
        if run.isalpha():
            table[start : m.end()] = True
        else:
            table[start : m.end()] = [c.isalpha() for c in run]
    return table


@cache
def _token_re() -> re.Pattern:
    """A regex whose character class is exactly the code points with ``isalpha()`` (built from the table)."""
    table = alpha_table()
    edges = np.flatnonzero(np.diff(table.astype(np.int8), prepend=0, append=0))
    ranges = []
    for lo, hi in zip(edges[::2], edges[1::2] - 1, strict=True):
        ranges.append(re.escape(chr(lo)) if lo == hi else f"{re.escape(chr(lo))}-{re.escape(chr(hi))}")
    return re.compile("[" + "".join(ranges) + "]+")


@cache
def lower_changes_table() -> np.ndarray:
    """Boolean table over all code points: ``chr(i).lower() != chr(i)``.

    Lowercases the string of all code points at once; only U+0130 (İ -> "i̇") lengthens under ``str.lower``, so it is
    set aside first and the rest compares position by position (a per-character loop if another one ever does)."""
    codes = np.arange(0x110000, dtype="<u4")
    codes[0x130] = 0x20
    everything = codes.tobytes().decode("utf-32-le", "surrogatepass")
    lowered = everything.lower()
    if len(lowered) != len(
        everything
    ):  # pragma: no cover - a Unicode version with another expanding character
        table = np.fromiter((c.lower() != c for c in everything), dtype=bool, count=0x110000)
    else:
        table = np.frombuffer(lowered.encode("utf-32-le", "surrogatepass"), "<u4") != codes
    table[0x130] = True
    return table


def tokenize(text: str) -> list[str]:
    """The tokens of ``text``: lowercase, maximal runs of alphabetic characters."""
    return _token_re().findall(text.lower())


def encode_batch(texts: list[str], compiled: bool = False) -> tuple[bytes, int]:
    """Join ``texts`` with " NUL " (a one-byte token of key 0 that marks document ends), encode as UTF-8, lowercase
    and pad; returns ``(buffer, n)``, n = size without padding. The buffer equals
    ``(DOC_SEP.join(texts) + SEP * PAD).lower().encode("utf-8", "surrogatepass")`` (NULs inside a text blanked).

    Lowercasing happens on the bytes: ``bytes.lower`` for ASCII (2-3 GB/s), then ``str.lower`` only on the stretches
    between ASCII spaces that hold a character it changes (:func:`_lower_non_ascii`); ``str.lower`` on a whole batch
    with any non-ASCII character runs at ~150 MB/s, and joining str of mixed widths is slow too. With ``compiled``
    one compiled pass (:func:`~unstereo.unstereoeval.corpus.lower_scan.scan`, numba) finds NULs inside texts and those stretches."""
    parts = [t.encode("utf-8", "surrogatepass") for t in texts]
    data = (_DOC_SEP_BYTES.join(parts) + _PAD_BYTES).lower()
    if compiled:
        from unstereo.unstereoeval.corpus.lower_scan import scan

        nuls, lo, hi = scan(np.frombuffer(data, np.uint8), len(data) - PAD, lower_changes_table())
        if nuls == len(parts) - 1:
            data = _lower_stretches(data, lo, hi) if lo.size else data
            return data, len(data) - PAD
    elif data.count(0) == len(parts) - 1 + PAD:
        data = data if data.isascii() else _lower_non_ascii(data)
        return data, len(data) - PAD
    # a text holds NUL itself: blank it (it is not a letter anyway)
    data = (_DOC_SEP_BYTES.join(p.replace(b"\x00", b" ") for p in parts) + _PAD_BYTES).lower()
    data = data if data.isascii() else _lower_non_ascii(data)
    return data, len(data) - PAD


@dataclass(frozen=True, slots=True)
class EncodedBatch:
    """A batch already in :func:`encode_batch`'s form (``buffer``: bytes or a uint8 array, ``n``: its size without
    padding), for the compiled counter; ``len`` is its number of documents, as for a list of texts."""

    buffer: bytes | np.ndarray
    n: int
    docs: int

    def __len__(self) -> int:
        return self.docs


_DOC_SEP_BYTES = DOC_SEP.encode()
_PAD_BYTES = SEP.encode() * PAD
_MERGE_GAP = 64  # stretches closer than this are lowercased together (fewer Python calls)


def code_points(arr: np.ndarray, lead: np.ndarray) -> np.ndarray:
    """Code points of the UTF-8 characters whose lead bytes (>= 0xC0) are at ``lead`` (``arr`` padded by 3 bytes)."""
    b0 = arr[lead].astype(np.uint32)
    b1 = arr[lead + 1].astype(np.uint32) & 0x3F
    b2 = arr[lead + 2].astype(np.uint32) & 0x3F
    b3 = arr[lead + 3].astype(np.uint32) & 0x3F
    return np.minimum(
        np.where(
            b0 < 0xE0,
            ((b0 & 0x1F) << 6) | b1,
            np.where(
                b0 < 0xF0,
                ((b0 & 0x0F) << 12) | (b1 << 6) | b2,
                ((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3,
            ),
        ),
        0x10FFFF,
    )


def _lower_non_ascii(data: bytes) -> bytes:
    """``data`` (ASCII already lowercased) with every space-delimited stretch holding a non-ASCII character that
    ``str.lower`` changes passed through ``str.lower`` (most non-ASCII text, "é", "—", curly quotes, is lowercase or
    uncased already and stays as it is). Exact: Python's lowercasing is per character except the final sigma rule
    (for Σ, which changes anyway), which looks through case-ignorable characters to the nearest cased ones; a space
    is neither, so a stretch bounded by spaces lowercases as it would inside the whole text."""
    arr = np.frombuffer(data, dtype=np.uint8)
    lead = np.flatnonzero(arr >= 0xC0)
    high = lead[lower_changes_table()[code_points(arr, lead)]]
    if high.size == 0:
        return data
    spaces = np.flatnonzero(arr == 32)  # other whitespace would do too, but is slower to find
    if spaces.size == 0:
        return data.decode("utf-8", "surrogatepass").lower().encode("utf-8", "surrogatepass")
    at = np.searchsorted(spaces, high)
    lo = np.where(at > 0, spaces[np.maximum(at - 1, 0)] + 1, 0)
    hi = np.where(at < spaces.size, spaces[np.minimum(at, spaces.size - 1)], arr.size)
    return _lower_stretches(data, lo, hi)


def _lower_stretches(data: bytes, lo: np.ndarray, hi: np.ndarray) -> bytes:
    """``data`` with the stretches ``data[lo[i]:hi[i]]`` (in order; repeats and overlaps allowed as long as they
    come from the same spaces) passed through ``str.lower``."""
    # one stretch per distinct start; merge stretches separated by less than _MERGE_GAP bytes
    first = np.flatnonzero(np.diff(lo, prepend=-1) != 0)
    lo, hi = lo[first], hi[first]
    new = np.flatnonzero(lo[1:] - hi[:-1] >= _MERGE_GAP) + 1
    starts = lo[np.concatenate(([0], new))]
    ends = hi[np.concatenate((new - 1, [hi.size - 1]))]
    view = memoryview(data)
    pieces: list = []
    prev = 0
    for s, e in zip(starts.tolist(), ends.tolist(), strict=True):
        pieces.append(view[prev:s])
        pieces.append(str(view[s:e], "utf-8", "surrogatepass").lower().encode("utf-8", "surrogatepass"))
        prev = e
    pieces.append(view[prev:])
    return b"".join(pieces)


def letter_mask(arr: np.ndarray, n: int) -> np.ndarray:
    """Boolean mask over the first ``n`` bytes: True where the byte belongs to an alphabetic character."""
    body = arr[:n]
    mask = (body - np.uint8(97)) < np.uint8(26)  # ASCII: after lower() only a-z are letters
    lead = np.flatnonzero(body >= 0xC0)
    if lead.size:
        b0 = arr[lead]
        nbytes = 2 + (b0 >= 0xE0) + (b0 >= 0xF0)
        alpha = alpha_table()[code_points(arr, lead)]
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
    # the 8 bytes at every byte offset, as an overlapping strided view (one gather per token; the padding of
    # encode_batch keeps reads past a token's end inside the buffer)
    words = np.ndarray((len(buf) - 7,), dtype="<u8", buffer=buf, strides=(1,))
    lengths = ends - starts
    keys = words[starts] & _MASKS[np.minimum(lengths, 8)]
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
        w = words[ls[part] + 8 * blk] & _MASKS[rem]
        h[part] = _mix(h[part] ^ w)
        c[part] = _mix((c[part] + w) * np.uint64(0x9E3779B97F4A7C15))
    very = np.flatnonzero(ll > 8 * MAX_BLOCKS)
    for i in very.tolist():  # very long tokens: rare; one digest each
        digest = hashlib.blake2b(buf[ls[i] : ls[i] + ll[i]], digest_size=16).digest()
        h[i] = np.uint64(int.from_bytes(digest[:8], "little"))
        c[i] = np.uint64(int.from_bytes(digest[8:], "little"))
    keys[long_idx] = h & np.uint64(0xFFFFFFFFFFFFFF00)
    return keys, long_idx, c
