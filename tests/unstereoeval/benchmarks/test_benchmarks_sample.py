"""The `max_pairs` sample of a benchmark source (unstereo.unstereoeval.benchmarks.pairs.sample_pairs)."""

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from unstereo.unstereoeval.benchmarks.pairs import sample_pairs


def _pairs(n):
    return pd.DataFrame({"pair_id": [f"B:{i}" for i in range(n)], "template": [f"t{i}" for i in range(n)]})


def test_sample_keeps_file_order_and_is_seeded():
    pairs = _pairs(10)
    got = sample_pairs(pairs, 4, seed=3)
    assert len(got) == 4 and got["pair_id"].is_unique
    rows = [int(p.split(":")[1]) for p in got["pair_id"]]
    assert rows == sorted(rows)  # in the file's order
    # the rows numpy's PCG64 draws for seed 3, sorted: the definition, on any machine
    assert rows == sorted(np.random.default_rng(3).choice(10, size=4, replace=False).tolist())
    assert got.equals(sample_pairs(pairs, 4, seed=3))  # same seed, same pairs
    assert list(got.index) == [0, 1, 2, 3]
    # another seed draws another sample (for these 10 rows; 210 samples of 4 exist)
    assert not got.equals(sample_pairs(pairs, 4, seed=4))


def test_sample_whole_table_when_short_or_unset():
    pairs = _pairs(3)
    assert sample_pairs(pairs, None) is pairs
    assert sample_pairs(pairs, 3) is pairs
    assert sample_pairs(pairs, 7) is pairs
    with pytest.raises(ValueError, match="at least 1"):
        sample_pairs(_pairs(3), 0)


def test_build_cli_samples(tmp_path):
    from unstereo.cli import cli
    from unstereo.tables import PAIRS, read_table

    src = tmp_path / "mine.csv"
    src.write_text("id,template\n" + "".join(f"{i},{{pronoun}} saw dog {i}.\n" for i in range(6)))
    out = tmp_path / "p.parquet"
    res = CliRunner().invoke(
        cli,
        [
            "benchmarks",
            "build",
            str(src),
            "--kind",
            "templates",
            "--name",
            "M",
            "--max-pairs",
            "2",
            "--sample-seed",
            "5",
            "-o",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    got = read_table(out, PAIRS)
    want = sorted(np.random.default_rng(5).choice(6, size=2, replace=False).tolist())
    assert list(got["sentence_male"]) == [f"He saw dog {i}." for i in want]
