"""Table schemas: round trip, schema violations reported with file and column, atomic writes, delta reader."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from unstereo.errors import InputError
from unstereo.tables import (
    PAIRS,
    SCORES,
    Column,
    TableSchema,
    columns,
    read_delta,
    read_table,
    validate,
    write_table,
)


def _pairs():
    return pd.DataFrame(
        {
            "pair_id": ["t:0", "t:1"],
            "benchmark": ["toy", "toy"],
            "template": ["{pronoun} runs.", "I saw {pronoun2}."],
            "sentence_female": ["She runs.", "I saw her."],
            "sentence_male": ["He runs.", "I saw him."],
            "seed_word": ["run", None],
            "max_pmi": [0.1, float("nan")],
            "max_pmi_word": ["runs", None],
            "source": ["hand", "hand"],
        }
    )


@pytest.mark.parametrize("suffix", [".parquet", ".csv"])
def test_round_trip(tmp_path, suffix):
    df = _pairs()
    path = write_table(df, tmp_path / f"pairs{suffix}", PAIRS)
    back = read_table(path, "pairs")
    assert back["pair_id"].tolist() == ["t:0", "t:1"]
    assert back["sentence_male"].tolist() == ["He runs.", "I saw him."]
    assert back["max_pmi"].iloc[0] == pytest.approx(0.1)
    assert math.isnan(back["max_pmi"].iloc[1])
    assert list(tmp_path.iterdir()) == [path]  # no temporary file left behind


def test_missing_column_names_file_and_column(tmp_path):
    df = _pairs().drop(columns=["template"])
    with pytest.raises(InputError, match=r"pairs.parquet: pairs table lacks column\(s\) \['template'\]"):
        write_table(df, tmp_path / "pairs.parquet", PAIRS)
    assert not (tmp_path / "pairs.parquet").exists()


def test_wrong_kind_is_reported():
    df = pd.DataFrame(
        {
            "pair_id": ["a"],
            "model": ["m"],
            "logp_female": ["x"],
            "logp_male": [-1.0],
            "ntok_female": [3],
            "ntok_male": [3],
        }
    )
    with pytest.raises(InputError, match="column 'logp_female' must be float"):
        validate(df, SCORES, source="s.parquet")


def test_null_in_required_column_is_reported():
    df = _pairs()
    df.loc[1, "template"] = None
    with pytest.raises(InputError, match="column 'template' must be str: 1 missing value"):
        validate(df, PAIRS)


def test_duplicate_ids_are_reported():
    df = _pairs()
    df.loc[1, "pair_id"] = "t:0"
    with pytest.raises(InputError, match=r"2 rows with duplicated \['pair_id'\]"):
        validate(df, PAIRS)


def test_read_missing_file(tmp_path):
    with pytest.raises(InputError, match="nope.parquet: file not found"):
        read_table(tmp_path / "nope.parquet")


def test_failed_write_keeps_previous_file(tmp_path):
    path = write_table(_pairs(), tmp_path / "p.parquet", PAIRS)
    before = path.read_bytes()
    with pytest.raises(InputError):
        write_table(_pairs().drop(columns=["source"]), path, PAIRS)
    assert path.read_bytes() == before


def test_read_delta_released_format_keeps_null_and_nan(tmp_path):
    # The released PILE table: unnamed index, word, pmi_diff, counts, freq; "null" and "nan" are real words.
    csv = tmp_path / "pmi_file_w_counts.csv"
    csv.write_text(",word,pmi_diff,counts,freq\n0,null,0.5,10,0.1\n1,nan,-0.25,20,0.2\n2,doctor,,30,0.3\n")
    df = read_delta(csv)
    assert df["word"].tolist() == ["null", "nan", "doctor"]
    assert df["delta"].iloc[0] == 0.5 and df["delta"].iloc[1] == -0.25
    assert math.isnan(df["delta"].iloc[2])
    assert df["count"].tolist() == [10, 20, 30]


def test_read_delta_released_reference(reference_dir):
    df = read_delta(reference_dir / "unstereo-eval" / "data" / "pmi_file_w_counts.csv")
    assert len(df) == 65914
    assert {"null", "nan"} <= set(df["word"])


def test_written_tables_get_normal_permissions(tmp_path):
    import os
    import stat

    umask = os.umask(0o022)
    try:
        path = write_table(_pairs(), tmp_path / "p.parquet", PAIRS)
    finally:
        os.umask(umask)
    assert stat.S_IMODE(path.stat().st_mode) == 0o644  # not mkstemp's 0600


def test_empty_tables_get_the_schema_kinds(tmp_path):
    """An empty SCORES/PAIRS table (a generated benchmark that kept no pair) reads back with typed columns, so the
    metrics join of two empty tables works instead of failing on float64 vs object keys."""
    from unstereo.unstereoeval.metrics.compute import join_scores

    scores = pd.DataFrame({c: [] for c in SCORES.names})  # every column float64 or object
    pairs = pd.DataFrame({c: [] for c in PAIRS.names})
    write_table(scores, tmp_path / "s.parquet", SCORES)
    write_table(pairs, tmp_path / "p.parquet", PAIRS)
    s, p = read_table(tmp_path / "s.parquet", "scores"), read_table(tmp_path / "p.parquet", "pairs")
    assert (
        s["pair_id"].dtype == object and s["ntok_female"].dtype == "int64" and s["logp_female"].dtype == float
    )
    assert len(join_scores(s, p)) == 0


def test_describe_is_a_markdown_table_with_pipes_escaped():
    """The description goes through the one Markdown table writer: a ``|`` in a doc stays in its cell."""
    schema = TableSchema(
        "toy",
        "one row per toy",
        (Column("id", "str", "unique id"), Column("source", "str", "generated | released", nullable=True)),
    )
    assert schema.describe() == (
        "**toy**: one row per toy\n"
        "\n"
        "| column | kind | meaning |\n"
        "|---|---|---|\n"
        "| `id` | str | unique id |\n"
        "| `source` | str? | generated \\| released |"
    )


def test_columns_parses_the_text_table():
    parsed = columns("""
        pair_id    str     unique id
        max_pmi    float?  signed delta of largest magnitude
                           (docs/methods.md#maxpmi-and-eta)
        flag       bool    whether it holds
    """)
    assert parsed == (
        Column("pair_id", "str", "unique id"),
        Column(
            "max_pmi", "float", "signed delta of largest magnitude (docs/methods.md#maxpmi-and-eta)", True
        ),
        Column("flag", "bool", "whether it holds"),
    )


@pytest.mark.parametrize(
    "spec",
    ["    x  text  an unknown kind", "    x  str", "        only a continuation\n    x  str  doc"],
)
def test_columns_rejects_a_malformed_line(spec):
    with pytest.raises(ValueError, match="column spec"):
        columns(spec)
