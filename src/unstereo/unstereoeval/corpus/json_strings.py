"""Raw JSON string values straight into a counter's batch, compiled: :func:`encode_json_batch` unescapes, validates,
joins and lowercases the texts of a batch (:func:`json_batch`) without a Python str per text.
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus import lower_scan
from unstereo.unstereoeval.corpus.jit import AVAILABLE, HIGH, LOW7, load8, njit, ones, store8, trailing_zeros
from unstereo.unstereoeval.corpus.tokenize import PAD, EncodedBatch, _lower_stretches, lower_changes_table

_MAX_CHANGED = 1 << 14  # characters str.lower changes whose offsets the JSON kernel notes per batch


def encode_json_batch(values: list) -> EncodedBatch | None:
    """:func:`~unstereo.unstereoeval.corpus.tokenize.encode_batch` of the texts of raw JSON string values (bytes-like, quotes
    included, as ``msgspec.Raw`` gives them) without a Python str per text: one compiled pass unescapes, validates,
    joins and lowercases (:func:`json_batch`). None where it cannot be sure of the result (a value that is not a
    string of strict UTF-8, ...): the caller decodes those texts the usual way."""
    src = np.frombuffer(b"".join(values), np.uint8)
    offsets = np.zeros(len(values) + 1, np.int64)
    np.cumsum(np.fromiter(map(len, values), np.int64, len(values)), out=offsets[1:])
    return _json_values_batch(src, offsets[:-1], offsets[1:])


def _json_values_batch(src: np.ndarray, starts: np.ndarray, ends: np.ndarray) -> EncodedBatch | None:
    """The batch of the raw JSON string values ``src[starts[d]:ends[d]]`` (quotes included), or None."""
    out = np.empty(src.size + 3 * starts.size + PAD, np.uint8)
    pos = np.empty(_MAX_CHANGED, np.int64)
    n, k = json_batch(src, starts, ends, out, pos, lower_changes_table())
    if n < 0:
        return None
    data = out[: n + PAD]
    if k:
        # the stretches str.lower changes: from the offsets the kernel noted, or (many) from a scan of the buffer
        lo, hi = (
            lower_scan.stretches(data, n, pos[:k])
            if k <= pos.size
            else lower_scan.scan(data, n, lower_changes_table())[1:]
        )
        data = _lower_stretches(data, lo, hi)
    return EncodedBatch(data, len(data) - PAD, starts.size)


def _hex4(src, i):
    """The value of the four hex digits at ``src[i:i + 4]``, or a negative number if one is not a hex digit (a
    table lookup per digit, no branch)."""
    a, b, c, d = _HEX[src[i]], _HEX[src[i + 1]], _HEX[src[i + 2]], _HEX[src[i + 3]]
    return ((a << 12) | (b << 8) | (c << 4) | d) | ((a | b | c | d) & np.int64(-65536))


def _put_code_point(out, j, cp):
    """Write code point ``cp`` >= 0x80 as UTF-8 at ``out[j]`` (a surrogate as its 3-byte surrogatepass form; up to
    8 bytes are stored, the ones past the character are overwritten later); returns the next offset. Without a
    branch on the width: a mix of 2-, 3- and 4-byte characters would mispredict it."""
    c = np.uint64(cp)
    b1 = np.uint64(0x80) | (c & np.uint64(0x3F))
    b2 = np.uint64(0x80) | ((c >> np.uint64(6)) & np.uint64(0x3F))
    b3 = np.uint64(0x80) | ((c >> np.uint64(12)) & np.uint64(0x3F))
    two = (np.uint64(0xC0) | (c >> np.uint64(6))) | (b1 << np.uint64(8))
    three = (np.uint64(0xE0) | (c >> np.uint64(12))) | (b2 << np.uint64(8)) | (b1 << np.uint64(16))
    four = (np.uint64(0xF0) | (c >> np.uint64(18))) | (b3 << np.uint64(8)) | (b2 << np.uint64(16))
    four |= b1 << np.uint64(24)
    store8(out, j, two if cp < 0x800 else (three if cp < 0x10000 else four))
    return j + 2 + np.int64(cp >= 0x800) + np.int64(cp >= 0x10000)


# bytes copied as they are, ASCII lowercased (not a control character, quote, backslash or non-ASCII)
_PLAIN = np.zeros(256, np.bool_)
_PLAIN[32:128] = True
_PLAIN[[34, 92]] = False
_LOWER = np.arange(256).astype(np.uint8)
_LOWER[65:91] += 32
# the value of a hex digit, -1 for any other byte
_HEX = np.full(256, -1, np.int64)
_HEX[list(b"0123456789")] = range(10)
_HEX[list(b"abcdef")] = range(10, 16)
_HEX[list(b"ABCDEF")] = range(10, 16)
# the byte after a backslash -> the byte it stands for (0: not a one-byte escape)
_ESCAPES = np.zeros(256, np.uint8)
for _c, _v in zip(b'"\\/bfnrt', b'"\\/\x08\x0c\n\r\t', strict=True):
    _ESCAPES[_c] = _v


def _utf8_char(src, i):
    """(width, code point) of the strict well-formed UTF-8 character whose lead byte (>= 0x80) is at ``src[i]``;
    width 0 if it is not one (stray continuation byte, overlong form, encoded surrogate, beyond U+10FFFF,
    truncated). ``src[i + 1]`` must be readable; a later byte is read only after the one before it proved a
    continuation byte (so never past a closing quote)."""
    b0 = np.int64(src[i])
    b1 = np.int64(src[i + 1])
    if 0xC2 <= b0 <= 0xDF:
        if 0x80 <= b1 <= 0xBF:
            return 2, ((b0 & 0x1F) << 6) | (b1 & 0x3F)
    elif 0xE0 <= b0 <= 0xEF:
        lo = 0xA0 if b0 == 0xE0 else 0x80
        hi = 0x9F if b0 == 0xED else 0xBF
        if lo <= b1 <= hi:
            b2 = np.int64(src[i + 2])
            if 0x80 <= b2 <= 0xBF:
                return 3, ((b0 & 0x0F) << 12) | ((b1 & 0x3F) << 6) | (b2 & 0x3F)
    elif 0xF0 <= b0 <= 0xF4:
        lo = 0x90 if b0 == 0xF0 else 0x80
        hi = 0x8F if b0 == 0xF4 else 0xBF
        if lo <= b1 <= hi:
            b2 = np.int64(src[i + 2])
            if 0x80 <= b2 <= 0xBF:
                b3 = np.int64(src[i + 3])
                if 0x80 <= b3 <= 0xBF:
                    return 4, ((b0 & 0x07) << 18) | ((b1 & 0x3F) << 12) | ((b2 & 0x3F) << 6) | (b3 & 0x3F)
    return 0, 0


_C60, _C22, _C5C, _C3F, _C25 = (ones(b) for b in (0x60, 0x22, 0x5C, 0x3F, 0x25))


def _special8(w):
    """The high bit of each byte of ``w`` that is not plain (:data:`_PLAIN`: 0x20..0x7F, not a quote or
    backslash), the others 0. On the low 7 bits ``b + c`` sets the high bit iff ``b >= 0x80 - c``, with no carry
    into the next byte."""
    w7 = w & ~HIGH
    ok = (w7 + _C60) & ((w7 ^ _C22) + LOW7) & ((w7 ^ _C5C) + LOW7)  # >= 0x20, != '"', != '\\'
    return (w | ~ok) & HIGH


def _lower8(w):
    """The 8 bytes of ``w`` with A-Z lowercased (exact for 7-bit bytes only)."""
    w7 = w & ~HIGH
    upper = (w7 + _C3F) & ~(w7 + _C25) & HIGH  # >= 'A' and not >= '['
    return w + (upper >> np.uint64(2))


def _json_batch(src, starts, ends, out, pos, lower_changes):
    """The batch buffer of :func:`~unstereo.unstereoeval.corpus.tokenize.encode_batch` written straight from raw JSON string
    values: ``src[starts[d]:ends[d]]`` is document d's value, quotes included. Unescapes (a surrogate pair
    combined, a lone surrogate in its surrogatepass form), blanks NUL, lowercases ASCII, joins with " NUL " and
    pads with zero bytes (``out`` needs ``len(src) + 3 * docs + PAD`` bytes). Returns ``(n, k)``: the size without
    padding and the number of characters ``str.lower`` still changes (the offsets of the first ``pos.size`` in
    ``pos``, for :func:`~unstereo.unstereoeval.corpus.lower_scan.stretches`); ``n = -1`` where the input is anything else than
    valid JSON strings of strict UTF-8 (the caller then decodes the slow way, which decides). Plain bytes go 8 at a
    time (:func:`_special8`), the others one by one (a branchy byte loop, or a growing array here, ran at a quarter
    of the speed or less)."""
    npos = 0
    cap = pos.size
    j = 0
    ndocs = starts.size
    for d in range(ndocs):
        i = starts[d]
        end = ends[d] - 1  # the closing quote
        if end <= i or src[i] != 34 or src[end] != 34:
            return -1, 0
        i += 1
        while i < end:
            if i + 8 <= end:  # most bytes: 8 at a time up to the next byte that is not plain
                w = load8(src, i)
                store8(out, j, _lower8(w))  # (bytes past a special one are overwritten later)
                special = _special8(w)
                if special == 0:
                    i += 8
                    j += 8
                    continue
                k = np.int64(trailing_zeros(special) >> 3)
                i += k
                j += k
            else:
                while _PLAIN[src[i]]:  # the last bytes one at a time (the closing quote is not plain)
                    out[j] = _LOWER[src[i]]
                    i += 1
                    j += 1
                if i >= end:
                    break
            b = src[i]
            if b >= 0x80:
                w, cp = _utf8_char(src, i)
                if w == 0:
                    return -1, 0
                if lower_changes[cp]:
                    if npos < cap:
                        pos[npos] = j
                    npos += 1
                if i + 8 <= end:
                    store8(out, j, load8(src, i))
                else:
                    for k in range(w):
                        out[j + k] = src[i + k]
                i += w
                j += w
                continue
            if b != 92 or i + 1 >= end:  # a raw control character, a quote inside the value, a cut escape
                return -1, 0
            e = src[i + 1]
            if e != 117:  # not \u
                if _ESCAPES[e] == 0:
                    return -1, 0
                out[j] = _ESCAPES[e]
                i += 2
                j += 1
                continue
            cp = _hex4(src, i + 2) if i + 6 <= end else -1
            if cp < 0:
                return -1, 0
            i += 6
            if 0xD800 <= cp < 0xDC00 and i + 6 <= end and src[i] == 92 and src[i + 1] == 117:
                low = _hex4(src, i + 2)
                if 0xDC00 <= low < 0xE000:
                    cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00)
                    i += 6
            if cp < 0x80:
                out[j] = 32 if cp == 0 else _LOWER[cp]
                j += 1
                continue
            if lower_changes[cp]:
                if npos < cap:
                    pos[npos] = j
                npos += 1
            j = _put_code_point(out, j, cp)
        if d + 1 < ndocs:
            out[j] = 32
            out[j + 1] = 0
            out[j + 2] = 32
            j += 3
    out[j : j + PAD] = 0
    return j, npos


if AVAILABLE:
    _hex4 = njit(cache=True, inline="always")(_hex4)
    _put_code_point = njit(cache=True, inline="always")(_put_code_point)
    _utf8_char = njit(cache=True, inline="always")(_utf8_char)
    _special8 = njit(cache=True, inline="always")(_special8)
    _lower8 = njit(cache=True, inline="always")(_lower8)
    json_batch = njit(cache=True, nogil=True)(_json_batch)
