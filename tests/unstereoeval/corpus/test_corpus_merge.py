"""The merge of count tables: sums by hand, order by code point, partitions, and bad tables named."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from unstereo.errors import InputError
from unstereo.unstereoeval.corpus import jit
from unstereo.unstereoeval.corpus.merge import _group_sum, merge_count_dirs, read_counts, sum_tables
from unstereo.unstereoeval.corpus.parts import radix_order, sum_codes


def _co(rows: list[tuple[str, str, int]]) -> pa.Table:
    word, target, count = zip(*rows, strict=True) if rows else ((), (), ())
    return pa.table(
        {
            "word": pa.array(word, pa.large_string()),
            "target": pa.array(target, pa.large_string()),
            "count": pa.array(count, pa.int64()),
        }
    )


def test_group_sum_by_hand():
    # "é" (U+00E9) sorts after "z", "Z" before "a"; 2**40 + 2**40 must stay exact
    big = 2**40
    rows = [
        ("zoo", "she", 1),
        ("é", "he", 2),
        ("apple", "she", 3),
        ("zoo", "she", 4),
        ("apple", "he", 5),
        ("Zed", "she", 6),
        ("apple", "she", big),
        ("apple", "she", big),
    ]
    got = _group_sum(_co(rows), ["word", "target"]).to_pydict()
    assert got == {
        "word": ["Zed", "apple", "apple", "zoo", "é"],
        "target": ["she", "he", "she", "she", "he"],
        "count": [6, 5, 3 + 2 * big, 5, 2],
    }
    uni = _group_sum(_co(rows).select(["word", "count"]), ["word"]).to_pydict()
    assert uni == {"word": ["Zed", "apple", "zoo", "é"], "count": [6, 8 + 2 * big, 5, 2]}
    empty = _group_sum(_co([]), ["word", "target"])
    assert empty.num_rows == 0 and empty.column_names == ["word", "target", "count"]


@pytest.mark.parametrize("compiled", [True, False])
def test_sum_codes_by_hand(monkeypatch, compiled):
    """Codes hi * 2 + lo: 5 = (2, 1) twice, 1 + 3; 0 = (0, 0); 3 = (1, 1); 7 = (3, 1) with a zero count kept."""
    if compiled and not jit.AVAILABLE:
        pytest.skip("numba missing")
    monkeypatch.setattr(jit, "AVAILABLE", compiled)
    codes, sums = sum_codes(np.array([5, 3, 5, 0, 7]), np.array([1, 2, 3, 4, 0]), 2)
    assert codes.tolist() == [0, 3, 5, 7] and sums.tolist() == [4, 2, 4, 0]
    codes, sums = sum_codes(np.array([], np.int64), np.array([], np.int64), 2)
    assert codes.size == 0 and sums.size == 0


@pytest.mark.parametrize("n_low", [1, 3, 77, 5000])
def test_sum_codes_compiled_equals_radix(monkeypatch, n_low):
    """The compiled counting sort by hi (a word's rank) and the radix sort give the same sums in the same order,
    however many distinct lo (targets) a hi has; 5000 takes the radix path."""
    rng = np.random.default_rng(n_low)
    codes = rng.integers(0, 2000, 20_000) * n_low + rng.integers(0, n_low, 20_000)
    counts = rng.integers(0, 2**40, codes.size)
    got = sum_codes(codes, counts, n_low)
    monkeypatch.setattr(jit, "AVAILABLE", False)
    want = sum_codes(codes, counts, n_low)
    assert np.array_equal(got[0], want[0]) and np.array_equal(got[1], want[1])
    assert np.array_equal(want[0], np.unique(codes))


@pytest.mark.parametrize("high", [1, 2**16, 2**31, 2**47])
def test_radix_order_is_the_stable_sort(high):
    rng = np.random.default_rng(high)
    code = rng.integers(0, high, 5000)
    assert np.array_equal(radix_order(code), np.argsort(code, kind="stable"))
    assert radix_order(code[:0]).size == 0


def test_partitioned_sum_equals_pandas(tmp_path):
    """Many partitions (a row each, on average) and few: the same rows as pandas' group-by, each partition sorted."""
    rng = np.random.default_rng(7)
    words = [f"w{i}" for i in range(300)] + ["café", "naïve"]
    paths = []
    for k in range(3):
        n = 400 if k != 1 else 0  # an empty input too
        t = _co(
            [
                (words[i], ["he", "she", "her"][j], int(c))
                for i, j, c in zip(
                    rng.integers(0, len(words), n),
                    rng.integers(0, 3, n),
                    rng.integers(1, 10**6, n),
                    strict=True,
                )
            ]
        )
        t = _group_sum(t, ["word", "target"])  # count tables have distinct keys
        paths.append(tmp_path / f"in{k}.parquet")
        pq.write_table(
            t.cast(pa.schema([("word", pa.string()), ("target", pa.string()), ("count", pa.int64())])),
            paths[-1],
        )
    expect = (
        pd.concat([pd.read_parquet(p) for p in paths])
        .groupby(["word", "target"], as_index=False)["count"]
        .sum()
        .reset_index(drop=True)
    )
    for rows_per_partition in (10**6, 97, 1):
        out = tmp_path / f"out-{rows_per_partition}.parquet"
        n = sum_tables(paths, out, "cooccurrence.parquet", rows_per_partition)
        got = pd.read_parquet(out)
        assert n == len(got) == len(expect)
        pd.testing.assert_frame_equal(
            got.sort_values(["word", "target"]).reset_index(drop=True), expect, check_dtype=False
        )
        if rows_per_partition == 10**6:  # one partition: sorted as a whole
            pd.testing.assert_frame_equal(got, expect, check_dtype=False)


def _count_dir(path, co: pd.DataFrame) -> None:
    path.mkdir()
    co.to_parquet(path / "cooccurrence.parquet")
    pd.DataFrame({"word": ["she"], "count": [1]}).to_parquet(path / "unigrams.parquet")
    (path / "stats.json").write_text('{"n_tokens": 1}')


@pytest.mark.parametrize("partitions", [None, 3])
@pytest.mark.parametrize(
    ("bad", "message"),
    [
        (
            pd.DataFrame({"word": ["a", None], "target": ["she", "he"], "count": [1, 2]}),
            "'word' must be str: 1 missing",
        ),
        (
            pd.DataFrame({"word": ["a"], "target": ["she"], "count": [1.5]}),
            "'count' must be int: type double",
        ),
        (pd.DataFrame({"word": ["a"], "count": [1]}), r"lacks column\(s\) \['target'\]"),
    ],
)
def test_bad_input_table_is_named(tmp_path, bad, message, partitions):
    good = pd.DataFrame({"word": ["a", "b"], "target": ["she", "he"], "count": [1, 2]})
    _count_dir(tmp_path / "good", good)
    _count_dir(tmp_path / "bad", bad)
    with pytest.raises(InputError, match=message) as err:
        merge_count_dirs([tmp_path / "good", tmp_path / "bad"], tmp_path / "m", partitions=partitions)
    assert str(tmp_path / "bad" / "cooccurrence.parquet") in str(err.value)
    assert not (tmp_path / "m" / "cooccurrence.parquet").exists()


def test_merge_of_two_dirs_by_hand(tmp_path):
    _count_dir(
        tmp_path / "a", pd.DataFrame({"word": ["cat", "dog"], "target": ["she", "he"], "count": [1, 2]})
    )
    _count_dir(
        tmp_path / "b", pd.DataFrame({"word": ["dog", "ant"], "target": ["he", "he"], "count": [3, 4]})
    )
    _, co, stats = read_counts(merge_count_dirs([tmp_path / "a", tmp_path / "b"], tmp_path / "m"))
    assert co.to_dict("list") == {
        "word": ["ant", "cat", "dog"],
        "target": ["he", "she", "he"],
        "count": [4, 1, 5],
    }
    assert stats["n_tokens"] == 2


def test_write_counts_checks_arrow_kinds(tmp_path):
    """The counter's arrow tables get the merge inputs' check: a float count is refused (an empty-slice pandas check
    let it through before)."""
    from unstereo.unstereoeval.corpus.merge import write_counts

    uni = pa.table({"word": ["cat"], "count": pa.array([1.5])})
    with pytest.raises(InputError, match=r"unigrams.parquet.*'count' must be int: type double"):
        write_counts(tmp_path / "c", uni, _co([("cat", "she", 1)]), {}, distinct=True)
    assert not (tmp_path / "c" / "unigrams.parquet").exists()
