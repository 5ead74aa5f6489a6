"""A JSON-lines chunk's text values found without a parser's object per line, compiled: :func:`json_lines` checks
each line's JSON exactly enough to be sure of the value of one key, and :func:`encode_json_lines` turns those
values into a counter's batch (:mod:`.json_strings`).
"""

from __future__ import annotations

import numpy as np

from unstereo.unstereoeval.corpus.jit import AVAILABLE, HIGH, LOW7, load8, njit, ones, trailing_zeros
from unstereo.unstereoeval.corpus.json_strings import _ESCAPES, _hex4, _json_values_batch, _utf8_char
from unstereo.unstereoeval.corpus.tokenize import EncodedBatch


def encode_json_lines(chunk: bytes, newlines: np.ndarray, key: bytes) -> EncodedBatch | None:
    """:func:`~unstereo.unstereoeval.corpus.json_strings.encode_json_batch` of the ``key`` member of each JSON line of
    ``chunk`` (``newlines``: the offsets of its newlines), found by a compiled scan of the lines (:func:`json_lines`)
    instead of a JSON parser's object per line. None where the scan or the kernel is not sure of every line: the
    caller parses the chunk the usual way."""
    src = np.frombuffer(chunk, np.uint8)
    lines = newlines.size + (not chunk.endswith(b"\n"))
    starts, ends = np.empty(lines, np.int64), np.empty(lines, np.int64)
    key_bytes = np.frombuffer(key, np.uint8)
    if not lines or not json_lines(src, newlines, key_bytes, starts, ends, np.empty(64, np.uint8)):
        return None
    return _json_values_batch(src, starts, ends)


_WS = np.zeros(256, np.bool_)  # JSON whitespace inside a line (a newline ends the line)
_WS[[32, 9, 13]] = True


def _json_lines(src, newlines, key, starts, ends, stack):
    """The raw JSON string value of the member ``key`` (bytes, plain ASCII) of each line of a chunk of JSON lines
    (``newlines``: the offsets of its newlines; the last line may lack one), without a parser's objects per line:
    ``src[starts[d]:ends[d]]`` for line d, quotes included (its content is checked by
    :func:`~unstereo.unstereoeval.corpus.json_strings.json_batch`). Returns False unless every line is one JSON object holding
    that key once with a string value, its other values of the kinds this scan checks exactly (strings of
    printable characters, strict UTF-8 and escapes, numbers of modest length, literals, arrays and objects up to
    ``stack.size`` deep): the caller then parses the chunk the usual way, which decides (a blank line, a repeated
    key, a key written with escapes, ...)."""
    a = 0
    for d in range(starts.size):
        b = newlines[d] if d < newlines.size else src.size
        vs, ve = _line_value(src, a, b, key, stack)
        if vs < 0:
            return False
        starts[d], ends[d] = vs, ve
        a = b + 1
    return True


def _ws(src, i, b):
    while i < b and _WS[src[i]]:
        i += 1
    return i


def _line_value(src, a, b, key, stack):
    """(start, end) of the value of ``key`` in the JSON object that is ``src[a:b]``, or (-1, -1)."""
    found, fend = -1, -1
    i = _ws(src, a, b)
    if i >= b or src[i] != 123:  # {
        return -1, -1
    i = _ws(src, i + 1, b)
    while True:
        ks = i + 1
        ke = _skip_string(src, i, b, True)  # the key: no escapes (one might spell the text key)
        if ke < 0:
            return -1, -1
        i = _ws(src, ke, b)
        if i >= b or src[i] != 58:  # :
            return -1, -1
        i = _ws(src, i + 1, b)
        if ke - 1 - ks == key.size and _same(src, ks, key):
            if found >= 0 or i >= b or src[i] != 34:  # a repeated key, a value that is not a string
                return -1, -1
            found, fend = i, _string_end(src, i + 1, b)
            i = fend
        else:
            i = _skip_value(src, i, b, stack)
        if i < 0:
            return -1, -1
        i = _ws(src, i, b)
        if i >= b:
            return -1, -1
        if src[i] == 44:  # ,
            i = _ws(src, i + 1, b)
            continue
        if src[i] != 125:  # }
            return -1, -1
        break
    if _ws(src, i + 1, b) != b or found < 0:
        return -1, -1
    return found, fend


def _same(src, i, key):
    for k in range(key.size):
        if src[i + k] != key[k]:
            return False
    return True


_QUOTE, _BACKSLASH = ones(0x22), ones(0x5C)


def _zero_bytes(x):
    """The high bit of each zero byte of ``x`` (exact: no borrow between bytes)."""
    return ~(((x & LOW7) + LOW7) | x) & HIGH


def _string_end(src, i, b):
    """The offset after the closing quote of the JSON string whose content starts at ``i`` (escapes skipped,
    nothing else checked: :func:`~unstereo.unstereoeval.corpus.json_strings.json_batch` checks the content), or -1 if it does
    not close before ``b``. Eight bytes at a time up to the next quote or backslash."""
    while i < b:
        if i + 8 <= b:
            w = load8(src, i)
            hit = _zero_bytes(w ^ _QUOTE) | _zero_bytes(w ^ _BACKSLASH)
            if hit == 0:
                i += 8
                continue
            i += np.int64(trailing_zeros(hit) >> 3)
        c = src[i]
        if c == 34:
            return i + 1
        i += 2 if c == 92 else 1
    return -1


def _skip_string(src, i, b, key):
    """The offset after the JSON string at ``src[i]`` (its opening quote) closed before ``b``, or -1 unless it
    holds only printable ASCII, strict UTF-8 and valid escapes (none at all in a ``key``: one might spell the text
    key). Escaped surrogates pass, paired or not, as the str path reads them (only the text is kept)."""
    if i >= b or src[i] != 34:
        return -1
    i += 1
    while i < b:
        c = src[i]
        if c == 34:
            return i + 1
        if c < 32:
            return -1
        if c >= 128:
            w = _utf8_char(src, i)[0] if i + 4 <= b else 0  # (reads up to 4 bytes)
            if w == 0:
                return -1
            i += w
            continue
        if c == 92:
            if key or i + 1 >= b:
                return -1
            e = src[i + 1]
            if e == 117:  # \uXXXX
                if i + 6 > b or _hex4(src, i + 2) < 0:
                    return -1
                i += 6
                continue
            if _ESCAPES[e] == 0:
                return -1
            i += 2
            continue
        i += 1
    return -1


def _skip_digits(src, i, b, most):
    """The offset after 1 to ``most`` digits at ``i``, or -1."""
    k = i
    while k < b and 48 <= src[k] <= 57:
        k += 1
    return k if 0 < k - i <= most else -1


def _skip_number(src, i, b):
    """The offset after the JSON number at ``i``, or -1 (also beyond 100 digits before or after the point or 4 of
    exponent: Python's json refuses integers of more than 4,300 digits)."""
    if src[i] == 45:  # -
        i += 1
    if i < b and src[i] == 48:  # a leading 0 stands alone
        i += 1
    else:
        i = _skip_digits(src, i, b, 100)
    if 0 <= i < b and src[i] == 46:  # .
        i = _skip_digits(src, i + 1, b, 100)
    if 0 <= i < b and (src[i] == 101 or src[i] == 69):  # e E
        i += 1
        if i < b and (src[i] == 43 or src[i] == 45):
            i += 1
        i = _skip_digits(src, i, b, 4)
    return i


def _skip_literal(src, i, b):
    """The offset after ``true``, ``false`` or ``null`` at ``i``, or -1."""
    if i + 4 <= b and src[i] == 116 and src[i + 1] == 114 and src[i + 2] == 117 and src[i + 3] == 101:
        return i + 4
    if i + 4 <= b and src[i] == 110 and src[i + 1] == 117 and src[i + 2] == 108 and src[i + 3] == 108:
        return i + 4
    if (
        i + 5 <= b
        and src[i] == 102
        and src[i + 1] == 97
        and src[i + 2] == 108
        and src[i + 3] == 115
        and src[i + 4] == 101
    ):
        return i + 5
    return -1


def _skip_value(src, i, b, stack):
    """The offset after the JSON value at ``i`` (the kinds :func:`json_lines` accepts; containers tracked on
    ``stack``), or -1."""
    depth = 0
    while True:  # at a value
        if i >= b:
            return -1
        c = src[i]
        closed = True
        if c == 123 or c == 91:  # { [
            if depth == stack.size:
                return -1
            stack[depth] = c
            depth += 1
            i = _ws(src, i + 1, b)
            if i < b and src[i] == c + 2:  # } or ]: empty
                depth -= 1
                i += 1
            elif c == 123:
                i = _member(src, i, b)
                closed = False
            else:
                closed = False
        elif c == 34:
            i = _skip_string(src, i, b, False)
        elif c == 45 or 48 <= c <= 57:
            i = _skip_number(src, i, b)
        else:
            i = _skip_literal(src, i, b)
        if i < 0:
            return -1
        while closed:  # after a value: the next element, or the end of containers
            if depth == 0:
                return i
            i = _ws(src, i, b)
            if i >= b:
                return -1
            top = stack[depth - 1]
            if src[i] == 44:  # ,
                i = _ws(src, i + 1, b)
                if top == 123:
                    i = _member(src, i, b)
                    if i < 0:
                        return -1
                closed = False
            elif src[i] == top + 2:
                depth -= 1
                i += 1
            else:
                return -1


def _member(src, i, b):
    """The offset of the value of the object member (key, colon) at ``i``, or -1."""
    i = _skip_string(src, i, b, False)
    if i < 0:
        return -1
    i = _ws(src, i, b)
    if i >= b or src[i] != 58:
        return -1
    return _ws(src, i + 1, b)


if AVAILABLE:
    _ws = njit(cache=True)(_ws)
    _same = njit(cache=True)(_same)
    _zero_bytes = njit(cache=True, inline="always")(_zero_bytes)
    _string_end = njit(cache=True)(_string_end)
    _skip_string = njit(cache=True)(_skip_string)
    _skip_digits = njit(cache=True)(_skip_digits)
    _skip_number = njit(cache=True)(_skip_number)
    _skip_literal = njit(cache=True)(_skip_literal)
    _member = njit(cache=True)(_member)
    _skip_value = njit(cache=True)(_skip_value)
    _line_value = njit(cache=True)(_line_value)
    json_lines = njit(cache=True, nogil=True)(_json_lines)
