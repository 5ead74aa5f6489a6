"""Counting: the fast counter equals a plainly written reference counter; shards merge exactly; spills are exact."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from unstereo.unstereoeval.corpus.count import count_files
from unstereo.unstereoeval.corpus.fast import FastCounter
from unstereo.unstereoeval.corpus.merge import merge_count_dirs, read_counts
from unstereo.unstereoeval.corpus.naive import count_naive, pairs_in_document
from unstereo.unstereoeval.lexicon import load_stopwords, load_targets

TARGETS = load_targets()  # the 38 pairs' words
SPACY = load_stopwords("spacy")


def plain_tokens(text: str) -> list[str]:
    """Lowercase, then maximal runs of characters with isalpha(), one character at a time."""
    tokens, cur = [], []
    for ch in text.lower():
        if ch.isalpha():
            cur.append(ch)
        elif cur:
            tokens.append("".join(cur))
            cur = []
    if cur:
        tokens.append("".join(cur))
    return tokens


def plain_counter(docs, targets, stopwords, window):
    """The reference, written plainly: per document, for each target occurrence, loop over its window."""
    uni, co, n_pairs = Counter(), Counter(), 0
    for doc in docs:
        toks = [t for t in plain_tokens(doc) if t in targets or t not in stopwords]
        for t in toks:
            uni[t] += 1
        for i in range(len(toks)):
            for j in range(len(toks)):
                if i != j and abs(i - j) < window:
                    n_pairs += 1
                    if toks[i] in targets:
                        co[(toks[j], toks[i])] += 1
    return uni, co, n_pairs


def as_counters(counts):
    uni = Counter(dict(zip(counts.unigrams["word"], counts.unigrams["count"], strict=True)))
    co = Counter(
        {
            (w, t): c
            for w, t, c in zip(
                counts.cooccurrence["word"],
                counts.cooccurrence["target"],
                counts.cooccurrence["count"],
                strict=True,
            )
        }
    )
    return uni, co


@pytest.fixture(params=[False, True], ids=["numpy", "numba"])
def compiled(request):
    """Both paths of the fast counter: numpy, and the compiled kernels (when numba is installed)."""
    from unstereo.unstereoeval.corpus import jit

    if request.param and not jit.AVAILABLE:
        pytest.skip("numba is not installed")
    return request.param


def fast(docs, targets=TARGETS, stopwords=SPACY, window=10, batch=3, **kw):
    counter = FastCounter(targets, stopwords, window, **kw)
    for i in range(0, len(docs), batch):
        counter.add(docs[i : i + batch])
    return counter


EDGE_DOCS = [
    "",
    "she",
    "   ...   ",
    "She he SHE",  # targets only, repeated
    "she she she she she she she she she she she she",  # one target repeated beyond the window
    "He said: she's here. Her mother and her father were there; he's not.",
    "Ça va, naïve Zoë? ΣΊΣΥΦΟΣ and İstanbul, straße, 日本語 she 東京",  # non-ASCII letters (İ lowercases to 2 code points)
    "e\u0301t\u00e9 caf\u00e9 she",  # a combining accent splits a token; a precomposed one does not
    "a" * 1000 + " she " + "b" * 37 + " he " + "c" * 9 + " " + "d" * 8 + " her " + "x" * 33,  # long words
    "abc123def she_he her-him 42 his\nhim\tqueen",  # digits, underscores, hyphens, newlines, tabs
    "null\x00byte she he",  # a NUL inside a document is not a document boundary
    "emoji 😀 she 😀 he 𝔘𝔫𝔦𝔠𝔬𝔡𝔢",  # 4-byte UTF-8 (mathematical letters are alphabetic)
    "he " + "word " * 3 + "she",  # exactly at |i - j| = 4
    "her",
]


@pytest.mark.parametrize("window,dense_rows", [(2, 1 << 18), (5, 1 << 18), (10, 1 << 18), (10, 4), (3, 0)])
def test_fast_equals_plain_reference_on_edge_cases(window, dense_rows, compiled):
    # dense_rows: word ids below it are counted in a dense array, the others sparsely; both paths must agree
    uni, co, n_pairs = plain_counter(EDGE_DOCS, set(TARGETS), SPACY, window)
    c = fast(EDGE_DOCS, window=window, dense_rows=dense_rows, compiled=compiled).counts()
    assert as_counters(c) == (uni, co)
    assert c.n_pairs == n_pairs
    assert c.n_tokens == sum(uni.values())
    lib = count_naive(EDGE_DOCS, TARGETS, SPACY, window)
    assert as_counters(lib) == (uni, co) and lib.n_pairs == n_pairs


def test_hand_counted_example(compiled):
    # No stop words, window 3 (offsets 1 and 2), targets she/he. Tokens: she(0) likes(1) cats(2) he(3) likes(4) she(5)
    # Windows: she@0 -> likes, cats; he@3 -> likes@1, cats, likes@4, she@5; she@5 -> he@3, likes@4.
    # c(likes, she) = 1 + 1 = 2; c(cats, she) = 1; c(he, she) = 1; c(likes, he) = 2; c(cats, he) = 1; c(she, he) = 1.
    # Ordered pairs: 2 * ((6 - 1) + (6 - 2)) = 18.
    c = fast(
        ["She likes cats, he likes she."], targets=["she", "he"], stopwords=[], window=3, compiled=compiled
    ).counts()
    uni, co = as_counters(c)
    assert uni == Counter({"she": 2, "likes": 2, "cats": 1, "he": 1})
    assert co == Counter(
        {
            ("likes", "she"): 2,
            ("cats", "she"): 1,
            ("he", "she"): 1,
            ("likes", "he"): 2,
            ("cats", "he"): 1,
            ("she", "he"): 1,
        }
    )
    assert c.n_pairs == 18


def test_identical_targets_count_from_both_ends(compiled):
    # "she x she", window 10: she@0 sees x, she@2; she@2 sees she@0, x -> c(she, she) = 2, c(x, she) = 2.
    c = fast(["she x she"], targets=["she", "he"], stopwords=[], window=10, compiled=compiled).counts()
    assert as_counters(c)[1] == Counter({("she", "she"): 2, ("x", "she"): 2})


def test_pairs_in_document():
    # n = 3, window 10: all 3 * 2 ordered pairs; n = 12, window 3: 2 * (11 + 10) = 42; n = 0 or 1: none.
    assert pairs_in_document(3, 10) == 6
    assert pairs_in_document(12, 3) == 42
    assert list(pairs_in_document(np.array([0, 1, 2]), 10)) == [0, 0, 2]


def test_spilled_counts_equal_in_memory(tmp_path, compiled):
    def word(i: int) -> str:  # distinct letter-only words: base 26
        return "w" + "".join(chr(97 + (i // 26**k) % 26) for k in range(3))

    docs = EDGE_DOCS * 3 + [
        " ".join(f"{word(i)} she" if i % 3 else word(i) for i in range(k, k + 90)) for k in range(0, 2700, 90)
    ]
    mem = fast(docs, compiled=compiled).counts()
    counter = fast(docs, spill_types=100, spill_dir=tmp_path / "spill", compiled=compiled)
    counter.finish(tmp_path / "out", {}, partitions=3)
    assert len(counter.runs) > 1  # it did spill
    uni, co, stats = read_counts(tmp_path / "out")
    assert stats["n_tokens"] == mem.n_tokens and stats["n_pairs"] == mem.n_pairs
    pd.testing.assert_frame_equal(uni.sort_values("word").reset_index(drop=True), mem.unigrams)
    pd.testing.assert_frame_equal(co.sort_values(["word", "target"]).reset_index(drop=True), mem.cooccurrence)


def _write_jsonl(path: Path, docs) -> Path:
    path.write_text("".join(json.dumps({"text": d, "meta": {"i": i}}) + "\n" for i, d in enumerate(docs)))
    return path


@pytest.mark.parametrize("partitions", [None, 4])
def test_two_shards_merged_equal_one_file(tmp_path, partitions):
    docs = EDGE_DOCS * 2 + ["The queen said she and the king, he, left; his wife and her husband stayed."] * 5
    a = _write_jsonl(tmp_path / "a.jsonl", docs[:11])
    b = _write_jsonl(tmp_path / "b.jsonl", docs[11:])
    kw = dict(targets=TARGETS, stopwords=SPACY, window=10, chunk_mb=0.0005)
    count_files([a], tmp_path / "ca", **kw)
    count_files([b], tmp_path / "cb", **kw)
    count_files([a, b], tmp_path / "cab", **kw)
    merged = merge_count_dirs([tmp_path / "ca", tmp_path / "cb"], tmp_path / "m", partitions=partitions)
    count_files([a, b], tmp_path / "naive", engine="naive", **kw)  # the naive engine writes the same tables
    for name in ("unigrams.parquet", "cooccurrence.parquet"):
        pd.testing.assert_frame_equal(
            pd.read_parquet(tmp_path / "naive" / name), pd.read_parquet(tmp_path / "cab" / name)
        )
    u1, c1, s1 = read_counts(merged)
    u2, c2, s2 = read_counts(tmp_path / "cab")
    pd.testing.assert_frame_equal(u1.sort_values("word").reset_index(drop=True), u2)
    pd.testing.assert_frame_equal(c1.sort_values(["word", "target"]).reset_index(drop=True), c2)
    assert (s1["n_tokens"], s1["n_pairs"], s1["read"]["docs"]) == (
        s2["n_tokens"],
        s2["n_pairs"],
        s2["read"]["docs"],
    )


def test_unsorted_shards_hold_the_same_rows_and_merge_to_the_sorted_tables(tmp_path):
    """``corpus count --unsorted`` (the workflow's shards): the rows of the sorted tables in another order, flagged
    in stats.json; merged, the same tables as merging sorted shards."""
    from click.testing import CliRunner

    from unstereo.cli import cli

    docs = [
        "zebra met the queen; she smiled at the zebra and a yak.",
        "Apple, mango, he said, and his apple.",
    ] * 3
    a = _write_jsonl(tmp_path / "a.jsonl", docs[:4])
    b = _write_jsonl(tmp_path / "b.jsonl", docs[4:])
    for shard in (a, b):
        for flag in ([], ["--unsorted"]):
            out = tmp_path / (shard.stem + ("-u" if flag else "-s"))
            res = CliRunner().invoke(cli, ["corpus", "count", str(shard), "-o", str(out), *flag])
            assert res.exit_code == 0, res.output
            assert read_counts(out)[2]["sorted"] is not bool(flag)
    su, sc, _ = read_counts(tmp_path / "a-s")
    uu, uc, _ = read_counts(tmp_path / "a-u")
    assert list(su["word"]) == sorted(su["word"]) and list(uu["word"]) != sorted(uu["word"])
    pd.testing.assert_frame_equal(uu.sort_values("word").reset_index(drop=True), su)
    pd.testing.assert_frame_equal(uc.sort_values(["word", "target"]).reset_index(drop=True), sc)
    m_s = read_counts(merge_count_dirs([tmp_path / "a-s", tmp_path / "b-s"], tmp_path / "ms"))
    m_u = read_counts(merge_count_dirs([tmp_path / "a-u", tmp_path / "b-u"], tmp_path / "mu"))
    pd.testing.assert_frame_equal(m_u[0], m_s[0])
    pd.testing.assert_frame_equal(m_u[1], m_s[1])


@pytest.mark.parametrize("engine", ["fast", "naive"])
def test_shards_left_as_runs_merge_to_the_tables(tmp_path, engine):
    """``corpus count --runs`` (the workflow's shards): a directory of runs (several when the spill limit is low)
    listed in stats.json, which only ``corpus merge`` reads; merged alone, with each other or with a shard of
    tables, the same tables and totals as the shards counted to tables."""
    from click.testing import CliRunner

    from unstereo.cli import cli
    from unstereo.errors import InputError

    def word(i: int) -> str:
        return "w" + "".join(chr(97 + (i // 26**k) % 26) for k in range(3))

    docs = EDGE_DOCS + [
        " ".join(f"{word(i)} she" if i % 3 else word(i) for i in range(k, k + 40)) for k in range(0, 800, 40)
    ]
    a = _write_jsonl(tmp_path / "a.jsonl", docs[::2])
    b = _write_jsonl(tmp_path / "b.jsonl", docs[1::2])
    opts = ["--engine", engine, "--chunk-mb", "0.0005", "--spill-types", "150"]
    for shard in (a, b):
        for flag in ([], ["--runs"]):
            out = tmp_path / (shard.stem + ("-r" if flag else "-t"))
            res = CliRunner().invoke(cli, ["corpus", "count", str(shard), "-o", str(out), *opts, *flag])
            assert res.exit_code == 0, res.output
    stats = json.loads((tmp_path / "a-r" / "stats.json").read_text())
    assert sorted((tmp_path / "a-r").iterdir()) == [
        tmp_path / "a-r" / "runs",
        tmp_path / "a-r" / "stats.json",
    ]
    assert stats["runs"][0] == "runs/run-00000" and stats["sorted"] is False
    assert len(stats["runs"]) == (
        1 if engine == "naive" else len(list((tmp_path / "a-r" / "runs").iterdir()))
    )
    if engine == "fast":
        assert len(stats["runs"]) > 1  # it did spill
    with pytest.raises(InputError, match="corpus merge"):
        read_counts(tmp_path / "a-r")
    want = read_counts(merge_count_dirs([tmp_path / "a-t", tmp_path / "b-t"], tmp_path / "m-t"))
    for name, dirs in {"runs": ["a-r", "b-r"], "mix": ["a-r", "b-t"], "one": ["a-r"]}.items():
        got = read_counts(merge_count_dirs([tmp_path / d for d in dirs], tmp_path / f"m-{name}"))
        if name == "one":
            want_a = read_counts(merge_count_dirs([tmp_path / "a-t"], tmp_path / "m-a"))
            pd.testing.assert_frame_equal(got[0], want_a[0])
            pd.testing.assert_frame_equal(got[1], want_a[1])
            continue
        pd.testing.assert_frame_equal(got[0], want[0])
        pd.testing.assert_frame_equal(got[1], want[1])
        assert {k: got[2][k] for k in ("n_tokens", "n_pairs", "read", "targets")} == {
            k: want[2][k] for k in ("n_tokens", "n_pairs", "read", "targets")
        }


def test_runs_replace_what_an_earlier_count_left(tmp_path):
    """Counting to runs into a directory that held tables, or more runs, leaves nothing stale behind."""
    a = _write_jsonl(tmp_path / "a.jsonl", ["she said the apple is red"] * 30 + ["zebra yak he"])
    kw = dict(targets=TARGETS, stopwords=SPACY, window=10, chunk_mb=0.0001)
    out = tmp_path / "c"
    count_files([a], out, **kw)  # tables
    count_files([a], out, runs=True, spill_types=90, **kw)  # small batches, few words: several runs
    many = len(json.loads((out / "stats.json").read_text())["runs"])
    assert many > 1 and not (out / "unigrams.parquet").exists()
    count_files([a], out, runs=True, **kw)
    assert json.loads((out / "stats.json").read_text())["runs"] == ["runs/run-00000"]
    assert [p.name for p in (out / "runs").iterdir()] == ["run-00000"]
    uni, _, _ = read_counts(merge_count_dirs([out], tmp_path / "m"))
    assert dict(zip(uni["word"], uni["count"], strict=True))["apple"] == 30


def test_merge_names_a_missing_run(tmp_path):
    import shutil

    from unstereo.errors import InputError

    a = _write_jsonl(tmp_path / "a.jsonl", ["she said the apple is red"])
    count_files([a], tmp_path / "c", targets=TARGETS, stopwords=SPACY, runs=True)
    shutil.rmtree(tmp_path / "c" / "runs" / "run-00000")
    with pytest.raises(InputError, match="run-00000") as err:
        merge_count_dirs([tmp_path / "c"], tmp_path / "m")
    assert "lacks unigrams.parquet" in str(err.value)
    assert not (tmp_path / "m" / "stats.json").exists()


def test_merge_refuses_different_settings(tmp_path):
    from unstereo.errors import InputError

    a = _write_jsonl(tmp_path / "a.jsonl", ["she said"])
    count_files([a], tmp_path / "w10", targets=TARGETS, stopwords=SPACY, window=10)
    count_files([a], tmp_path / "w5", targets=TARGETS, stopwords=SPACY, window=5)
    with pytest.raises(InputError, match="window"):
        merge_count_dirs([tmp_path / "w10", tmp_path / "w5"], tmp_path / "m")


def test_demo_corpus_slice_fast_equals_plain(resource, compiled):
    demo = resource("demo-corpus")
    docs = []
    for name, n in (("brown.jsonl", 8), ("nlp-corpus.jsonl", 1500)):
        with open(demo / name, encoding="utf-8") as fh:
            docs += [json.loads(next(fh))["text"] for _ in range(n)]
    uni, co, n_pairs = plain_counter(docs, set(TARGETS), SPACY, 10)
    c = fast(docs, batch=97, compiled=compiled).counts()
    assert sum(co.values()) > 1000  # the slice does hold targets
    assert as_counters(c) == (uni, co) and c.n_pairs == n_pairs


def test_write_counts_takes_arrow_tables_as_dataframes(tmp_path):
    import pyarrow as pa

    from unstereo.errors import InputError
    from unstereo.unstereoeval.corpus.merge import write_counts

    uni = pd.DataFrame({"word": ["cat", "dog"], "count": np.array([3, 1], np.int64)})
    co = pd.DataFrame({"word": ["cat"], "target": ["she"], "count": np.array([2], np.int64)})
    write_counts(tmp_path / "pandas", uni, co, {"n_tokens": 4})
    write_counts(tmp_path / "arrow", pa.Table.from_pandas(uni), pa.Table.from_pandas(co), {"n_tokens": 4})
    for got, expect in zip(read_counts(tmp_path / "arrow"), read_counts(tmp_path / "pandas"), strict=True):
        if isinstance(expect, dict):
            assert got == expect
        else:
            pd.testing.assert_frame_equal(got, expect)
    bad = pa.table({"word": pa.array(["cat", None]), "count": pa.array([3, 1], pa.int64())})
    with pytest.raises(InputError, match=r"unigrams.parquet.*word.*1 missing"):
        write_counts(tmp_path / "bad", bad, pa.Table.from_pandas(co), {}, distinct=True)
    dup = pa.table({"word": ["cat", "cat"], "count": pa.array([3, 1], pa.int64())})
    with pytest.raises(InputError, match="duplicated"):
        write_counts(tmp_path / "dup", dup, pa.Table.from_pandas(co), {})
