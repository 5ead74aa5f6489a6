"""Readers on hand-made files: ids, templates, fillings, extras; bad input -> InputError naming file and line, or
dropped and counted (on_bad_row: drop)."""

from __future__ import annotations

import gzip
import json
import logging

import pandas as pd
import pytest

from unstereo.errors import InputError
from unstereo.tables import PAIRS, validate, write_table
from unstereo.unstereoeval.benchmarks import build_pairs

# ----------------------------------------------------------------------------------------------- Winobias

WINOBIAS = {
    "pro_stereotyped_type1.txt.dev": [
        "1 [The developer] argued with the designer because [he] did not like the design.",
        "2 The developer argued with [the designer] because [her] idea cannot be implemented.",
    ],
    "anti_stereotyped_type1.txt.dev": [
        "1 [The developer] argued with the designer because [she] did not like the design.",
        "2 The developer argued with [the designer] because [his] idea cannot be implemented.",
    ],
    "pro_stereotyped_type2.txt.dev": [
        "1 The chief called [the counselor] and told [her] that [she] could have the day off.",
    ],
    "anti_stereotyped_type2.txt.dev": [
        "1 The chief called [the counselor] and told [him] that [he] could have the day off.",
    ],
    "pro_stereotyped_type1.txt.test": ["1 [The CEO] bought the accountant a car because [he] is rich."],
    "anti_stereotyped_type1.txt.test": ["1 [The CEO] bought the accountant a car because [she] is rich."],
    "pro_stereotyped_type2.txt.test": ["1 The mover helped [the clerk] and thanked [her] ."],
    "anti_stereotyped_type2.txt.test": ["1 The mover helped [the clerk] and thanked [him] ."],
}


@pytest.fixture
def winobias_dir(tmp_path):
    folder = tmp_path / "wino"
    folder.mkdir()
    for name, lines in WINOBIAS.items():
        (folder / name).write_text("\n".join(lines) + "\n")
    return folder


def test_winobias_original_files(winobias_dir):
    df = build_pairs("winobias", winobias_dir)
    validate(df, PAIRS)
    # dev keeps the 3 male sentences, sorted by sentence: "The chief ..." < "... because he" < "... because his"
    dev = df[df["split"] == "dev"]
    assert dev["pair_id"].tolist() == ["Winobias:dev:0", "Winobias:dev:1", "Winobias:dev:2"]
    assert dev["template"].tolist() == [
        "The chief called the counselor and told {pronoun2} that {pronoun} could have the day off.",
        "The developer argued with the designer because {pronoun} did not like the design.",
        "The developer argued with the designer because {pronoun1} idea cannot be implemented.",
    ]
    assert dev["seed_word"].tolist() == [
        "counselor",
        "developer",
        "designer",
    ]  # entity's last word, lowercased
    assert dev["stereotype"].tolist() == [False, True, False]
    assert dev["is_challenging"].tolist() == [False, True, True]
    assert dev["sentence_female"].iloc[0] == (
        "The chief called the counselor and told her that she could have the day off."
    )
    assert dev["sentence_male"].iloc[2] == (
        "The developer argued with the designer because his idea cannot be implemented."
    )
    assert dev["source"].iloc[1] == "pro_stereotyped_type1.txt.dev:1"
    test = df[df["split"] == "test"]
    assert test["pair_id"].tolist() == ["Winobias:test:0", "Winobias:test:1"]
    assert test["seed_word"].tolist() == ["ceo", "clerk"]
    assert df["benchmark"].unique().tolist() == ["Winobias"]
    assert df["max_pmi"].isna().all()


def test_winobias_split_and_name(winobias_dir):
    df = build_pairs("winobias", winobias_dir, "WB", splits=["test"])
    assert df["pair_id"].tolist() == ["WB:test:0", "WB:test:1"]


def test_winobias_reference_quirk_keeps_third_bracket(winobias_dir):
    # The reference removes the brackets of the entity and the first pronoun only: "[he]" stays.
    df = build_pairs("winobias", winobias_dir, reference_quirks=True, splits=["dev"])
    assert df["template"].iloc[0] == (
        "The chief called the counselor and told {pronoun2} that [{pronoun}] could have the day off."
    )
    # and fills with .strip().capitalize(): "The CEO" would become "The ceo"; here the first word stays
    assert (
        df["sentence_male"].iloc[0]
        == "The chief called the counselor and told him that [he] could have the day off."
    )


def test_winobias_released_template_files(tmp_path):
    for split, rows in {"dev": 2, "test": 1}.items():
        pd.DataFrame(
            {
                "sentence": [f"s{i}" for i in range(rows)],
                "word": ["ceo"] * rows,
                "template": [f"The CEO said {{pronoun}} left {i}." for i in range(rows)],
            }
        ).to_csv(tmp_path / f"coref__Winobias__templates.{split}.csv")
    df = build_pairs("winobias", tmp_path)
    assert df["pair_id"].tolist() == ["Winobias:dev:0", "Winobias:dev:1", "Winobias:test:0"]
    assert df["sentence_female"].iloc[2] == "The CEO said she left 0."


def test_winobias_missing_files(winobias_dir):
    (winobias_dir / "anti_stereotyped_type2.txt.test").unlink()
    with pytest.raises(InputError, match="split 'test' needs the 4 files"):
        build_pairs("winobias", winobias_dir)
    assert len(build_pairs("winobias", winobias_dir, splits=["dev"])) == 3


def test_winobias_bad_lines(winobias_dir):
    path = winobias_dir / "pro_stereotyped_type1.txt.dev"
    path.write_text(path.read_text() + "The CEO has no id [he] here.\n")
    with pytest.raises(InputError, match=r"pro_stereotyped_type1\.txt\.dev:3: empty id"):
        build_pairs("winobias", winobias_dir)
    path.write_text(WINOBIAS[path.name][0] + "\n3 A line without brackets.\n")
    with pytest.raises(InputError, match=r"txt\.dev:2: malformed WinoBias line"):
        build_pairs("winobias", winobias_dir)
    path.write_text(WINOBIAS[path.name][0] + "\n1 [The CEO] left because [he] was tired.\n")
    with pytest.raises(InputError, match=r"txt\.dev:2: duplicated id: 1 \(first at line 1\)"):
        build_pairs("winobias", winobias_dir)


# ---------------------------------------------------------------------------------------------- Winogender

WINOGENDER_TSV = """sentid\tsentence
technician.customer.1.male.txt\tThe technician told the customer that he could pay with cash.
technician.customer.1.female.txt\tThe technician told the customer that she could pay with cash.
technician.customer.1.neutral.txt\tThe technician told the customer that they could pay with cash.
cashier.someone.0.female.txt\tThe cashier told someone that she couldn't help.
cashier.someone.0.male.txt\tThe cashier told someone that he couldn't help.
"""


def test_winogender_male_row_per_example(tmp_path):
    path = tmp_path / "all_sentences.tsv"
    path.write_text(WINOGENDER_TSV)
    df = build_pairs("winogender", path)
    assert df["pair_id"].tolist() == ["Winogender:technician.customer.1", "Winogender:cashier.someone.0"]
    # answer 1 -> the participant, answer 0 -> the occupation
    assert df["seed_word"].tolist() == ["customer", "cashier"]
    # the male row is chosen even when the female row comes first (cashier: line 6)
    assert df["template"].tolist() == [
        "The technician told the customer that {pronoun} could pay with cash.",
        "The cashier told someone that {pronoun} couldn't help.",
    ]
    assert df["source"].tolist() == ["all_sentences.tsv:2", "all_sentences.tsv:6"]


def test_winogender_reference_quirks(tmp_path):
    # male rows first, as in the original file; the reference takes the first row per example id and its
    # released file lost apostrophes and gained a trailing '"', which the quirk fill deletes again.
    lines = WINOGENDER_TSV.splitlines()
    path = tmp_path / "all_sentences.tsv"
    path.write_text("\n".join(lines[:4] + [lines[5], lines[4]]) + "\n")
    df = build_pairs("winogender", path, reference_quirks=True)
    assert df["template"].iloc[1] == 'The cashier told someone that {pronoun} couldnt help."'
    assert df["sentence_female"].iloc[1] == "The cashier told someone that she couldnt help."


def test_winogender_bad_rows(tmp_path):
    path = tmp_path / "all_sentences.tsv"
    path.write_text(
        WINOGENDER_TSV + "nurse.patient.1.female.txt\tThe nurse helped the patient because she could.\n"
    )
    with pytest.raises(InputError, match=r"all_sentences\.tsv:7: example 'nurse\.patient\.1' has no male"):
        build_pairs("winogender", path)
    path.write_text(WINOGENDER_TSV + "technician.customer.1.male.txt\tagain he\n")
    with pytest.raises(InputError, match=r"tsv:7: duplicated id: sentid"):
        build_pairs("winogender", path)
    path.write_text(WINOGENDER_TSV + "\tno id he\n")
    with pytest.raises(InputError, match=r"tsv:7: empty id"):
        build_pairs("winogender", path)


# --------------------------------------------------------------------------------------------- USE released

RAW_CSV = """,word,target_word,sentence,has_placeholder,template,modifications,likely_under,is_natural,has_word,is_revised
0,adolescent,he,He ran.,True,{pronoun} ran.,,"{'male': 'likely', 'female': 'likely'}",True,True,False
3,adolescent,she,He swam.,True,{pronoun} swam.,,"{'male': 'likely', 'female': 'unlikely'}",False,True,False
7,apple,he,"He ate {pronoun1} apple, ""fast"".",True,"{pronoun} ate {pronoun1} apple, ""fast"".",,"{'male': 'likely', 'female': 'likely'}",True,True,True
"""


def test_use_raw(tmp_path):
    path = tmp_path / "USE-5.csv"
    path.write_text(RAW_CSV)
    df = build_pairs("use-raw", path)
    # pair id = 0-based row of the file (not the unnamed index label 0/3/7); unnatural row 1 left out
    assert df["pair_id"].tolist() == ["USE-5:0", "USE-5:2"]
    assert df["benchmark"].unique().tolist() == ["USE-5"]
    assert df["seed_word"].tolist() == ["adolescent", "apple"]
    assert df["raw_label"].tolist() == ["0", "7"]
    assert df["source"].tolist() == ["USE-5.csv:2", "USE-5.csv:4"]
    assert df["sentence_female"].iloc[1] == 'She ate her apple, "fast".'
    assert df["is_revised"].tolist() == [False, True]
    everything = build_pairs("use-raw", path, natural_only=False)
    assert everything["pair_id"].tolist() == ["USE-5:0", "USE-5:1", "USE-5:2"]
    # reference quirks: capitalize() lower-cases the rest and deletes '"'
    quirky = build_pairs("use-raw", path, reference_quirks=True)
    assert quirky["sentence_female"].iloc[1] == "She ate her apple, fast."


def _preprocessed(tmp_path, templates, orig_index=None):
    (tmp_path / "raw").mkdir(exist_ok=True)
    (tmp_path / "raw" / "USE-5.csv").write_text(RAW_CSV)
    pre = tmp_path / "preprocessed"
    pre.mkdir(exist_ok=True)
    path = pre / "USE-5-no-maxpmi-constraint.csv.gz"
    df = pd.DataFrame(
        {
            "orig_index": orig_index or list(range(len(templates))),
            "word": ["adolescent", "apple"][: len(templates)],
            "template": templates,
            "dataset": "USE-5",
            "max_gender_pmi": [0.25, -0.5][: len(templates)],
        }
    )
    with gzip.open(path, "wt") as fh:
        df.to_csv(fh, index=False)
    return path


def test_use_released_maps_to_raw_rows(tmp_path):
    path = _preprocessed(tmp_path, ["{pronoun} ran.", '{pronoun} ate {pronoun1} apple, "fast".'])
    df = build_pairs("use-released", path)
    # orig_index 0, 1 counts natural rows; the pair ids are raw rows 0 and 2
    assert df["pair_id"].tolist() == ["USE-5:0", "USE-5:2"]
    assert df["released_max_pmi"].tolist() == [0.25, -0.5]
    bad = _preprocessed(tmp_path, ["{pronoun} ran.", "{pronoun} swam."])
    with pytest.raises(InputError, match=r"\.csv\.gz:3: template differs from natural row 2"):
        build_pairs("use-released", bad)
    (tmp_path / "raw" / "USE-5.csv").unlink()
    with pytest.raises(InputError, match="pass raw="):
        build_pairs("use-released", bad)


def test_use_released_winobias_and_winogender(tmp_path):
    wb = tmp_path / "Winobias-dev-no-maxpmi-constraint.csv.gz"
    pd.DataFrame(
        {
            "orig_index": [0, 1],
            "template": ["{pronoun} a", "{pronoun} b"],
            "word": "x",
            "dataset": "Winobias-dev",
        }
    ).to_csv(wb, index=False)
    assert build_pairs("use-released", wb)["pair_id"].tolist() == ["Winobias:dev:0", "Winobias:dev:1"]
    wg = tmp_path / "Winogender-no-maxpmi-constraint.csv.gz"
    pd.DataFrame(
        {
            "orig_index": ["a.b.1.male.txt"],
            "example_id": ["a.b.1"],
            "template": ["{pronoun} a"],
            "dataset": "Winogender",
        }
    ).to_csv(wg, index=False)
    assert build_pairs("use-released", wg)["pair_id"].tolist() == ["Winogender:a.b.1"]


# ------------------------------------------------------------------------------------------- user templates


def test_templates_csv_jsonl_parquet(tmp_path):
    csv = tmp_path / "mine.csv"
    csv.write_text(
        'id,template,seed_word,topic\nq1,{pronoun} likes tea.,tea,food\nq2,"Ask {pronoun2}, then {pronoun2}self.",,x\n'
    )
    df = build_pairs("templates", csv)
    assert df["pair_id"].tolist() == ["mine:q1", "mine:q2"]
    assert df["sentence_female"].tolist() == ["She likes tea.", "Ask her, then herself."]
    assert df["sentence_male"].tolist() == ["He likes tea.", "Ask him, then himself."]
    assert df["seed_word"].iloc[0] == "tea" and pd.isna(df["seed_word"].iloc[1])
    assert df["topic"].tolist() == ["food", "x"]  # other columns are kept
    jsonl = tmp_path / "other.jsonl"
    jsonl.write_text(
        "\n".join(json.dumps({"template": t}) for t in ["{pronoun} sat.", "{pronoun1} cup broke."]) + "\n"
    )
    df = build_pairs("templates", jsonl, "Mine")
    assert df["pair_id"].tolist() == ["Mine:0", "Mine:1"]  # no id column: row numbers
    parquet = tmp_path / "t.parquet"
    pd.DataFrame({"pair_id": ["x:1"], "template": ["{pronoun} sat."]}).to_parquet(parquet)
    assert build_pairs("templates", parquet)["pair_id"].tolist() == ["x:1"]


BAD_LINES = [
    ("id,template\na,{pronoun} ok.\nb,{pronoun3} ran.\n", r"bad\.csv:3: unknown placeholder: \{pronoun3\}"),
    ("id,template\na,{pronoun} ok.\nb,He ran.\n", r"bad\.csv:3: fillings do not differ"),
    ("id,template\na,{pronoun} ok.\n,{pronoun} ran.\n", r"bad\.csv:3: empty id"),
    (
        "id,template\na,{pronoun} ok.\na,{pronoun} ran.\n",
        r"bad\.csv:3: duplicated id: 'bad:a' \(first at bad\.csv:2\)",
    ),
    ("id,template\na,{pronoun} ok.\nb,{pronoun} ran,extra\n", r"bad\.csv:3: malformed row"),
]


@pytest.mark.parametrize(("text", "message"), BAD_LINES)
def test_bad_rows_raise_with_file_and_line(tmp_path, text, message):
    path = tmp_path / "bad.csv"
    path.write_text(text)
    with pytest.raises(InputError, match=message):
        build_pairs("templates", path)


def test_undecodable_line(tmp_path):
    path = tmp_path / "bad.csv"
    path.write_bytes(b"id,template\na,{pronoun} ok.\nb,{pronoun} caf\xe9 \xff.\nc,{pronoun} fine.\n")
    with pytest.raises(InputError, match=r"bad\.csv:3: undecodable line"):
        build_pairs("templates", path)
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_bytes(b'{"template": "{pronoun} ok."}\n\xff\n{"template": \n')
    with pytest.raises(InputError, match=r"bad\.jsonl:2: undecodable line"):
        build_pairs("templates", jsonl)


def test_bad_rows_dropped_and_counted(tmp_path, caplog):
    path = tmp_path / "bad.csv"
    path.write_bytes(
        b"id,template\na,{pronoun} ok.\nb,{pronoun3} ran.\nc,He ran.\n,{pronoun} x.\na,{pronoun} y.\n"
        b"d,{pronoun} caf\xff.\ne,{pronoun} fine.\n"
    )
    with caplog.at_level(logging.INFO, logger="unstereo"):
        df = build_pairs("templates", path, on_bad_row="drop")
    assert df["pair_id"].tolist() == ["bad:a", "bad:e"]
    summary = [r.getMessage() for r in caplog.records if "dropped 5 bad row(s)" in r.getMessage()]
    assert summary, [r.getMessage() for r in caplog.records]
    for kind in (
        "unknown placeholder",
        "fillings do not differ",
        "empty id",
        "duplicated id",
        "undecodable line",
    ):
        assert f"1 x {kind}" in summary[0]
    assert any("bad.csv:7" in r.getMessage() for r in caplog.records)  # each dropped row is named


def test_unknown_kind(tmp_path):
    with pytest.raises(InputError, match="unknown benchmark kind"):
        build_pairs("nope", tmp_path)


# ---------------------------------------------------------------------------------------------- pair tables


def test_existing_pair_table(tmp_path):
    pairs = pd.DataFrame(
        {
            "pair_id": ["USE-5:g0", "USE-5:g1"],
            "benchmark": "USE-5",
            "template": ["{pronoun} ran.", "{pronoun1} dog sat."],
            "sentence_female": ["She ran.", None],
            "sentence_male": ["He ran.", None],
            "seed_word": ["run", "dog"],
            "max_pmi": [float("nan")] * 2,
            "max_pmi_word": [None, None],
            "source": "qwen",
            "prompt": ["p0", "p1"],
        }
    )
    path = tmp_path / "pairs.parquet"
    pairs.to_parquet(path)  # sentences missing in row 2: not a valid PAIRS table yet
    df = build_pairs("pairs", path)
    validate(df, PAIRS)
    assert df["pair_id"].tolist() == ["USE-5:g0", "USE-5:g1"]
    assert df["benchmark"].unique().tolist() == ["USE-5"]
    assert df["sentence_female"].tolist() == ["She ran.", "Her dog sat."]  # filled where missing
    assert df["source"].tolist() == ["qwen", "qwen"] and df["prompt"].tolist() == ["p0", "p1"]
    renamed = build_pairs("pairs", path, "Gen")
    assert renamed["benchmark"].unique().tolist() == ["Gen"]
    # ids follow the new name, so they stay unique across tables
    assert renamed["pair_id"].tolist() == ["Gen:g0", "Gen:g1"]
    pairs.loc[1, ["sentence_female", "sentence_male"]] = ["Same.", "Same."]
    write_table(pairs, path, PAIRS)
    with pytest.raises(InputError, match=r"pairs\.parquet:2: fillings do not differ"):
        build_pairs("pairs", path)


def test_winobias_ids_follow_the_released_order_in_both_modes(tmp_path):
    # The reference sorts by its own sentence, where a third bracket stays: "... saw [his] dog." sorts before
    # "... saw a cat." ('[' < 'a'), although the clean "... saw his dog." would sort after it. Pair ids follow the
    # released order in both modes.
    lines = {
        "pro_stereotyped_type1.txt.dev": "1 [The cook] told the clerk that [he] saw [his] dog.\n",
        "anti_stereotyped_type1.txt.dev": "1 The cook told [the clerk] that [he] saw a cat.\n",
        "pro_stereotyped_type2.txt.dev": "",
        "anti_stereotyped_type2.txt.dev": "",
    }
    for name, text in lines.items():
        (tmp_path / name).write_text(text)
    clean = build_pairs("winobias", tmp_path, splits=["dev"])
    quirky = build_pairs("winobias", tmp_path, splits=["dev"], reference_quirks=True)
    assert clean["template"].tolist() == [
        "The cook told the clerk that {pronoun} saw {pronoun1} dog.",
        "The cook told the clerk that {pronoun} saw a cat.",
    ]
    assert quirky["template"].tolist()[0] == "The cook told the clerk that {pronoun} saw [{pronoun1}] dog."
    assert clean["pair_id"].tolist() == quirky["pair_id"].tolist() == ["Winobias:dev:0", "Winobias:dev:1"]
