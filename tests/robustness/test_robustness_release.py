"""The released "Tail wagging" Winogender constructions rebuilt from the original templates, row for row."""

from __future__ import annotations

import pandas as pd
import pytest
from click.testing import CliRunner

from unstereo.robustness.release import RELEASE_FILES, load_release, rebuild
from unstereo.tables import PAIRS, read_table

# file -> (identical rows, explained differences); every other row of the 720 (23,760 for adjectives) differs for
# the reason given and nothing is unexplained.
EXPECTED = {
    "winogender": (720, {}),
    **{
        f"{r}_clause_{c}": (720, {})
        for r in ("subject", "object")
        for c in ("afternoon", "back", "beach", "restaurant", "to_restaurant")
    },
    # 2 of 33 adjectives are misspelt in the release: 2 x 720 rows
    "adj_subject": (22320, {"typo": 1440}),
    "subject_adj": (22320, {"typo": 1440}),
    "object_adj": (22320, {"typo": 1440}),
    # before the participant: "someone" rows have no adjective (so no typo either: 2 x 360 typo rows); "a student"
    # (educator templates, 2 x 3 rows per adjective) takes "an" before 10 vowel-initial adjectives incl. honest
    "adj_object": (22992, {"typo": 708, "a/an": 48, "typo, a/an": 12}),
    # 8 templates' sentences quoted in the release; 3 templates whose edit is no word map (inserted "know", "eat"
    # replaced once of twice, ...)
    "synonymized": (654, {"quotes": 48, "not a word map": 18}),
}


@pytest.fixture(scope="module")
def release_dir(reference_dir):
    path = reference_dir / "tail-wagging" / "winogender" / "data"
    if not path.is_dir():
        pytest.skip(f"tail-wagging reference data not found under {reference_dir}")
    return path


def test_rebuild_matches_the_release_and_explains_every_difference(release_dir):
    results = {r.name: r for r in rebuild(release_dir)}
    assert set(results) == set(RELEASE_FILES) == set(EXPECTED)
    for name, (identical, explained) in EXPECTED.items():
        r = results[name]
        assert r.unexplained == [], (name, r.unexplained[:3])
        assert (r.matched, r.explained) == (identical, explained), name
        assert r.matched + sum(r.explained.values()) == r.rows
    assert results["winogender"].rate == 1.0 and results["adj_subject"].rows == 23760


def test_release_as_fixed_alternative_and_cli(release_dir, tmp_path):
    from unstereo.cli import cli

    pairs = load_release(release_dir / "object_clause_back.tsv")
    assert (
        len(pairs) == 240
        and pairs["pair_id"].iloc[0] == "Winogender:technician.customer.1@object_clause_back"
    )
    assert pairs["sentence_female"].iloc[0] == (
        "The technician told the customer , who just came back , that she could pay with cash."
    )
    adj = load_release(release_dir / "adj_object.tsv", construction="adj_object")
    assert len(adj) == 33 * 240 and adj["pair_id"].iloc[0].endswith("@adj_object:aggressive")
    runner = CliRunner()
    res = runner.invoke(
        cli,
        [
            "robustness",
            "release",
            str(release_dir),
            "-o",
            str(tmp_path / "m.csv"),
            "--file",
            "subject_clause_back",
        ],
    )
    assert res.exit_code == 0, res.output
    table = pd.read_csv(tmp_path / "m.csv")
    assert table["identical"].tolist() == [720] and "UNEXPLAINED" not in res.output
    res = runner.invoke(
        cli,
        [
            "robustness",
            "release-pairs",
            str(release_dir / "synonymized.tsv"),
            "-o",
            str(tmp_path / "p.parquet"),
        ],
    )
    assert res.exit_code == 0, res.output
    assert len(read_table(tmp_path / "p.parquet", PAIRS)) == 240


def test_release_construction_over_the_project_winogender_table(release_dir, reference_dir):
    from unstereo.robustness.build import construct, construction_names, from_release
    from unstereo.unstereoeval.benchmarks.readers.winogender import read_winogender

    pairs = read_winogender(reference_dir / "winogender" / "data" / "all_sentences.tsv")
    released = from_release(pairs, "release:object_clause_back", release_dir)
    assert len(released) == len(pairs) == 240 and released["changed"].all()
    assert released["original_pair_id"].tolist() == pairs["pair_id"].tolist()
    # the project's own construction over the pair table gives the release's sentences, up to " , " spacing
    ours = construct(pairs, "object_clause_back")
    assert (
        ours["sentence_male"].tolist()
        == released["sentence_male"].str.replace(" , ", ", ").str.replace(" ,", ",").tolist()
    )
    assert construction_names(["release:synonymized"]) == ["release:synonymized"]
