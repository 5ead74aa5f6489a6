"""The fast counter's building blocks against their plain definitions, on inputs made to hit the edge cases:
byte-level lowercasing, the alphabetic table, chunked reading, and the compiled kernels' hash table."""

from __future__ import annotations

import itertools
import random
import unicodedata
from collections import Counter

import numpy as np
import pandas as pd
import pytest
from test_corpus_count import SPACY, TARGETS, as_counters, plain_counter

from unstereo.unstereoeval.corpus import count_loop, hashing, jit, row_sort, token_edges, word_table
from unstereo.unstereoeval.corpus import tokenize as tk
from unstereo.unstereoeval.corpus.fast import FastCounter, _decode_spans
from unstereo.unstereoeval.corpus.readers import chunk_lines, iter_chunks

# characters whose lowercase is special: final sigma (context dependent), İ (two code points), the Kelvin sign
# (lowercases to ASCII k), ẞ, a combining mark, titlecase ǅ, a lone surrogate, NUL, letters of several widths
SPECIAL = "ΣσςΑΣİKẞ\u0301ǅ\ud800\x00Éé日本𝔘😀'.-_ \n\t"
ASCII = "abcXYZ she He HER his 42 . , ' "


def random_text(rng: random.Random, n: int) -> str:
    return "".join(rng.choice(SPECIAL if rng.random() < 0.3 else ASCII) for _ in range(n))


WITH_KERNELS = [False] + ([True] if jit.AVAILABLE else [])


@pytest.mark.parametrize("compiled", WITH_KERNELS, ids=lambda k: "numba" if k else "numpy")
def test_encode_batch_equals_lowering_the_whole_text(compiled):
    rng = random.Random(7)
    for _ in range(300):
        texts = [random_text(rng, rng.randrange(0, 40)) for _ in range(rng.randrange(1, 6))]
        buf, n = tk.encode_batch(texts, compiled=compiled)
        joined = tk.DOC_SEP.join(t.replace(tk.SEP, " ") for t in texts)
        assert buf == (joined + tk.SEP * tk.PAD).lower().encode("utf-8", "surrogatepass")
        assert n == len(buf) - tk.PAD


@pytest.mark.parametrize("compiled", WITH_KERNELS, ids=lambda k: "numba" if k else "numpy")
def test_final_sigma_is_lowered_in_context(compiled):
    # "ΑΣ" ends a word: final ς; "ΑΣΑ": medial σ; the context reaches across case-ignorable "'" but not a space
    buf, n = tk.encode_batch(["ΑΣ ΑΣΑ Α'Σ ΑΣ'Α x"], compiled=compiled)
    assert buf[:n].decode() == "ας ασα α'ς ασ'α x"


def compiled_spans(arr: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end offsets of the tokens as the compiled kernel gives them (start, end, start, ... in one array)."""
    edges, k = token_edges.edges(arr, n, tk.alpha_table())
    return edges[0:k:2], edges[1:k:2]


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_compiled_spans_equal_numpy_spans():
    # hand-made: "ab\x00 ç1d" -> tokens "ab\x00" (a NUL joins letters: the separator is spaced by encode_batch),
    # "ç" (2 bytes), "d"
    arr = np.frombuffer("ab\x00 ç1d".encode() + b"\x00" * tk.PAD, np.uint8)
    starts, ends = compiled_spans(arr, 8)
    assert starts.tolist() == [0, 4, 7] and ends.tolist() == [3, 6, 8]
    edges, k = token_edges.edges(
        arr, 8, tk.alpha_table()
    )  # what the counting loop reads: start, end, start, ...
    assert k == 6 and edges[:k].tolist() == [0, 3, 4, 6, 7, 8]
    rng = random.Random(11)
    for _ in range(300):
        texts = [random_text(rng, rng.randrange(0, 40)) for _ in range(rng.randrange(1, 6))]
        buf, n = tk.encode_batch(texts)
        arr = np.frombuffer(buf, np.uint8)
        got = compiled_spans(arr, n)
        expect = tk.token_spans(arr, n, separators=True)
        assert [g.tolist() for g in got] == [e.tolist() for e in expect]
    # long ASCII stretches (eight bytes at a time) with a non-ASCII character now and then, at every alignment
    pieces = ["the", "cat", "a", "xyz", " ", "  ", ",", "z{", "`a", "é", "ß", "1", "\x00", "Q", "ǅ", "—"]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 80)))
        buf, n = tk.encode_batch([text, text[1:]])
        arr = np.frombuffer(buf, np.uint8)
        got = compiled_spans(arr, n)
        expect = tk.token_spans(arr, n, separators=True)
        assert [g.tolist() for g in got] == [e.tolist() for e in expect]


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_new_words_decoded_the_same_by_the_kernel_and_numpy():
    arr = np.frombuffer("he said ç sa".encode(), np.uint8)
    starts, ends = np.array([0, 3, 8, 11]), np.array([2, 7, 10, 13])
    assert token_edges.join_spans(arr, starts, ends).tobytes() == "he\x01said\x01ç\x01sa".encode()
    for compiled in (False, True):
        assert _decode_spans(arr, starts, ends, compiled) == ["he", "said", "ç", "sa"]
        assert _decode_spans(arr, starts[1:2], ends[1:2], compiled) == ["said"]


def test_alpha_table_is_isalpha_everywhere():
    table = tk.alpha_table()
    slow = np.fromiter((chr(i).isalpha() for i in range(0x110000)), dtype=bool, count=0x110000)
    assert np.array_equal(table, slow)
    assert table[ord("a")] and table[ord("ǅ")] and not table[ord("½")] and not table[ord("Ⅻ")]
    assert unicodedata.numeric("Ⅻ") == 12  # a numeral that re's [^\W\d_] matches: the table must not


@pytest.mark.parametrize("chunk", [1, 7, 64, 1 << 20])
def test_chunks_hold_whole_lines(tmp_path, chunk):
    path = tmp_path / "x.jsonl"
    lines = [b'{"text": "line %d"}' % i for i in range(50)] + [b"", b"  ", b'{"text": "last"}']
    path.write_bytes(b"\n".join(lines))  # no newline at the end
    got, expect_first = [], 1
    for first, data, newlines in iter_chunks(path, chunk):
        assert list(newlines) == [i for i, c in enumerate(data) if c == 10]
        assert first == expect_first
        got += chunk_lines(data)
        expect_first += len(chunk_lines(data))
    assert got == lines


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_compiled_and_numpy_agree_on_random_unicode_and_long_words():
    rng = random.Random(3)
    words = [
        "she",
        "he",
        "her",
        "his",
        "the",
        "and",
        "naïve",
        "ΣΊΣΥΦΟΣ",
        "x" * 33,
        "y" * 9,
        "z" * 8,
        "straße",
    ]
    docs = [
        " ".join(
            rng.choice(words) if rng.random() < 0.7 else random_text(rng, 6) for _ in range(rng.randrange(30))
        )
        for _ in range(400)
    ]
    uni, co, n_pairs = plain_counter(docs, set(TARGETS), SPACY, 10)
    for compiled in (False, True):
        c = FastCounter(TARGETS, SPACY, 10, compiled=compiled)
        for i in range(0, len(docs), 37):
            c.add(docs[i : i + 37])
        out = c.counts()
        assert as_counters(out) == (uni, co) and out.n_pairs == n_pairs, compiled


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_compiled_hash_table_grows_without_losing_words():
    # batches of 1,000, 39,000 and 60,000 new words (plus repeats, targets among them): the table (32,768 words at
    # most at first, then 65,536) fills up in the middle of batches 2 and 3, grows and the count goes on from there
    def word(i: int) -> str:
        return "".join(chr(97 + (i // 26**k) % 26) for k in range(4))

    counters = [FastCounter(["she", "he"], ["the"], 10, compiled=c) for c in (True, False)]
    sizes, bounds = [], [0, 1_000, 40_000, 100_000]
    for b, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        docs = [
            " ".join(word(i) + (" she the" if i % 7 == 0 else "") for i in range(lo, hi)),
            f"he {word(5)} {word(b)}",
        ]
        for c in counters:
            c.add(docs)
        sizes.append(counters[0]._table.size)
    assert sizes[1] == 2 * sizes[0] and sizes[2] == 2 * sizes[1]  # it grew in the middle of batches 2 and 3
    compiled, plain = (c.counts() for c in counters)
    uni = dict(zip(compiled.unigrams["word"], compiled.unigrams["count"], strict=True))
    assert len(uni) == 100_002 and uni[word(5)] == 4 and uni[word(1)] == 2 and uni[word(99_999)] == 1
    assert as_counters(compiled) == as_counters(plain) and compiled.n_pairs == plain.n_pairs
    assert compiled.n_tokens == plain.n_tokens


def test_lower_changes_table_is_lower_everywhere():
    table = tk.lower_changes_table()
    slow = np.fromiter((chr(i).lower() != chr(i) for i in range(0x110000)), dtype=bool, count=0x110000)
    assert np.array_equal(table, slow)
    assert table[ord("A")] and table[0x130] and table[0x212A] and not table[ord("é")] and not table[ord("—")]


def test_reader_fast_path_reads_well_formed_chunks_and_defers_the_rest(tmp_path, monkeypatch):
    import json

    from unstereo.unstereoeval.corpus import readers

    good = "".join(json.dumps({"text": f"doc {i} é", "meta": {"i": [i]}}) + "\n" for i in range(300))
    (tmp_path / "good.jsonl").write_text(good)
    (tmp_path / "blank.jsonl").write_text(good + " \t\n" + good)
    calls, loads = [], json.loads
    monkeypatch.setattr(readers.json, "loads", lambda *a: calls.append(a) or loads(*a))
    reader = readers.DocumentReader()
    texts = [t for b in reader.batches(tmp_path / "good.jsonl") for t in b]
    assert texts == [f"doc {i} é" for i in range(300)] and not calls  # msgspec alone
    texts = [t for b in reader.batches(tmp_path / "blank.jsonl") for t in b]
    assert len(texts) == 600 and calls and reader.stats.blank_lines == 1  # the json module decided

    def blank(chunk: bytes) -> bool:
        return readers._has_blank_line(chunk, np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10))

    assert blank(b'{"a": 1}\n\n{"b": 2}') and blank(b"x\n  ") and blank(b" \r\nx") and blank(b"x\n \ny\n")
    assert not blank(b'{"a": 1}\n{"b": 2}\n') and not blank(b"x\ny") and not blank(b"x\n  y\n")


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_sparse_table_sums_codes_and_grows():
    # 8 slots to start; room for one more code past 70 % load doubles it: before the 6th distinct code (16 slots),
    # the 12th (32) and the 23rd (64), and 43 distinct codes stay below the next step (45); each code's count is
    # the times it was added
    codes = [5, 5, 0, 7, 5] + list(range(100, 140)) + [0, 139]
    sp, nsp = np.zeros(16, np.uint64), 0
    for c in codes:
        sp = count_loop._sparse_reserve(sp, nsp, 1)
        nsp += count_loop._sparse_add(sp, c)
    assert nsp == 43 and sp.size == 2 * 64
    assert count_loop._sparse_reserve(sp, nsp, 2).size == 2 * 128  # 45 codes in 64 slots would be 70.3 %
    assert (
        count_loop._sparse_reserve(sp, nsp, 1) is sp and count_loop._sparse_reserve(sp, 0, 90).size == 2 * 256
    )
    keys, vals = count_loop.co_items(np.zeros(0, np.int64), 0, 0, 0, sp, nsp)
    assert dict(zip(keys.tolist(), vals.tolist(), strict=True)) == Counter(codes)


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_sorted_rows_orders_by_word_rank_then_target():
    # 3 targets; words 0, 1, 2 rank 2, 0, 1. Rows (w, g, count): (0, 1, 10) (1, 2, 11) (0, 0, 12) (2, 0, 13)
    # (1, 0, 14) -> by (rank, g): (0, 0, 14) (0, 2, 11) (1, 0, 13) (2, 0, 12) (2, 1, 10)
    keys = np.array([0 * 3 + 1, 1 * 3 + 2, 0 * 3 + 0, 2 * 3 + 0, 1 * 3 + 0], np.int64)
    counts = np.array([10, 11, 12, 13, 14], np.int64)
    word, target, count = row_sort.sorted_rows(keys, counts, np.array([2, 0, 1], np.int64), 3)
    assert word.tolist() == [0, 0, 1, 2, 2]
    assert target.tolist() == [0, 2, 0, 0, 1]
    assert count.tolist() == [14, 11, 13, 12, 10]


def test_sparse_rows_beyond_the_dense_ones_match_numpy_and_hand_count():
    # dense_rows 0: every co-occurrence goes to the sparse table; 50,000 distinct words each once beside "she"
    # (and "he" at the start) give ~50,000 distinct codes, past the first table's 70 % load (45,875)
    def word(i: int) -> str:
        return "".join(chr(97 + (i // 26**k) % 26) for k in range(4))

    docs = [" ".join(f"{word(i)} she" for i in range(k, k + 5_000)) for k in range(0, 50_000, 5_000)]
    docs.append("he " + word(7) + " she")
    outs = []
    for compiled in [False] + ([True] if jit.AVAILABLE else []):
        c = FastCounter(["she", "he"], ["the"], 10, dense_rows=0, compiled=compiled)
        c.add(docs[:4])
        c.add(docs[4:])
        outs.append(c.counts())
    co = as_counters(outs[-1])[1]
    # word(7) is token 14 of the first document, the "she"s are its odd tokens: its window (tokens 5..23) holds
    # ten of them; the last document adds one "she" and one "he"
    toks = docs[0].split()
    i = toks.index(word(7))
    expect_she = (
        sum(1 for j in range(max(0, i - 9), min(len(toks), i + 10)) if j != i and toks[j] == "she") + 1
    )
    assert co[(word(7), "she")] == expect_she == 11 and co[(word(7), "he")] == 1
    for out in outs[1:]:
        assert as_counters(out) == as_counters(outs[0]) and out.n_pairs == outs[0].n_pairs


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_co_items_by_hand():
    """Target-major dense counts, 2 targets x 4 rows, 3 words seen: the row beyond them is not read; then the
    sparse table's codes (slots [code + 1, count]) in slot order."""
    dense = np.array([0, 2, 0, 9, 5, 0, 1, 0], np.int64)  # g=0: w1=2 (w3=9 unseen); g=1: w0=5, w2=1
    sp = np.array([0, 0, 8 + 1, 3, 0, 0, 11 + 1, 4], np.uint64)  # codes 8 (w4, g0) x3 and 11 (w5, g1) x4
    codes, counts = count_loop.co_items(dense, 2, 4, 3, sp, 2)
    assert codes.tolist() == [1 * 2 + 0, 0 * 2 + 1, 2 * 2 + 1, 8, 11] and counts.tolist() == [2, 5, 1, 3, 4]
    codes, counts = count_loop.co_items(dense, 2, 4, 3, np.zeros(4, np.uint64), 0)
    assert codes.tolist() == [2, 1, 5] and counts.tolist() == [2, 5, 1]


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_presized_table_counts_the_same_without_growing():
    """40,000 words: the default table (64k slots, half of them usable) grows, one sized for 100,000 does not."""
    letters = "bcdfghjklm"  # digits as letters: every word distinct, no stop word among them
    word = lambda k: "q" + "".join(letters[int(d)] for d in str(k))  # noqa: E731
    docs = [" ".join(word(40 * i + j) for j in range(40)) + " she" for i in range(1000)]
    plain = FastCounter(TARGETS, SPACY, 10, compiled=True)
    sized = FastCounter(TARGETS, SPACY, 10, compiled=True, expected_words=100_000)
    start = plain._table.size, sized._table.size
    assert start == (word_table.SLOT << 16, word_table.SLOT << 18)
    for c in (plain, sized):
        c.add(docs)
    assert plain._table.size > start[0] and sized._table.size == start[1]
    a, b = plain.counts(), sized.counts()
    assert len(a.unigrams) == 40_001
    pd.testing.assert_frame_equal(a.unigrams, b.unigrams)
    pd.testing.assert_frame_equal(a.cooccurrence, b.cooccurrence)


def _fnv_mix(b: bytes) -> int:
    """FNV-1a 64 of ``b``, then the splitmix64 finaliser, in plain Python integers."""
    m = (1 << 64) - 1
    h = 0xCBF29CE484222325
    for c in b:
        h = ((h ^ c) * 0x100000001B3) & m
    h = ((h ^ (h >> 30)) * 0xBF58476D1CE4E5B9) & m
    h = ((h ^ (h >> 27)) * 0x94D049BB133111EB) & m
    return h ^ (h >> 31)


@pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")
def test_string_hashes_by_hand_and_merge_partitions():
    import pyarrow as pa

    from unstereo.unstereoeval.corpus.parts import partition

    words = ["", "a", "she", "café", "she"]
    data = "".join(words).encode()
    offsets = np.cumsum([0] + [len(w.encode()) for w in words])
    got = hashing.string_hashes(offsets.astype(np.int64), np.frombuffer(data, np.uint8))
    assert got.tolist() == [_fnv_mix(w.encode()) for w in words]
    # partitions: the hash mod parts, also on a sliced arrow array (its offset) and a large_string one
    arr = pa.array(["x", *words])[1:]
    expect = [_fnv_mix(w.encode()) % 7 for w in words]
    assert partition(arr, 7).tolist() == expect == partition(arr.cast(pa.large_string()), 7).tolist()
