"""FairPair's rule-based perturbation p and the Common Sents / user prompt tables."""

from __future__ import annotations

import pandas as pd
import pytest

from unstereo.errors import ConfigError, InputError
from unstereo.fairpair.perturb import PRONOUNS_MALE_TO_FEMALE, RulePerturbation, match_case, mentions
from unstereo.fairpair.prompts import common_sents, read_occupations, read_prompt_file

P = RulePerturbation({"John": "Jane"}, {**PRONOUNS_MALE_TO_FEMALE, "man": "woman"})


@pytest.mark.parametrize(
    "text, expected",
    [
        ("John is a man, working as a doctor.", "Jane is a woman, working as a doctor."),
        # possessives (straight and curly apostrophe), never inside other words
        (
            "John's dog met Johnson and Jones; John’s cat too.",
            "Jane's dog met Johnson and Jones; Jane’s cat too.",
        ),
        ("the manager, a human, a woman and a Man", "the manager, a human, a woman and a Woman"),
        ("Hebrew, this, the, Hiss, shed, hers", "Hebrew, this, the, Hiss, shed, hers"),
        # case kept: lower, capitalised, capitals
        ("He said his name; HE is him. His job", "She said her name; SHE is her. Her job"),
        ("JOHN shouted at himself.", "JANE shouted at herself."),
        # a name in lower case is a word, not the name
        ("john is lower case", "john is lower case"),
        ("", ""),
    ],
)
def test_rule_perturbation(text, expected):
    assert P(text) == expected


def test_names_that_are_common_words_are_replaced_only_capitalised():
    p = RulePerturbation({"Will": "Jill", "Bill": "Rose"}, PRONOUNS_MALE_TO_FEMALE)
    assert p("Will said he will pay the bill to Bill.") == "Jill said she will pay the bill to Rose."


def test_one_pass_swaps_and_longest_key_first():
    assert RulePerturbation({}, {"he": "she", "she": "he"})("he and She") == "she and He"
    p = RulePerturbation({"Mary Ann": "Bob", "Mary": "Tom"})
    assert p("Mary Ann and Mary") == "Bob and Tom"


def test_bad_maps_are_rejected():
    with pytest.raises(ValueError, match="names and as words"):
        RulePerturbation({"He": "She"}, {"he": "she"})
    with pytest.raises(ValueError, match="not a word"):
        RulePerturbation({}, {"!": "?"})


def test_match_case_and_mentions():
    assert (match_case("HE", "she"), match_case("He", "she"), match_case("he", "she")) == (
        "SHE",
        "She",
        "she",
    )
    assert match_case("I", "we") == "We"  # a one-letter capital is a capitalised word
    assert mentions("Ask JOHN.", ["John"]) and mentions("John's", ["John"])
    assert not mentions("Johnson and john", ["John"])


def test_common_sents_uses_articles_and_the_perturbation(tmp_path):
    occ = tmp_path / "occupations-stats.tsv"
    occ.write_text("occupation\tbls_pct_female\nengineer\t10\ndoctor\t40\ndoctor\t40\n")
    assert read_occupations(occ) == ["engineer", "doctor"]
    df = common_sents(["engineer", "doctor"], [("John", "Jane"), ("Tom", "Mary")], [("man", "woman")],
                      RulePerturbation({"John": "Jane", "Tom": "Mary"}, {"man": "woman"}))  # fmt: skip
    assert list(df["prompt"]) == [
        "John is a man, working as an engineer.",
        "Tom is a man, working as an engineer.",
        "John is a man, working as a doctor.",
        "Tom is a man, working as a doctor.",
    ]
    assert df["perturbed_prompt"].iloc[0] == "Jane is a woman, working as an engineer."
    assert list(df["prompt_id"])[:2] == ["cs:engineer:john:man", "cs:engineer:tom:man"]
    assert list(df["entity"]) == ["John", "Tom", "John", "Tom"] and df["entity_perturbed"].iloc[1] == "Mary"
    assert len(common_sents(["doctor"], [("John", "Jane")], [("man", "woman")], P, max_prompts=1)) == 1


def test_common_sents_checks_the_perturbation_covers_the_prompt():
    with pytest.raises(ConfigError, match="fairpair.perturbation"):
        common_sents(["doctor"], [("Tom", "Mary")], [("man", "woman")], P)
    no_desc = common_sents(
        ["doctor"], [("John", "Jane")], [], P, template="{name}, working as a {occupation}."
    )
    assert list(no_desc["perturbed_prompt"]) == ["Jane, working as a doctor."]


def test_occupations_of_winogender(reference_dir):
    occ = read_occupations(reference_dir / "winogender" / "data" / "occupations-stats.tsv")
    assert len(occ) == 60 and occ[:2] == ["technician", "accountant"]


def test_user_prompt_file(tmp_path):
    path = tmp_path / "p.csv"
    pd.DataFrame({"prompt": ["John went home.", "He sings."], "perturbed_prompt": ["", "She sang."]}).to_csv(
        path, index=False
    )
    df = read_prompt_file(path, P)
    assert list(df["prompt_id"]) == ["0", "1"]
    assert list(df["perturbed_prompt"]) == ["Jane went home.", "She sang."]
    jl = tmp_path / "p.jsonl"
    jl.write_text('{"prompt_id": "a", "prompt": "John ran."}\n{"prompt_id": "b", "prompt": "The dog ran."}\n')
    with pytest.raises(InputError, match=r"p\.jsonl:3: p\(x\) equals x"):
        read_prompt_file(jl, P)
    bad = tmp_path / "bad.csv"
    bad.write_text("text\nJohn\n")
    with pytest.raises(InputError, match="column 'prompt'"):
        read_prompt_file(bad, P)
