"""Bad corpus input: errors name file and line; skip mode skips and counts."""

from __future__ import annotations

import json

import pytest
import zstandard

from unstereo.errors import InputError
from unstereo.unstereoeval.corpus.count import count_files
from unstereo.unstereoeval.corpus.merge import read_counts
from unstereo.unstereoeval.corpus.readers import DocumentReader
from unstereo.unstereoeval.lexicon import load_targets

GOOD = json.dumps({"text": "she said hello"}).encode()


def docs(path, **kw):
    reader = DocumentReader(**kw)
    return [t for batch in reader.batches(path) for t in batch], reader.stats


BAD = {
    "malformed JSON": (b'{"text": "oops', 2),
    "invalid UTF-8": (b'{"text": "caf\xe9"}', 2),
    "missing text key": (b'{"body": "no text here"}', 2),
    "not a string": (b'{"text": 42}', 2),
    "not a JSON object": (b'["text"]', 2),
}


@pytest.mark.parametrize("what", sorted(BAD))
def test_bad_line_names_file_and_line(tmp_path, what):
    line, lineno = BAD[what]
    path = tmp_path / "shard.jsonl"
    path.write_bytes(GOOD + b"\n" + line + b"\n" + GOOD + b"\n")
    with pytest.raises(InputError) as err:
        docs(path)
    assert f"{path}:{lineno}:" in str(err.value)
    assert err.value.line == lineno
    texts, stats = docs(path, on_bad_line="skip")
    assert texts == ["she said hello", "she said hello"]
    assert stats.bad_lines == 1 and stats.docs == 2 and f"{path}:{lineno}:" in stats.bad_examples[0]


def test_every_bad_line_counted_in_skip_mode(tmp_path):
    path = tmp_path / "many.jsonl"
    lines = [GOOD, *(line for line, _ in BAD.values()), b"", GOOD]  # one blank line
    path.write_bytes(b"\n".join(lines) + b"\n")
    texts, stats = docs(path, on_bad_line="skip")
    assert len(texts) == 2 and stats.bad_lines == len(BAD) and stats.blank_lines == 1


def test_empty_file(tmp_path):
    path = tmp_path / "empty.jsonl"
    path.write_bytes(b"")
    with pytest.raises(InputError, match=rf"{path}:1: empty file"):
        docs(path)
    texts, stats = docs(path, on_bad_line="skip")
    assert texts == [] and stats.empty_files == 1


def _zst(path, data):
    path.write_bytes(zstandard.ZstdCompressor().compress(data))
    return path


def test_zst_reads_like_jsonl(tmp_path):
    data = b"".join(json.dumps({"text": f"she {i} he"}).encode() + b"\n" for i in range(5000))
    z = _zst(tmp_path / "ok.jsonl.zst", data)
    plain = tmp_path / "ok.jsonl"
    plain.write_bytes(data)
    assert docs(z, chunk_bytes=1000)[0] == docs(plain)[0]


@pytest.mark.parametrize("cut", [0.5, 0.999])
def test_truncated_zst(tmp_path, cut):
    data = b"".join(json.dumps({"text": f"she {i} he"}).encode() + b"\n" for i in range(20000))
    full = zstandard.ZstdCompressor().compress(data)
    path = tmp_path / "cut.jsonl.zst"
    path.write_bytes(full[: int(len(full) * cut)])
    with pytest.raises(InputError, match=rf"{path}:\d+: truncated zstd stream") as err:
        docs(path)
    assert err.value.line is not None
    texts, stats = docs(path, on_bad_line="skip")
    assert stats.truncated_files == 1 and stats.bad_lines == 1
    assert 0 < len(texts) < 20000
    assert texts[: len(texts)] == [
        f"she {i} he" for i in range(len(texts))
    ]  # the complete lines before the cut


def test_txt_invalid_utf8_and_documents(tmp_path):
    path = tmp_path / "plain.txt"
    path.write_bytes(b"she said\n\ncaf\xe9\nhe left\n")
    with pytest.raises(InputError, match=rf"{path}:3: invalid UTF-8"):
        docs(path)
    texts, stats = docs(path, on_bad_line="skip")
    assert texts == ["she said", "he left"] and stats.bad_lines == 1 and stats.blank_lines == 1


def test_unsupported_extension(tmp_path):
    path = tmp_path / "x.csv"
    path.write_text("a")
    with pytest.raises(InputError, match="unsupported corpus file"):
        docs(path)


def test_skip_counts_reach_stats_json(tmp_path):
    path = tmp_path / "s.jsonl"
    path.write_bytes(GOOD + b"\n" + b"{broken\n" + GOOD + b"\n")
    count_files([path], tmp_path / "out", targets=load_targets(), stopwords=[], on_bad_line="skip")
    stats = read_counts(tmp_path / "out")[2]
    assert stats["read"]["bad_lines"] == 1 and stats["read"]["docs"] == 2
    with pytest.raises(InputError, match=rf"{path}:2: malformed JSON"):
        count_files([path], tmp_path / "out2", targets=load_targets(), stopwords=[])


def test_text_key_and_escapes(tmp_path):
    # other keys are ignored; JSON escapes (a lone surrogate too, as the json module reads it) are kept
    path = tmp_path / "k.jsonl"
    path.write_text(
        '{"id": 1, "body": "she \\u00e9t\\u00e9", "text": 5}\n{"body": "a\\ud800b", "meta": {"x": [1, 2]}}\n'
    )
    texts, stats = docs(path, text_key="body")
    assert texts == ["she été", "a\ud800b"] and stats.docs == 2
