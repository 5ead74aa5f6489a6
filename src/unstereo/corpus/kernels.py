"""Compiled (numba) kernels of the fast counter: one loop over a batch's tokens instead of ~20 numpy passes.

Same definitions as the numpy path of :class:`~unstereo.corpus.count.FastCounter` (tokens, stop words, windows,
document ends); the tests hold both to the plain reference. Used when numba is importable (the ``corpus`` extra
installs it); without it the counter stays on numpy (:data:`AVAILABLE`).

- :func:`scan` finds NULs inside texts and the stretches ``str.lower`` still changes after ``bytes.lower``
  (:func:`~unstereo.corpus.tokenize.encode_batch`); :func:`edges` finds the tokens in one branch-free byte pass
  (the same spans as :func:`~unstereo.corpus.tokenize.token_spans`, as start/end pairs in one array);
- :func:`count` walks the tokens once: gives every token a 64-bit key (tokens of <= 8 bytes are their bytes, low
  byte = first letter, never 0; longer tokens a hash with low byte 0 plus an independent check hash compared on
  every hit, so a collision is reported, never counted), finds its word in an open-addressing hash table (inserting
  unseen words; their token indices are returned, so Python decodes only new words), and counts it in the same
  slot. A slot holds everything the count needs about a word, so a token costs one cache line however large the
  vocabulary: ``[key, info, count, check]`` with ``info = id | (target index + 1) << 32 | stop << 48``. Stop words
  and targets are inserted first (:func:`insert`), so every word met later is neither. At each document end the
  document's ordered position pairs and the co-occurrences of its target occurrences within the window are counted:
  words of the first ``dense_rows`` ids in a dense array, the others in a hash table of ``[code + 1, count]``
  slots (:func:`co_items` reads both out);
- the table's slot of the token 16 ahead, and the cells of the next target's window, are prefetched: a shard's
  vocabulary table (~100 MB) is far larger than the caches, and without it each rare word stalls the loop for a
  memory round trip (the kernel took ~40 % less time on a 1 GB synthetic shard). The keys are computed when
  their slot is requested and kept in a ring until their token comes, so a long word's slot is requested too;
- helpers inlined into the hot loops take scalars, never an array, and never return one: numba then counts
  references to the array (two atomic operations) at every call where it cannot prove them useless, which had
  cost a sixth of the counting time (5.8 s instead of 6.8 s for a 1.25 GB synthetic shard's spans and counts);
- :func:`sorted_rows` puts the co-occurrence rows in (word, target) order with a counting sort by word;
  :func:`group_sum` sums a merge's rows by (word rank, target) code the same way.

Compiled once per machine (``cache=True``: numba's on-disk cache), about 5 s.
"""

from __future__ import annotations

import numpy as np

from .tokenize import _MASKS, PAD, _mix

try:
    from numba import njit
    from numba.cpython.unsafe.numbers import trailing_zeros as _trailing_zeros
except ImportError:  # pragma: no cover - exercised where numba is missing
    AVAILABLE = False
else:
    AVAILABLE = True

PREFETCH = 16  # tokens ahead whose hash-table slot is requested from memory before it is needed
RING = 32  # keys computed ahead, kept until their token is counted (a power of two > PREFETCH)


def _prefetch_intrinsic():
    """``prefetch(array, index)``: ask for the cache line of ``array[index]`` (LLVM's prefetch; a hint, never a
    fault). The table of a shard's vocabulary (~100 MB) is far larger than the caches: without it every rare word
    is a stall of a memory round trip the loop cannot hide, as the next token's lookup depends on this one's."""
    from llvmlite import ir
    from numba import types
    from numba.core import cgutils
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, array, index):
        def codegen(context, builder, signature, args):
            ary = context.make_array(signature.args[0])(context, builder, args[0])
            i8p = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            fn = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [i8p, i32, i32, i32]), "llvm.prefetch.p0i8"
            )
            ptr = builder.bitcast(builder.gep(ary.data, [args[1]]), i8p)
            # read, high temporal locality, data cache
            builder.call(fn, [ptr, ir.Constant(i32, 0), ir.Constant(i32, 3), ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return types.void(array, index), codegen

    return prefetch


def _unaligned_intrinsics():
    """``load8(array, i)`` and ``store8(array, i, value)``: the 8 bytes at byte offset ``i`` of a uint8 array as a
    little-endian uint64, at any alignment (LLVM loads and stores of alignment 1; numba has none)."""
    from llvmlite import ir
    from numba import types
    from numba.extending import intrinsic

    def pointer(context, builder, array_type, array, index):
        ary = context.make_array(array_type)(context, builder, array)
        return builder.bitcast(builder.gep(ary.data, [index]), ir.IntType(64).as_pointer())

    @intrinsic
    def load8(typingctx, array, index):
        def codegen(context, builder, signature, args):
            return builder.load(pointer(context, builder, signature.args[0], *args), align=1)

        return types.uint64(array, index), codegen

    @intrinsic
    def store8(typingctx, array, index, value):
        def codegen(context, builder, signature, args):
            builder.store(args[2], pointer(context, builder, signature.args[0], args[0], args[1]), align=1)
            return context.get_dummy_value()

        return types.void(array, index, types.uint64), codegen

    return load8, store8


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
    not the array: see the module doc on reference counting.)"""
    shift = np.uint64((start & 7) * 8)
    # (x << (63 - shift)) << 1: a shift by 64 when shift is 0 would be undefined
    key = (lo >> shift) | ((hi << (np.uint64(63) - shift)) << np.uint64(1))
    return key & _MASKS[min(end - start, 8)]


def _slot(key, mask):
    return ((key * _GOLDEN) >> np.uint64(32)) & mask  # high bits of the product: short keys spread too


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
            _prefetch(dense, g * dense_rows + w)
        else:
            _prefetch(sp, 2 * np.int64(_slot(np.uint64(w * n_targets + g + 1), mask)))


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


def _code_point(arr, i):
    """The code point of the UTF-8 character whose lead byte (>= 0xC0) is at ``i`` (as tokenize.code_points)."""
    b0 = np.int64(arr[i])
    b1 = np.int64(arr[i + 1]) & 0x3F
    b2 = np.int64(arr[i + 2]) & 0x3F
    b3 = np.int64(arr[i + 3]) & 0x3F
    if b0 < 0xE0:
        return ((b0 & 0x1F) << 6) | b1
    if b0 < 0xF0:
        return ((b0 & 0x0F) << 12) | (b1 << 6) | b2
    return min(((b0 & 0x07) << 18) | (b1 << 12) | (b2 << 6) | b3, 0x10FFFF)


def _scan(arr, n, lower_changes):
    """One pass over a batch lowercased as ASCII (:func:`~unstereo.corpus.tokenize.encode_batch`): the number of
    NUL bytes among the first ``n`` and the space-delimited stretches (start, end) holding a character that
    ``str.lower`` still changes (``lower_changes``: the table of :func:`~unstereo.corpus.tokenize
    .lower_changes_table`), one per character, in order. (The counting loop stays minimal, ~2 GB/s; the stretches
    are found in a second loop from the first such character.)"""
    nuls = 0
    k = 0
    first = n
    for i in range(n):
        b = arr[i]
        if b == 0:
            nuls += 1
        elif b >= 0xC0 and lower_changes[_code_point(arr, i)]:
            first = min(first, i)
            k += 1
    pos = np.empty(k, np.int64)
    j = 0
    for i in range(first, n):
        if arr[i] >= 0xC0 and lower_changes[_code_point(arr, i)]:
            pos[j] = i
            j += 1
    lo, hi = stretches(arr, n, pos)
    return nuls, lo, hi


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
    _store8(out, j, two if cp < 0x800 else (three if cp < 0x10000 else four))
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


def _ones(b):
    return np.uint64(b * 0x0101010101010101)


_HIGH, _C60, _C22, _C7F, _C5C, _C3F, _C25 = (_ones(b) for b in (0x80, 0x60, 0x22, 0x7F, 0x5C, 0x3F, 0x25))


def _special8(w):
    """The high bit of each byte of ``w`` that is not plain (:data:`_PLAIN`: 0x20..0x7F, not a quote or
    backslash), the others 0. On the low 7 bits ``b + c`` sets the high bit iff ``b >= 0x80 - c``, with no carry
    into the next byte."""
    w7 = w & ~_HIGH
    ok = (w7 + _C60) & ((w7 ^ _C22) + _C7F) & ((w7 ^ _C5C) + _C7F)  # >= 0x20, != '"', != '\\'
    return (w | ~ok) & _HIGH


def _lower8(w):
    """The 8 bytes of ``w`` with A-Z lowercased (exact for 7-bit bytes only)."""
    w7 = w & ~_HIGH
    upper = (w7 + _C3F) & ~(w7 + _C25) & _HIGH  # >= 'A' and not >= '['
    return w + (upper >> np.uint64(2))


def _json_batch(src, starts, ends, out, pos, lower_changes):
    """The batch buffer of :func:`~unstereo.corpus.tokenize.encode_batch` written straight from raw JSON string
    values: ``src[starts[d]:ends[d]]`` is document d's value, quotes included. Unescapes (a surrogate pair
    combined, a lone surrogate in its surrogatepass form), blanks NUL, lowercases ASCII, joins with " NUL " and
    pads with zero bytes (``out`` needs ``len(src) + 3 * docs + PAD`` bytes). Returns ``(n, k)``: the size without
    padding and the number of characters ``str.lower`` still changes (the offsets of the first ``pos.size`` in
    ``pos``, for :func:`stretches`); ``n = -1`` where the input is anything else than valid JSON strings of strict
    UTF-8 (the caller then decodes the slow way, which decides). Plain bytes go 8 at a time (:func:`_special8`), the
    others one by one (a branchy byte loop, or a growing array here, ran at a quarter of the speed or less)."""
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
                w = _load8(src, i)
                _store8(out, j, _lower8(w))  # (bytes past a special one are overwritten later)
                special = _special8(w)
                if special == 0:
                    i += 8
                    j += 8
                    continue
                k = np.int64(_trailing_zeros(special) >> 3)
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
                    _store8(out, j, _load8(src, i))
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


_WS = np.zeros(256, np.bool_)  # JSON whitespace inside a line (a newline ends the line)
_WS[[32, 9, 13]] = True


def _json_lines(src, newlines, key, starts, ends, stack):
    """The raw JSON string value of the member ``key`` (bytes, plain ASCII) of each line of a chunk of JSON lines
    (``newlines``: the offsets of its newlines; the last line may lack one), without a parser's objects per line:
    ``src[starts[d]:ends[d]]`` for line d, quotes included (its content is checked by :func:`json_batch`).
    Returns False unless every line is one JSON object holding that key once with a string value, its other
    values of the kinds this scan checks exactly (strings of printable characters, strict UTF-8 and escapes,
    numbers of modest length, literals, arrays and objects up to ``stack.size`` deep): the caller then parses
    the chunk the usual way, which decides (a blank line, a repeated key, a key written with escapes, ...)."""
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


_QUOTE, _BACKSLASH = _ones(0x22), _ones(0x5C)
_LOW7 = _ones(0x7F)


def _zero_bytes(x):
    """The high bit of each zero byte of ``x`` (exact: no borrow between bytes)."""
    return ~(((x & _LOW7) + _LOW7) | x) & _HIGH


def _string_end(src, i, b):
    """The offset after the closing quote of the JSON string whose content starts at ``i`` (escapes skipped,
    nothing else checked: :func:`json_batch` checks the content), or -1 if it does not close before ``b``.
    Eight bytes at a time up to the next quote or backslash."""
    while i < b:
        if i + 8 <= b:
            w = _load8(src, i)
            hit = _zero_bytes(w ^ _QUOTE) | _zero_bytes(w ^ _BACKSLASH)
            if hit == 0:
                i += 8
                continue
            i += np.int64(_trailing_zeros(hit) >> 3)
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


def _edges(arr, n, alpha):
    """The tokens in the first ``n`` bytes (as :func:`~unstereo.corpus.tokenize.token_spans` with separators:
    letters by ``alpha``, the code point table, and NUL) as ``(edges, k)``: token i is ``edges[2 * i]:edges[2 * i
    + 1]``, ``k // 2`` tokens (the counting loop reads them so, without copies into start and end arrays).
    Branch-free at token edges (every byte writes its offset, the count moves on only at an edge): a branch there
    would mispredict at nearly every token. Eight ASCII bytes at a time: their classes from one 8-byte load
    (:func:`_ascii_classes`), the edges among them as the bits where a class differs from the one before; a block
    with a non-ASCII byte goes byte by byte (a continuation byte keeps its lead byte's class). Indices are uint64
    where they cannot be negative (numba leaves out the wraparound of negative ones: 10 % faster)."""
    edges = np.empty(n + 8, np.int64)
    k = np.uint64(0)
    cur = np.uint64(0)  # the class of the last byte
    i = 0
    while i < n:
        end = min(i + 8, n)
        if end - i == 8:
            w = _load8(arr, i)
            if w & _HIGH == 0:
                bits = np.uint64(_ascii_classes(w))
                x = ((bits ^ ((bits << np.uint64(1)) | cur)) & np.uint64(0xFF)) << np.uint64(4)
                for j in range(8):  # the stores do not wait on each other: k moves once per block
                    edges[k + np.uint64(j)] = i + _EDGE_AT[x + np.uint64(j)]
                k += np.uint64(_EDGE_AT[x + np.uint64(8)])
                cur = bits >> np.uint64(7)
                i = end
                continue
        for p in range(i, end):
            b = arr[p]
            prev = cur
            if b < 0x80:
                cur = np.uint64(((b >= 97) & (b <= 122)) | (b == 0))
            elif b >= 0xC0:  # a lead byte: the class of its character; continuation bytes keep it
                cur = np.uint64(alpha[_code_point(arr, p)])
            edges[k] = p
            k += np.uint64(cur != prev)
        i = end
    edges[k] = n
    return edges, np.int64(k + cur)


_C1F, _C05 = _ones(0x1F), _ones(0x05)
_GATHER = np.uint64(0x0102040810204080)  # times bits at 8j: bit j of the top byte is bit 8j
# for each byte x of edge bits, at 16 * x: the offsets of its set bits, then (at 16 * x + 8) how many
_EDGE_AT = np.zeros(256 * 16, np.int64)
for _x in range(256):
    _at = [j for j in range(8) if _x >> j & 1]
    _EDGE_AT[16 * _x : 16 * _x + len(_at)], _EDGE_AT[16 * _x + 8] = _at, len(_at)
del _x, _at


def _ascii_classes(w):
    """The token class of each of the 8 ASCII bytes of ``w`` (a-z or NUL: 1, else 0) as bit j for byte j. On
    7-bit bytes ``b + c`` sets the high bit iff ``b >= 0x80 - c``, with no carry into the next byte."""
    letter = (w + _C1F) & ~(w + _C05)  # >= 'a' and not >= '{'
    cls = (letter | ~(w + _C7F)) & _HIGH  # or not >= 1 (NUL)
    return np.int64(((cls >> np.uint64(7)) * _GATHER) >> np.uint64(56))


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
    """Count the tokens ``edges[2 * k]:edges[2 * k + 1]``, k = t, t + 1, ... < ``ntok`` (of :func:`edges`; a NUL,
    key 0, ends a document) of a batch's buffer viewed as little-endian uint64 ``words`` (a key of <= 8 bytes is
    cut out of two of them, without a branch). Unseen words get the ids ``nwords, nwords + 1, ...`` (their token
    indices into ``new_tok``). ``kept[:m]`` holds the infos of the kept
    tokens of the document in progress (carried over when the call stops early; the batch's last document ends
    with the batch).

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
        _prefetch(table, np.int64(_slot(ring_keys[a & (RING - 1)], mask)) * SLOT)
    while t < ntok:
        a = t + PREFETCH
        if a < ntok:  # the key of a token ahead, and its slot requested from memory
            s, e = edges[2 * a], edges[2 * a + 1]
            ka = _short_key(words[s >> 3], words[(s >> 3) + 1], s, e)
            ca = np.uint64(0)
            if e - s > 8:
                ka, ca = _key(words, s, e)
            ring_keys[a & (RING - 1)], ring_checks[a & (RING - 1)] = ka, ca
            _prefetch(table, np.int64(_slot(ka, mask)) * SLOT)
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


def _join_spans(arr, starts, ends):
    """The bytes ``arr[starts[i]:ends[i]]`` joined with a 0x01 byte (never part of a word) between them."""
    n = starts.size
    size = n - 1
    for i in range(n):
        size += ends[i] - starts[i]
    out = np.empty(max(size, 0), np.uint8)
    j = 0
    for i in range(n):
        if i > 0:
            out[j] = 1
            j += 1
        for k in range(starts[i], ends[i]):
            out[j] = arr[k]
            j += 1
    return out


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


def _word_keys(words, starts, ends, keys, checks):
    for i in range(starts.size):
        keys[i], checks[i] = _key(words, starts[i], ends[i])


if AVAILABLE:
    _mix = njit(cache=True, inline="always")(_mix)  # the numpy path's splitmix64 finaliser, on scalars
    _key = njit(cache=True)(_key)
    _slot = njit(cache=True, inline="always")(_slot)
    _short_key = njit(cache=True, inline="always")(_short_key)
    _prefetch = _prefetch_intrinsic()
    _load8, _store8 = _unaligned_intrinsics()
    _special8 = njit(cache=True, inline="always")(_special8)
    _lower8 = njit(cache=True, inline="always")(_lower8)
    _probe = njit(cache=True, inline="always")(_probe)
    _sparse_grow = njit(cache=True)(_sparse_grow)
    _sparse_reserve = njit(cache=True)(_sparse_reserve)
    _sparse_add = njit(cache=True, inline="always")(_sparse_add)
    _fetch_window = njit(cache=True, inline="always")(_fetch_window)
    _code_point = njit(cache=True, inline="always")(_code_point)
    scan = njit(cache=True, nogil=True)(_scan)
    _ascii_classes = njit(cache=True, inline="always")(_ascii_classes)
    edges = njit(cache=True, nogil=True)(_edges)
    _hex4 = njit(cache=True, inline="always")(_hex4)
    _put_code_point = njit(cache=True, inline="always")(_put_code_point)
    _utf8_char = njit(cache=True, inline="always")(_utf8_char)
    json_batch = njit(cache=True, nogil=True)(_json_batch)
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
    stretches = njit(cache=True, nogil=True)(_stretches)
    _window = njit(cache=True)(_window)
    _document = njit(cache=True)(_document)
    co_items = njit(cache=True, nogil=True)(_co_items)
    sorted_rows = njit(cache=True, nogil=True)(_sorted_rows)
    insert = njit(cache=True)(_insert)
    rehash = njit(cache=True, nogil=True)(_rehash)
    unigrams = njit(cache=True, nogil=True)(_unigrams)
    count = njit(cache=True, nogil=True)(_count)
    word_keys = njit(cache=True)(_word_keys)
    join_spans = njit(cache=True, nogil=True)(_join_spans)
    string_hashes = njit(cache=True, nogil=True)(_string_hashes)
    group_sum = njit(cache=True, nogil=True)(_group_sum)
