"""The raw JSONL path of the compiled counter: the JSON kernel writes exactly :func:`encode_batch`'s buffer, rejects
what it is not sure of (the str path then decides, as before), and counts stay identical."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import zstandard
from test_corpus_count import SPACY, TARGETS

from unstereo.errors import InputError
from unstereo.unstereoeval.corpus import jit
from unstereo.unstereoeval.corpus import tokenize as tk
from unstereo.unstereoeval.corpus.count import count_files
from unstereo.unstereoeval.corpus.fast import FastCounter
from unstereo.unstereoeval.corpus.merge import read_counts
from unstereo.unstereoeval.corpus.readers import DocumentReader

pytestmark = pytest.mark.skipif(not jit.AVAILABLE, reason="numba is not installed")

PAD = b"\x00" * tk.PAD


def encode(*values: bytes) -> tk.EncodedBatch | None:
    from unstereo.unstereoeval.corpus.json_strings import encode_json_batch

    return encode_json_batch(list(values))


def expected(texts: list[str]) -> bytes:
    """The definition of the batch buffer (encode_batch's docstring)."""
    joined = tk.DOC_SEP.join(t.replace(tk.SEP, " ") for t in texts)
    return (joined + tk.SEP * tk.PAD).lower().encode("utf-8", "surrogatepass")


HAND_MADE = [
    # (raw JSON string value, the bytes the kernel writes)
    (rb'"Ab\"\\\/\b\f\n\r\tZ"', b'ab"\\/\x08\x0c\n\r\tz'),
    (rb'"\u0041\u00e9\u00C9x"', "aééx".encode()),  # \u00C9 = É: lowered by the str.lower stretch
    (rb'"x\ud83d\ude00y"', "x😀y".encode()),  # a surrogate pair: one 4-byte character
    (rb'"\ud800 \udc00x \ud800\u0041"', b"\xed\xa0\x80 \xed\xb0\x80x \xed\xa0\x80a"),  # lone surrogates
    (rb'"a\u0000b"', b"a b"),  # NUL blanked
    ('"Ünïcode 日本 😀 ΣΑΣ İ"'.encode(), "ünïcode 日本 😀 σας i̇".encode()),  # raw UTF-8, final sigma, İ
    (b'"ABCDEFGHIJKLMNOPQRSTUVWXYZ@[`{ 0123456789"', b"abcdefghijklmnopqrstuvwxyz@[`{ 0123456789"),
    (b'""', b""),
]


def test_json_kernel_hand_made():
    for raw, out in HAND_MADE:
        batch = encode(raw)
        assert batch is not None, raw
        assert bytes(batch.buffer) == out + PAD and batch.n == len(out) and batch.docs == 1, raw
    batch = encode(*(raw for raw, _ in HAND_MADE))
    joined = b" \x00 ".join(out for _, out in HAND_MADE)
    assert bytes(batch.buffer) == joined + PAD and batch.n == len(joined) and len(batch) == len(HAND_MADE)


def test_json_kernel_special_bytes_at_every_offset():
    # the kernel takes plain bytes 8 at a time: put each kind of byte at each offset of a block
    for special, out in [(rb"\u00c9", "é".encode()), (b"\\n", b"\n"), ("é".encode(), "é".encode())]:
        for k in range(17):
            raw = b'"' + b"Ab" * 10 + b"x" * k + special + b"Q" * (20 - k) + b'"'
            batch = encode(raw)
            assert bytes(batch.buffer) == b"ab" * 10 + b"x" * k + out + b"q" * (20 - k) + PAD


REJECTED = {
    "not a string": b"5",
    "null": b"null",
    "an object": b'{"a": "b"}',
    "one quote": b'"',
    "unknown escape": rb'"a\x"',
    "short \\u": rb'"a\u12"',
    "bad hex": rb'"a\u12G4"',
    "backslash last": b'"a\\"',
    "quote inside": b'"a"b"',
    "raw control character": b'"a\x01b"',
    "raw NUL": b'"a\x00b"',
    "raw newline": b'"a\nb"',
    "overlong 2 bytes": b'"\xc0\xaf"',
    "overlong 3 bytes": b'"\xe0\x80\xaf"',
    "overlong 4 bytes": b'"\xf0\x80\x80\xaf"',
    "encoded surrogate": b'"\xed\xa0\x80"',
    "beyond U+10FFFF": b'"\xf4\x90\x80\x80"',
    "lead byte F5": b'"\xf5\x80\x80\x80"',
    "truncated": b'"\xe2\x82"',
    "stray continuation": b'"a\x80b"',
    "latin-1": b'"caf\xe9"',
}


@pytest.mark.parametrize("what", sorted(REJECTED))
def test_json_kernel_rejects(what):
    assert encode(b'"fine"', REJECTED[what]) is None


SPECIAL = "ΣσςΑΣİKẞ\u0301ǅ\ud800\udc00\x00\x01\x1f\x7fÉé日本𝔘😀\"\\/'.-_ \n\t\r\b\f"
ASCII = "abcXYZ she He HER his 42 . , ' "


def random_text(rng: random.Random) -> str:
    n = rng.randrange(0, 60)
    out = []
    for _ in range(n):
        r = rng.random()
        if r < 0.2:
            out.append(rng.choice(SPECIAL))
        elif r < 0.3:
            out.append(chr(rng.randrange(0x80, 0x110000)))
        else:
            out.append(rng.choice(ASCII))
    return "".join(out)


@pytest.mark.parametrize("ensure_ascii", [True, False])
def test_json_kernel_equals_encode_batch_on_random_documents(ensure_ascii):
    rng = random.Random(5 + ensure_ascii)
    for _ in range(400):
        texts = [random_text(rng) for _ in range(rng.randrange(1, 6))]
        raws = [json.dumps(t, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass") for t in texts]
        batch = encode(*raws)
        surrogates = any(0xD800 <= ord(c) < 0xE000 for t in texts for c in t)
        if not ensure_ascii and surrogates:  # raw surrogates are not UTF-8: the str path decides
            assert batch is None
            continue
        buf, n = tk.encode_batch(texts, compiled=True)
        assert bytes(batch.buffer) == buf == expected(texts) and batch.n == n


def scan(*lines: bytes, key: bytes = b"text") -> list[bytes] | None:
    """The text values the line scan finds in a chunk of ``lines`` (None: it is not sure of one)."""
    chunk = b"\n".join(lines) + b"\n"
    newlines = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
    starts, ends = np.empty(len(lines), np.int64), np.empty(len(lines), np.int64)
    from unstereo.unstereoeval.corpus.jsonl_scan import json_lines

    ok = json_lines(
        np.frombuffer(chunk, np.uint8),
        newlines,
        np.frombuffer(key, np.uint8),
        starts,
        ends,
        np.empty(4, np.uint8),
    )
    return [chunk[a:b] for a, b in zip(starts, ends, strict=True)] if ok else None


def test_line_scan_finds_the_text_value_by_hand():
    lines = [
        b'{"text": "She", "meta": {"pile_set_name": "Pile-CC"}}',
        b' \t{"meta": [1, -2.5e+3, 0, 0.5, 1E-7, true, false, null, {}, [], {"y": "z\\n\\u00e9\\"\\\\"}], "text" : "a\\"b\\\\" } \r',
        b'{"id": 1'
        + b"0" * 99
        + b', "text": "", "t": "text", "texts": 1e-9999, "x": -0.0000000000000000012}',
        '{"text": "é", "méta": "日本 \\ud800 \\ud83d\\ude00"}'.encode(),  # UTF-8, escaped surrogates elsewhere
    ]
    assert scan(*lines) == [b'"She"', rb'"a\"b\\"', b'""', '"é"'.encode()]
    assert scan(b'{"body": "x", "text": 1}', key=b"body") == [b'"x"']
    # up to stack.size (4 here) nested containers
    assert scan(b'{"text": "x", "m": [[[{"a": 1}]]]}') == [b'"x"']
    assert scan(b'{"text": "x", "m": [[[[{}]]]]}') is None


LINE_SCAN_DECLINES = {
    "blank line": b"  ",
    "not an object": b'["text", "a"]',
    "empty object": b"{}",
    "no text key": b'{"meta": "a"}',
    "text not a string": b'{"text": 5}',
    "repeated text key": b'{"text": "a", "text": "b"}',
    "key with an escape": b'{"te\\u0078t": "a"}',
    "text not closed": b'{"text": "a}',
    "escaped quote at the end": b'{"text": "a\\"}',
    "content after the object": b'{"text": "a"} x',
    "second object": b'{"text": "a"}{"text": "b"}',
    "trailing comma": b'{"text": "a",}',
    "missing comma": b'{"text": "a" "m": 1}',
    "missing colon": b'{"text" "a"}',
    "leading zero": b'{"text": "a", "m": 01}',
    "point without digits": b'{"text": "a", "m": 1.}',
    "lone minus": b'{"text": "a", "m": -}',
    "101 digits": b'{"text": "a", "m": 1' + b"0" * 100 + b"}",
    "5 exponent digits": b'{"text": "a", "m": 1e10000}',
    "bad literal": b'{"text": "a", "m": tru}',
    "invalid UTF-8 in another string": b'{"text": "a", "m": "caf\xe9"}',
    "encoded surrogate in another string": b'{"text": "a", "m": "\xed\xa0\x80"}',
    "unknown escape in another string": b'{"text": "a", "m": "\\x"}',
    "control character in another string": b'{"text": "a", "m": "\x01"}',
    "array without comma": b'{"text": "a", "m": [1 2]}',
    "array trailing comma": b'{"text": "a", "m": [1,]}',
    "unclosed array": b'{"text": "a", "m": [1}',
    "unclosed object": b'{"text": "a", "m": {"b": 1}',
    "one brace too many": b'{"text": "a"}}',
}


@pytest.mark.parametrize("what", sorted(LINE_SCAN_DECLINES))
def test_line_scan_declines(what, tmp_path):
    good = b'{"text": "fine"}'
    assert scan(good, good) == [b'"fine"'] * 2
    assert scan(good, LINE_SCAN_DECLINES[what]) is None
    # the reader then parses the chunk as before: the same result (or error) as without the raw path
    path = tmp_path / "x.jsonl"
    path.write_bytes(good + b"\n" + LINE_SCAN_DECLINES[what] + b"\n")
    try:
        plain, r2 = read(path, False, on_bad_line="skip")
    except InputError as exc:
        with pytest.raises(InputError, match=re.escape(str(exc))):
            read(path, True, on_bad_line="skip")
        return
    raw, r1 = read(path, True, on_bad_line="skip")
    assert r1.stats == r2.stats and [as_buffer(b) for b in raw] == [as_buffer(b) for b in plain]


def random_json(rng: random.Random, depth: int = 0):
    """A random JSON value."""
    r = rng.random()
    if depth < 3 and r < 0.15:
        return [random_json(rng, depth + 1) for _ in range(rng.randrange(4))]
    if depth < 3 and r < 0.3:
        return {random_text(rng)[:8]: random_json(rng, depth + 1) for _ in range(rng.randrange(4))}
    if r < 0.45:
        return rng.choice([True, False, None])
    if r < 0.6:
        return rng.randrange(-(10**17), 10**17)
    if r < 0.75:
        return rng.uniform(-1e6, 1e6) * 10 ** rng.randrange(-30, 30)
    return random_text(rng)


def test_line_scan_on_random_objects_reads_what_the_str_path_reads(tmp_path):
    # other members of every kind around the text, as json.dumps writes them: the scan finds every text value, and
    # the reader's batches are the str path's
    rng = random.Random(3)
    lines, texts = [], []
    for _ in range(2000):
        doc = {"text": random_text(rng)} | {f"m{k}": random_json(rng) for k in range(rng.randrange(3))}
        items = list(doc.items())
        rng.shuffle(items)
        lines.append(json.dumps(dict(items)).encode())
        texts.append(json.dumps(doc["text"]).encode())
    for line, text in zip(lines, texts, strict=True):
        assert scan(line) == [text], line
    assert scan(*lines) == texts
    path = tmp_path / "r.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    raw, r1 = read(path, True, chunk_bytes=2000)
    plain, r2 = read(path, False, chunk_bytes=2000)
    assert r1.stats == r2.stats and r1.stats.docs == 2000
    assert all(isinstance(b, tk.EncodedBatch) for b in raw)
    assert [as_buffer(b) for b in raw] == [as_buffer(b) for b in plain]


def test_line_scan_declined_chunks_still_take_the_raw_path_through_msgspec(tmp_path):
    path = tmp_path / "m.jsonl"
    path.write_bytes(b'{"text": "She Said", "m\\u00e9ta": 1}\n')  # an escape in a key: the scan declines
    assert scan(path.read_bytes().rstrip(b"\n")) is None
    (batch,), _ = read(path, True)
    assert isinstance(batch, tk.EncodedBatch)
    assert as_buffer(batch) == tk.encode_batch(["She Said"], compiled=True)[0]


def write_jsonl(path: Path, texts: list[str], rng: random.Random, ensure_ascii: bool = True) -> Path:
    lines = []
    for i, t in enumerate(texts):
        doc = {"meta": {"i": i, "s": "x\u00e9"}, "text": t} if rng.random() < 0.5 else {"text": t, "id": i}
        lines.append(json.dumps(doc, ensure_ascii=ensure_ascii).encode("utf-8", "surrogatepass") + b"\n")
    data = b"".join(lines)
    if path.name.endswith(".zst"):  # several frames, cut anywhere
        cuts = sorted(rng.sample(range(1, len(data)), 5))
        data = b"".join(
            zstandard.ZstdCompressor().compress(data[a:b])
            for a, b in zip([0, *cuts], [*cuts, None], strict=True)
        )
    path.write_bytes(data)
    return path


def read(path: Path, raw: bool, **kw) -> tuple[list, DocumentReader]:
    reader = DocumentReader(raw_json=raw, **kw)
    return list(reader.batches(path)), reader


def as_buffer(batch) -> bytes:
    return (
        bytes(batch.buffer)
        if isinstance(batch, tk.EncodedBatch)
        else tk.encode_batch(batch, compiled=True)[0]
    )


@pytest.mark.parametrize("name", ["r.jsonl", "r.jsonl.zst"])
@pytest.mark.parametrize("lone", [False, True])
def test_reader_raw_batches_equal_encoded_str_batches(tmp_path, name, lone):
    # lone surrogate escapes: the line scan leaves the text to the JSON kernel, which writes them as the str path
    # does (msgspec, the fallback when the scan is not sure, refuses them even in a Raw value)
    rng = random.Random(9)
    texts = [random_text(rng) for _ in range(3000)]
    if not lone:
        texts = [re.sub("[\ud800-\udfff]", "", t) for t in texts]
    path = write_jsonl(tmp_path / name, texts, rng)
    raw, r1 = read(path, True, chunk_bytes=4000)
    plain, r2 = read(path, False, chunk_bytes=4000)
    assert r1.stats == r2.stats and r1.stats.docs == 3000
    encoded = sum(isinstance(b, tk.EncodedBatch) for b in raw)
    assert len(raw) == len(plain) and encoded == len(raw)
    for b, texts in zip(raw, plain, strict=True):
        assert as_buffer(b) == tk.encode_batch(texts, compiled=True)[0] and len(b) == len(texts)
        if isinstance(b, tk.EncodedBatch):
            assert b.n == len(b.buffer) - tk.PAD


def test_rejected_lines_fall_back_and_are_named(tmp_path):
    # 20,000 good lines after the bad ones: more than one block read (the chunks of a .jsonl are whole blocks)
    good = json.dumps({"text": "She said \u00e9"}).encode()
    lines = [good] * 5 + [b'{"text": 5}'] + [good] * 5 + [b'{"text": "caf\xe9"}'] + [good] * 20_000
    path = tmp_path / "bad.jsonl"
    path.write_bytes(b"\n".join(lines) + b"\n")
    with pytest.raises(InputError, match=rf"{path}:6: text key 'text' is int"):
        read(path, True)
    batches, reader = read(path, True, on_bad_line="skip")
    assert reader.stats.bad_lines == 2 and reader.stats.docs == 20_010
    assert f"{path}:6:" in reader.stats.bad_examples[0]
    assert f"{path}:12: invalid UTF-8" in reader.stats.bad_examples[1]
    assert [type(b) for b in batches] == [list]  # one chunk: the str path read it
    # a chunk the kernel rejects, then chunks it accepts
    batches, reader = read(path, True, on_bad_line="skip", chunk_bytes=100)
    assert [type(b) for b in batches[:2]] == [list, tk.EncodedBatch] and reader.stats.docs == 20_010
    assert sum(map(len, batches)) == 20_010 and batches[0][:6] == ["She said \u00e9"] * 6


@pytest.mark.parametrize(
    "line, texts",
    [
        (rb'{"text": "a\ud800b"}', ["a\ud800b"]),  # a lone surrogate escape: msgspec refuses it
        (b'{"text": "a\\u0000b", "text": "Zz"}', ["Zz"]),  # the last of repeated keys
        (b'{"text": 5, "text": "Zz"}', ["Zz"]),
    ],
)
def test_raw_path_reads_what_the_str_path_reads(tmp_path, line, texts):
    path = tmp_path / "x.jsonl"
    path.write_bytes(line + b"\n")
    (raw,), _ = read(path, True)
    (plain,), _ = read(path, False)
    assert plain == texts
    assert as_buffer(raw) == tk.encode_batch(texts, compiled=True)[0]


def test_blank_line_falls_back(tmp_path):
    path = tmp_path / "b.jsonl"
    path.write_bytes(b'{"text": "A"}\n\n{"text": "B"}\n')
    batches, reader = read(path, True)
    assert batches == [["A", "B"]] and reader.stats.blank_lines == 1


def test_numpy_counter_refuses_encoded_batches():
    with pytest.raises(TypeError):
        FastCounter(TARGETS, SPACY, compiled=False).add(encode(b'"she"'))


def tables(out: Path):
    uni, co, stats = read_counts(out)
    return uni, co, {k: stats[k] for k in ("n_tokens", "n_pairs", "read")}


def same_tables(a: Path, b: Path) -> None:
    (ua, ca, sa), (ub, cb, sb) = tables(a), tables(b)
    pd.testing.assert_frame_equal(ua, ub)
    pd.testing.assert_frame_equal(ca, cb)
    assert sa == sb


def test_counts_equal_without_the_raw_path_on_a_pile_like_shard(tmp_path):
    rng = random.Random(13)
    words = ["she", "He", "HER", "his", "the", "Nurse", "doctor", "naïve", "Émile", "ΣΊΣΥΦΟΣ", "x" * 40]
    texts = [
        " ".join(
            rng.choice(words) if rng.random() < 0.8 else random_text(rng) for _ in range(rng.randrange(80))
        )
        for _ in range(2000)
    ]
    path = write_jsonl(tmp_path / "00.jsonl.zst", texts, rng)
    kw = dict(targets=TARGETS, stopwords=SPACY, chunk_mb=0.05)
    count_files([path], tmp_path / "raw", **kw)
    count_files([path], tmp_path / "str", raw_json=False, **kw)
    same_tables(tmp_path / "raw", tmp_path / "str")
    count_files([path], tmp_path / "naive", engine="naive", **kw)
    same_tables(tmp_path / "raw", tmp_path / "naive")


def test_demo_corpus_counts_equal_without_the_raw_path(resource, tmp_path):
    demo = resource("demo-corpus")
    paths = [demo / "brown.jsonl", demo / "nlp-corpus.jsonl"]
    count_files(paths, tmp_path / "raw", targets=TARGETS, stopwords=SPACY)
    count_files(paths, tmp_path / "str", targets=TARGETS, stopwords=SPACY, raw_json=False)
    same_tables(tmp_path / "raw", tmp_path / "str")


def synthetic_shard(tmp_path: Path, repo_dir: Path) -> tuple[Path, dict]:
    """A 10 MB PILE-like shard made by the benchmarks' generator, with the totals it must give."""
    script = repo_dir / "benchmarks" / "make_synthetic_corpus.py"
    args = ["--gb", "0.01", "--shards", "1", "--vocab", "20000"]
    subprocess.run(
        [sys.executable, str(script), str(tmp_path / "syn"), *args],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return tmp_path / "syn" / "00.jsonl.zst", json.loads((tmp_path / "syn" / "expected.json").read_text())


def test_synthetic_shard_counts_equal_without_the_raw_path(tmp_path, repo_dir):
    path, expect = synthetic_shard(tmp_path, repo_dir)
    count_files([path], tmp_path / "raw", targets=TARGETS, stopwords=SPACY)
    count_files([path], tmp_path / "str", targets=TARGETS, stopwords=SPACY, raw_json=False)
    same_tables(tmp_path / "raw", tmp_path / "str")
    stats = tables(tmp_path / "raw")[2]
    assert stats["read"]["docs"] > 1000
    assert (stats["n_tokens"], stats["n_pairs"]) == (expect["n_tokens"], expect["n_pairs"])
