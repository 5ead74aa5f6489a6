"""PMI / delta on hand-computed examples, Eq. 4, the pairs list, appendix A outputs, the CLI, the released table."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

from unstereo.unstereoeval.corpus.appendix import kendall_matrix, table4
from unstereo.unstereoeval.corpus.cli import group
from unstereo.unstereoeval.corpus.delta import compute_delta, eq4
from unstereo.unstereoeval.lexicon import Pair, load_pairs, load_targets


def hand_counts():
    # N_uni = 100 tokens, N_pairs = 1000; c(she) = 4, c(he) = 8; word "w": c = 5, c(w, she) = 2, c(w, he) = 1;
    # word "v": c = 10, c(v, she) = 0, c(v, he) = 3 (delta undefined).
    uni = pd.DataFrame({"word": ["she", "he", "w", "v"], "count": [4, 8, 5, 10]})
    co = pd.DataFrame({"word": ["w", "w", "v"], "target": ["she", "he", "he"], "count": [2, 1, 3]})
    return uni, co


def test_pmi_and_delta_by_hand():
    uni, co = hand_counts()
    t = compute_delta(uni, co, n_tokens=100, n_pairs=1000).set_index("word")
    # PMI(w, she) = ln(2/1000) - ln(5/100) - ln(4/100) = ln(0.002 / (0.05 * 0.04)) = ln 1 = 0
    assert t.loc["w", "pmi_she"] == pytest.approx(0.0, abs=1e-12)
    # PMI(w, he) = ln(1/1000) - ln(0.05) - ln(0.08) = ln(0.001 / 0.004) = ln 0.25
    assert t.loc["w", "pmi_he"] == pytest.approx(math.log(0.25))
    # delta = ln 2 - ln 1 - ln 4 + ln 8 = ln 4
    assert t.loc["w", "delta"] == pytest.approx(math.log(4))
    assert t.loc["w", "delta"] == pytest.approx(t.loc["w", "pmi_she"] - t.loc["w", "pmi_he"])
    assert np.isnan(t.loc["v", "delta"]) and np.isnan(t.loc["v", "pmi_she"])
    assert t.loc["v", "pmi_he"] == pytest.approx(math.log((3 / 1000) / (0.1 * 0.08)))
    assert (t.loc["w", "count"], t.loc["w", "cooc_she"], t.loc["w", "freq"]) == (5, 2, 0.05)


def test_undefined_when_target_absent():
    uni, co = hand_counts()
    t = compute_delta(uni, co, 100, 1000, pairs=[Pair("queen", "king")]).set_index("word")
    assert t["delta__queen_king"].isna().all()
    assert t["delta_eq4"].isna().all()


def test_eq4_weighted_mean():
    # word a: pair deltas 1.0 and -0.5, weights 3 and 1 -> (3 * 1.0 + 1 * -0.5) / 4 = 0.625
    # word b: only the first defined -> skip: 1.0 / nan: undefined; word c: none defined -> undefined
    pairs = [Pair("she", "he", 3.0), Pair("her", "his", 1.0)]
    t = pd.DataFrame({"delta__she_he": [1.0, 1.0, np.nan], "delta__her_his": [-0.5, np.nan, np.nan]})
    skip = eq4(t, pairs, "skip")
    assert skip[0] == pytest.approx(0.625) and skip[1] == pytest.approx(1.0) and np.isnan(skip[2])
    strict = eq4(t, pairs, "nan")
    assert strict[0] == pytest.approx(0.625) and np.isnan(strict[1]) and np.isnan(strict[2])


def test_eq4_in_delta_table_with_chosen_pairs():
    # her: c = 6; his: c = 3. word w: c(w, her) = 3, c(w, his) = 1 -> delta_her_his = ln 3 - ln 1 - ln 6 + ln 3 = ln 1.5
    uni = pd.DataFrame({"word": ["she", "he", "her", "his", "w"], "count": [4, 8, 6, 3, 5]})
    co = pd.DataFrame(
        {"word": ["w", "w", "w", "w"], "target": ["she", "he", "her", "his"], "count": [2, 1, 3, 1]}
    )
    pairs = [Pair("she", "he", 1.0), Pair("her", "his", 3.0)]
    t = compute_delta(uni, co, 100, 1000, pairs).set_index("word")
    assert t.loc["w", "delta__her_his"] == pytest.approx(math.log(1.5))
    assert t.loc["w", "delta_eq4"] == pytest.approx((math.log(4) + 3 * math.log(1.5)) / 4)
    only = compute_delta(uni, co, 100, 1000, pairs, eq4_pairs=["her:his"]).set_index("word")
    assert only.loc["w", "delta_eq4"] == pytest.approx(math.log(1.5))


def test_pairs_file_is_the_papers_table4():
    pairs = load_pairs()
    assert len(pairs) == 38
    names = {p.name for p in pairs}
    assert {"she:he", "her:him", "her:his", "hers:his", "mummy:daddy", "ladies:lords", "madam:sir"} <= names
    assert all(p.weight == 1.0 for p in pairs)
    targets = load_targets()
    assert (
        "she" in targets
        and "he" in targets
        and len(targets) == len({w for p in pairs for w in (p.female, p.male)})
    )


def test_table4_and_kendall():
    pairs = [Pair("she", "he"), Pair("her", "his"), Pair("queen", "king")]
    t = pd.DataFrame(
        {
            "word": list("abcde"),
            "delta__she_he": [1.0, 2.0, 3.0, np.nan, 0.5],
            "delta__her_his": [3.0, 2.0, 1.0, 0.0, np.nan],  # reversed order on a, b, c
            "delta__queen_king": [np.nan] * 5,
        }
    )
    t4 = table4(t, pairs)
    # she/he defined for 4 of 5 words (80 %), her/his 4 (80 %), queen/king 0
    assert t4["absolute"].tolist() == [4, 4, 0] and t4["relative"].tolist() == [80.0, 80.0, 0.0]
    tau = kendall_matrix(t, pairs)
    # common words a, b, c: perfectly reversed ranking -> tau = -1
    assert tau.loc["she:he", "her:his"] == pytest.approx(-1.0)
    assert tau.loc["she:he", "she:he"] == pytest.approx(1.0)
    assert np.isnan(tau.loc["queen:king", "she:he"])


def _jsonl(path, docs):
    path.write_text("".join(json.dumps({"text": d}) + "\n" for d in docs))
    return path


def test_cli_count_merge_delta_appendix(tmp_path):
    docs = [
        "She met her mother; the queen said he would visit his father and the king.",
        "He said she was a fine doctor, and her sister agreed with his brother.",
        "The woman and the man, the girl and the boy, the wife and the husband.",
    ] * 4
    a, b = _jsonl(tmp_path / "a.jsonl", docs[:6]), _jsonl(tmp_path / "b.jsonl", docs[6:])
    run = CliRunner().invoke
    for shard in (a, b):
        r = run(group, ["count", str(shard), "-o", str(tmp_path / shard.stem)])
        assert r.exit_code == 0, r.output
    r = run(group, ["merge", str(tmp_path / "a"), str(tmp_path / "b"), "-o", str(tmp_path / "m")])
    assert r.exit_code == 0, r.output
    r = run(
        group, ["delta", str(tmp_path / "m"), "-o", str(tmp_path / "d.parquet"), "--eq4-weights", "her:his=2"]
    )
    assert r.exit_code == 0, r.output
    d = pd.read_parquet(tmp_path / "d.parquet")
    assert {"word", "delta", "count", "pmi_she", "pmi_he", "delta__her_his", "delta_eq4"} <= set(d.columns)
    assert d["delta"].notna().any()
    r = run(group, ["appendix", str(tmp_path / "d.parquet"), "-o", str(tmp_path / "app")])
    assert r.exit_code == 0, r.output
    for f in (
        "table4.csv",
        "table4.md",
        "fig4a_pmi.png",
        "fig4a_pmi.pdf",
        "fig4b_delta.pdf",
        "fig5_kendall_tau.png",
    ):
        assert (tmp_path / "app" / f).stat().st_size > 0
    assert len(pd.read_csv(tmp_path / "app" / "table4.csv")) == 38
    # restricted to two words, both with a defined she/he delta here: 2 of 2 = 100 %
    both = d[d["delta"].notna()]["word"].head(2)
    (tmp_path / "words.txt").write_text("\n".join(both) + "\n")
    r = run(
        group,
        [
            "appendix",
            str(tmp_path / "d.parquet"),
            "-o",
            str(tmp_path / "app2"),
            "--words",
            str(tmp_path / "words.txt"),
        ],
    )
    assert r.exit_code == 0, r.output
    t4 = pd.read_csv(tmp_path / "app2" / "table4.csv").set_index("female")
    assert (t4.loc["she", "absolute"], t4.loc["she", "relative"]) == (2, 100.0)


def test_import_released_delta(reference_dir, tmp_path):
    from unstereo.tables import read_table

    csv = reference_dir / "unstereo-eval" / "data" / "pmi_file_w_counts.csv"
    r = CliRunner().invoke(group, ["import-delta", str(csv), "-o", str(tmp_path / "released.parquet")])
    assert r.exit_code == 0, r.output
    d = read_table(tmp_path / "released.parquet", "delta")
    assert len(d) == 65914
    assert {"null", "nan"} <= set(d["word"])
    # the file's first row: homers, pmi_diff -4.74582214318505, counts 199364
    row = d.set_index("word").loc["homers"]
    assert row["delta"] == -4.74582214318505 and row["count"] == 199364
