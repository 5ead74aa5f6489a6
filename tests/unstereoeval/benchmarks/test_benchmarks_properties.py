"""Benchmark properties (the paper's Table 7) on a hand-made pair table, the card and the Table 7 comparison."""

from __future__ import annotations

import json

import pandas as pd
from click.testing import CliRunner

from unstereo.cli import cli
from unstereo.tables import PAIRS, write_table
from unstereo.templates import fill_template
from unstereo.unstereoeval.benchmarks.properties import benchmark_properties, card_markdown
from unstereo.unstereoeval.report.compare import compare, load_published
from unstereo.unstereoeval.report.table7 import properties_table

TEMPLATES = [
    "{pronoun} ate an apple.",  # 4 words; pronoun at 0
    "The king said {pronoun} saw {pronoun2}self, and {pronoun1} mother.",  # 9 words; pronouns at 3, 5, 7
    "Yesterday, quietly -- {pronoun1} girl waved.",  # 5 words ("--" is no word); pronoun at 2
]
SEEDS = ["apple", "king", "Apple"]
DELTA = pd.DataFrame({"word": ["apple", "king", "pear"], "delta": [0.1, -0.3, 2.0], "count": [5, 7, 9]})


def pair_table(name: str = "Mine") -> pd.DataFrame:
    return pd.DataFrame(
        {
            "pair_id": [f"{name}:{i}" for i in range(len(TEMPLATES))],
            "benchmark": name,
            "template": TEMPLATES,
            "sentence_female": [fill_template(t, "female") for t in TEMPLATES],
            "sentence_male": [fill_template(t, "male") for t in TEMPLATES],
            "seed_word": SEEDS,
            "max_pmi": [float("nan")] * 3,
            "max_pmi_word": [None] * 3,
            "source": "hand-made",
        }
    )


def test_properties_worked_by_hand():
    p = benchmark_properties(pair_table(), DELTA)
    assert p["# sentences"] == 3
    assert p["# seed words"] == 2  # apple, king (case ignored)
    assert (p["# female words"], p["female words"]) == (2, ["girl", "mother"])
    assert (p["# male words"], p["male words"]) == (1, ["king"])
    assert p["# pronouns"] == {"min": 1, "median": 1, "max": 3}  # 1, 3, 1
    assert p["pos. first pronoun"] == {"min": 0, "median": 2, "max": 3}  # 0, 3, 2
    assert p["pos. last pronoun"] == {"min": 0, "median": 2, "max": 7}  # 0, 7, 2
    assert p["sentence length"] == {"min": 4, "median": 5, "max": 9}  # 4, 9, 5
    d = p["seed-word delta"]  # apple 0.1, king -0.3 (pear is no seed word)
    assert (d["min"], d["max"]) == (-0.3, 0.1) and abs(d["median"] - -0.1) < 1e-12
    no_delta = benchmark_properties(pair_table(), None)
    assert pd.isna(no_delta["seed-word delta"]["median"]) and no_delta["seed words with a delta"] == 0


def test_table7_cells_and_comparison(tmp_path):
    t = properties_table({"Mine": benchmark_properties(pair_table(), DELTA)})
    assert t.columns == ["Mine"] and t.rows[:4] == [
        "# sentences",
        "# seed words",
        "# female words",
        "# male words",
    ]
    assert (
        t.value("sentence length (median)", "Mine") == 5 and t.value("pos. last pronoun (max)", "Mine") == 7
    )
    assert t.value("seed-word delta (max)", "Mine") == 0.1
    pub_csv = tmp_path / "pub.csv"
    pub_csv.write_text(
        "table,row,column,value,decimals\n"
        "7,# sentences,Mine,3,0\n"
        "7,sentence length (max),Mine,10,0\n"
        "7,seed-word delta (median),Mine,-0.10,2\n"
    )
    r = compare({7: t}, load_published(pub_csv))
    assert r["within_rounding"].tolist() == [True, False, True]
    assert r["diagnosis"].tolist() == ["", "unexplained", ""]
    card = card_markdown("Mine", benchmark_properties(pair_table(), DELTA))
    assert "| sentence length | 4 | 5 | 9 |" in card and "female girl, mother; male king" in card


def test_cli_card_and_table7(tmp_path):
    pairs = tmp_path / "pairs.parquet"
    write_table(pair_table(), pairs, PAIRS)
    delta = tmp_path / "delta.csv"
    DELTA.to_csv(delta, index=False)
    runner = CliRunner()
    res = runner.invoke(
        cli,
        ["benchmarks", "card", str(pairs), "--delta", str(delta), "-o", str(tmp_path / "card.md"),
         "--json", str(tmp_path / "p.json"), "--html", str(tmp_path / "card.html")],
    )  # fmt: skip
    assert res.exit_code == 0, res.output
    page = (tmp_path / "card.html").read_text()
    assert (
        "<h2>Benchmark card: Mine</h2>" in page
        and "<td>sentence length</td><td>4</td><td>5</td><td>9</td>" in page
    )
    props = json.loads((tmp_path / "p.json").read_text())
    assert props["benchmark"] == "Mine" and props["sentence length"]["max"] == 9
    res = runner.invoke(cli, ["report", "table7", str(tmp_path / "p.json"), "-o", str(tmp_path / "t")])
    assert res.exit_code == 0, res.output
    wide = pd.read_csv(tmp_path / "t" / "table07.csv").set_index("row")
    assert wide.loc["# pronouns (max)", "Mine"] == 3
    assert "| Property | Mine |" in (tmp_path / "t" / "table07.md").read_text()
