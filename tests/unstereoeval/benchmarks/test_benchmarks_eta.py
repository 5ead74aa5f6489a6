"""eta filtering, the size table, Figure 2 and the CLI, on hand-made pair tables."""

from __future__ import annotations

import math

import pandas as pd
import pytest

from unstereo.cli import main
from unstereo.tables import PAIRS, read_table
from unstereo.unstereoeval.benchmarks import eta_sizes, filter_eta, format_eta, parse_eta

# max_pmi of 6 hand-made pairs: |values| = 0.1, 0.3, 0.3, 0.65, 0.9, undefined
VALUES = [0.1, -0.3, 0.3, 0.65, -0.9, float("nan")]


def _pairs(values=VALUES, benchmark="B"):
    return pd.DataFrame(
        {
            "pair_id": [f"{benchmark}:{i}" for i in range(len(values))],
            "benchmark": benchmark,
            "template": "{pronoun} x",
            "max_pmi": values,
        }
    )


def test_filter_eta_bounds_inclusive_and_undefined_only_at_inf():
    pairs = _pairs()
    assert len(filter_eta(pairs, math.inf)) == 6  # everything, undefined included
    assert filter_eta(pairs, 1.0)["pair_id"].tolist() == ["B:0", "B:1", "B:2", "B:3", "B:4"]  # NaN dropped
    assert filter_eta(pairs, 0.65)["pair_id"].tolist() == ["B:0", "B:1", "B:2", "B:3"]  # 0.65 <= 0.65 kept
    assert filter_eta(pairs, 0.3)["pair_id"].tolist() == ["B:0", "B:1", "B:2"]  # -0.3 and 0.3 kept
    assert filter_eta(pairs, 0.0)["pair_id"].tolist() == []
    assert filter_eta(pairs, "inf").equals(filter_eta(pairs, math.inf))


def test_parse_and_format_eta():
    assert [format_eta(e) for e in (math.inf, 1, 0.8, "0.65", "inf", "unconstrained")] == [
        "inf",
        "1.0",
        "0.8",
        "0.65",
        "inf",
        "inf",
    ]
    for bad in ("-1", "nan", "abc"):
        with pytest.raises(ValueError):
            parse_eta(bad)


def test_eta_sizes():
    both = pd.concat([_pairs(), _pairs([0.2, 2.0], "C")], ignore_index=True)
    sizes = eta_sizes(both, [math.inf, 1.0, 0.3])
    assert sizes.to_dict("list") == {
        "benchmark": ["B", "B", "B", "C", "C", "C"],
        "eta": [math.inf, 1.0, 0.3] * 2,
        "n": [6, 5, 3, 2, 1, 1],
        "fraction": [1.0, 5 / 6, 0.5, 1.0, 0.5, 0.5],
    }


def _cli(args, capsys=None):
    try:
        main(args)
    except SystemExit as exc:
        return exc.code
    return 0


def test_cli_build_maxpmi_filter_sizes_figure(tmp_path, capsys):
    src = tmp_path / "mine.csv"
    src.write_text("id,template\n1,{pronoun} walked the cat.\n2,{pronoun} saw a dog.\n3,{pronoun} is here.\n")
    delta = tmp_path / "delta.csv"
    delta.write_text(",word,pmi_diff,counts,freq\n0,cat,0.2,5,0.1\n1,dog,-0.7,5,0.1\n")
    built = tmp_path / "built.parquet"
    assert (
        _cli(["benchmarks", "build", str(src), "--kind", "templates", "--name", "M", "-o", str(built)]) == 0
    )
    assert read_table(built, PAIRS)["max_pmi"].isna().all()
    pairs = tmp_path / "pairs.parquet"
    assert _cli(["benchmarks", "maxpmi", str(built), "--delta", str(delta), "-o", str(pairs)]) == 0
    df = read_table(pairs, PAIRS)
    assert df["max_pmi"].tolist()[:2] == [0.2, -0.7] and math.isnan(df["max_pmi"].iloc[2])
    assert df["max_pmi_word"].tolist()[:2] == ["cat", "dog"]
    pattern = str(tmp_path / "eta-{eta}.parquet")
    assert _cli(["benchmarks", "filter", str(pairs), "--eta", "inf", "--eta", "0.5", "-o", pattern]) == 0
    assert len(read_table(tmp_path / "eta-inf.parquet")) == 3
    assert read_table(tmp_path / "eta-0.5.parquet")["pair_id"].tolist() == ["M:1"]
    sizes = tmp_path / "sizes.csv"
    assert _cli(["benchmarks", "sizes", str(pairs), "--etas", "inf", "--etas", "0.5", "-o", str(sizes)]) == 0
    assert pd.read_csv(sizes)["n"].tolist() == [3, 1]
    assert _cli(["benchmarks", "figure", str(pairs), "-o", str(tmp_path / "fig" / "figure2")]) == 0
    for suffix in (".png", ".pdf", ".csv"):
        assert (tmp_path / "fig" / f"figure2{suffix}").stat().st_size > 0
    # max_pmi 0.2, -0.7, undefined; etas inf, 1.0, 0.8, 0.65, 0.5, 0.3 -> 3, 2, 2, 1 (0.7 > 0.65), 1, 1
    assert pd.read_csv(tmp_path / "fig" / "figure2.csv")["n"].tolist() == [3, 2, 2, 1, 1, 1]


def test_cli_bad_input_names_file_and_line(tmp_path, capsys):
    src = tmp_path / "mine.csv"
    src.write_text("id,template\n1,{pronoun} walked.\n2,{pronoun4} x\n")
    code = _cli(["benchmarks", "build", str(src), "--kind", "templates", "-o", str(tmp_path / "o.parquet")])
    assert code == 1
    assert f"{src}:3: unknown placeholder" in capsys.readouterr().err
    assert not (tmp_path / "o.parquet").exists()
    code = _cli(
        [
            "benchmarks",
            "build",
            str(src),
            "--kind",
            "templates",
            "--on-bad-row",
            "drop",
            "-o",
            str(tmp_path / "o.parquet"),
        ]
    )
    assert code == 0 and len(read_table(tmp_path / "o.parquet")) == 1
