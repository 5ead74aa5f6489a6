"""A counter's spilled runs (integer word ids): written by hand, merged by hand, and merged exactly as count
directories of the same rows are."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from unstereo.unstereoeval.corpus.merge import merge_count_dirs, read_counts, write_counts
from unstereo.unstereoeval.corpus.runs import RUN_CO, merge_runs, write_run

TARGETS = ["he", "she"]  # sorted: index 0 = "he", 1 = "she"


def _run_rows(run) -> dict:
    with pa.memory_map(str(run / RUN_CO)) as source:
        return pa.ipc.open_file(source).read_all().to_pydict()


def test_write_run_by_hand(tmp_path):
    # ids: 0 "the" (a stop word, counted 0 times: left out), 1 "she", 2 "apple", 3 "pear"; T = 2, so the code of
    # (apple, she) is 2 * 2 + 1 = 5 and of (pear, he) 3 * 2 + 0 = 6. Renumbered without "the": apple 1, pear 2.
    run = write_run(
        tmp_path / "run", ["the", "she", "apple", "pear"], np.array([0, 3, 2, 1]), np.array([5, 6]),
        np.array([2, 1]), 2,
    )  # fmt: skip
    assert pq.read_table(run / "unigrams.parquet").to_pydict() == {
        "word": ["she", "apple", "pear"],
        "count": [3, 2, 1],
    }
    assert _run_rows(run) == {"word_id": [1, 2], "target": [1, 0], "count": [2, 1]}


def test_write_run_refuses_a_row_of_an_uncounted_word(tmp_path):
    with pytest.raises(ValueError, match="counted zero times"):
        write_run(tmp_path / "run", ["the", "cat"], np.array([0, 1]), np.array([0]), np.array([1]), 2)


@pytest.mark.parametrize("partitions", [None, 1, 2, 5])
def test_merge_of_two_runs_by_hand(tmp_path, partitions):
    # run a: cat 2, dog 3; (cat, she) 1, (dog, he) 2.  run b: dog 1, ant 4; (dog, he) 3, (ant, he) 4, (ant, she) 5
    a = write_run(
        tmp_path / "a",
        ["cat", "dog"],
        np.array([2, 3]),
        np.array([0 * 2 + 1, 1 * 2 + 0]),
        np.array([1, 2]),
        2,
    )
    b = write_run(
        tmp_path / "b", ["dog", "ant"], np.array([1, 4]), np.array([0, 2, 3]), np.array([3, 4, 5]), 2
    )
    # a run of nothing but the counter's preloaded words (a spill at the very end of the input): no rows
    empty = write_run(
        tmp_path / "e", ["the", "she"], np.array([0, 0]), np.array([], np.int64), np.array([], np.int64), 2
    )
    merge_runs([empty, a, empty, b], tmp_path / "m", TARGETS, {"n_tokens": 10}, partitions=partitions)
    uni, co, stats = read_counts(tmp_path / "m")
    assert dict(zip(uni["word"], uni["count"], strict=True)) == {"ant": 4, "cat": 2, "dog": 4}
    assert sorted(zip(co["word"], co["target"], co["count"], strict=True)) == [
        ("ant", "he", 4),
        ("ant", "she", 5),
        ("cat", "she", 1),
        ("dog", "he", 5),
    ]
    assert stats == {"n_tokens": 10}
    if partitions in (None, 1):  # one part: sorted by (word, target) throughout
        assert co["word"].tolist() == ["ant", "ant", "cat", "dog"] and uni["word"].tolist() == [
            "ant",
            "cat",
            "dog",
        ]


def test_merge_of_runs_equals_merge_of_count_dirs(tmp_path):
    """Random runs with shared and own words: row for row what merge_count_dirs gives for the same rows written
    as count tables (same parts, each sorted), for several numbers of parts."""
    rng = np.random.default_rng(7)
    vocab = np.array([f"w{i:04d}" for i in range(600)] + ["é", "Zed", "zoo"])
    targets = ["aunt", "he", "she"]
    runs, dirs = [], []
    for k in range(3):
        words = rng.choice(vocab, size=250, replace=False)
        uni = rng.integers(1, 50, words.size)
        codes = rng.choice(words.size * len(targets), size=400, replace=False)
        counts = rng.integers(1, 9, codes.size)
        runs.append(write_run(tmp_path / f"run{k}", words.tolist(), uni, codes, counts, len(targets)))
        co = pd.DataFrame(
            {
                "word": words[codes // 3],
                "target": np.array(targets)[codes % 3],
                "count": counts.astype(np.int64),
            }
        )
        dirs.append(write_counts(tmp_path / f"dir{k}", pd.DataFrame({"word": words, "count": uni}), co, {}))
    for parts in (1, 3, 7):
        merge_runs(runs, tmp_path / f"runs{parts}", targets, {}, partitions=parts)
        merge_count_dirs(dirs, tmp_path / f"dirs{parts}", partitions=parts)
        for name in ("unigrams.parquet", "cooccurrence.parquet"):
            got, want = (pq.read_table(tmp_path / f"{d}{parts}" / name) for d in ("runs", "dirs"))
            assert got.num_rows > 0 and got.equals(want), (parts, name)
