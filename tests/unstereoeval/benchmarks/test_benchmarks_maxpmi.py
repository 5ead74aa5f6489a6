"""MaxPMI (docs/methods.md#maxpmi-and-eta) on hand-made templates and a hand-made delta table: one test per
rule.

The delta table below gives large values to things that must NOT be looked up (placeholder names, "self" of
``{pronoun2}self``, stop words, punctuation), so a wrong rule shows up as a wrong maximum.
"""

from __future__ import annotations

import math

import pandas as pd
import pytest

from unstereo.tables import read_delta
from unstereo.unstereoeval.benchmarks import MaxPMI, add_max_pmi, max_pmi, max_pmi_many, template_words

DELTA = {
    "cat": 0.2,
    "dog": -0.7,
    "park": 0.7,
    "walked": -0.1,
    "hurt": 0.4,
    "sister": 0.3,
    "she": 1.5,
    "her": 1.1,
    "hers": -2.0,
    "himself": -1.2,
    # must never be looked up:
    "pronoun": 5.0,
    "pronoun1": 5.0,
    "pronoun2": 5.0,
    "self": 3.0,
    "the": 9.0,
    "is": 9.0,
    ",": 9.0,
    ".": 9.0,
    "{": 9.0,
}


def test_placeholders_are_removed():
    # "{pronoun} walked the cat." -> " walked the cat." -> walked(-0.1), the(stop), cat(0.2), "."(punct)
    # -> largest |delta| is cat: +0.2
    assert template_words("{pronoun} walked the cat.") == ["walked", "cat"]
    assert max_pmi("{pronoun} walked the cat.", DELTA) == MaxPMI(0.2, "cat")
    # {pronoun1} and {pronoun2} likewise: "pronoun1"/"pronoun2" (5.0) never appear
    assert max_pmi("{pronoun1} cat walked {pronoun2}", DELTA) == MaxPMI(0.2, "cat")


def test_pronoun2self_is_removed_whole():
    # "{pronoun} hurt {pronoun2}self." -> delete "{pronoun2}self" first -> " hurt ." -> hurt(0.4).
    # Deleting "{pronoun2}" first would leave "self" (3.0) and give 3.0.
    assert template_words("{pronoun} hurt {pronoun2}self.") == ["hurt"]
    assert max_pmi("{pronoun} hurt {pronoun2}self.", DELTA) == MaxPMI(0.4, "hurt")


def test_lowercase_and_signed_value():
    # "The Cat saw {pronoun1} DOG." -> "the cat saw  dog." -> cat 0.2, dog -0.7 -> -0.7 (sign kept)
    assert max_pmi("The Cat saw {pronoun1} DOG.", DELTA) == MaxPMI(-0.7, "dog")


def test_stop_words_dropped():
    # "the" (9.0) and "is" (9.0) are spaCy stop words: dropped; cat 0.2 remains
    assert max_pmi("{pronoun} is the cat", DELTA) == MaxPMI(0.2, "cat")


def test_punctuation_dropped():
    # "," and "." have delta 9.0 in the table but are punctuation: came, saw (no delta), cat 0.2
    assert template_words("{pronoun} came, saw the cat.") == ["came", "saw", "cat"]
    assert max_pmi("{pronoun} came, saw the cat.", DELTA) == MaxPMI(0.2, "cat")


def test_literal_pronouns_kept():
    # she/her/hers/himself are spaCy stop words but kept when literal:
    # thanked(-), her 1.1, sister 0.3, himself -1.2, hers -2.0 -> -2.0 "hers"
    words = template_words("{pronoun} thanked her sister, himself and hers!")
    assert words == ["thanked", "her", "sister", "himself", "hers"]
    assert max_pmi("{pronoun} thanked her sister, himself and hers!", DELTA) == MaxPMI(-2.0, "hers")
    # "she" 1.5 beats cat 0.2
    assert max_pmi("{pronoun1} cat said she left", DELTA) == MaxPMI(1.5, "she")


def test_tie_first_in_token_order_wins():
    # |dog| = |park| = 0.7: the first in token order wins (the reference's np.argmax)
    assert max_pmi("{pronoun} took the dog to the park", DELTA) == MaxPMI(-0.7, "dog")
    assert max_pmi("{pronoun} left the park with the dog", DELTA) == MaxPMI(0.7, "park")
    # two different words with the same delta: the first one's word is reported
    assert max_pmi("{pronoun} saw a bird and a fish", {"bird": 0.5, "fish": 0.5}) == MaxPMI(0.5, "bird")


def test_undefined_when_no_word_has_a_delta():
    # "is", "here" are stop words; "zzz" has no delta -> undefined: NaN and no word
    for template in ("{pronoun} is here.", "{pronoun} zzz", "{pronoun}"):
        result = max_pmi(template, DELTA)
        assert math.isnan(result.value) and result.word is None


def test_nan_delta_counts_as_absent():
    # cat has NaN delta (undefined in the corpus): only dog 0.1 counts
    assert max_pmi("{pronoun} cat dog", {"cat": float("nan"), "dog": 0.1}) == MaxPMI(0.1, "dog")


def test_unknown_placeholder_is_rejected():
    with pytest.raises(ValueError, match="unknown placeholder"):
        max_pmi("{Pronoun} walked", DELTA)


def test_vectorised_matches_one_by_one_and_keeps_order():
    templates = [
        "{pronoun} walked the cat.",
        "{pronoun} is here.",
        "The Cat saw {pronoun1} DOG.",
        "{pronoun} walked the cat.",  # duplicate: computed once, reported twice
        "{pronoun} thanked her sister, himself and hers!",
    ]
    many = max_pmi_many(templates, DELTA)
    assert list(many.columns) == ["max_pmi", "max_pmi_word"]
    assert len(many) == 5
    for t, (_, row) in zip(templates, many.iterrows(), strict=True):
        one = max_pmi(t, DELTA)
        assert (math.isnan(one.value) and math.isnan(row["max_pmi"])) or one.value == row["max_pmi"]
        assert one.word == row["max_pmi_word"] or (one.word is None and pd.isna(row["max_pmi_word"]))
    assert many["max_pmi"].tolist()[2:4] == [-0.7, 0.2]
    assert max_pmi_many([], DELTA).empty


def test_delta_as_table_and_series():
    table = pd.DataFrame({"word": list(DELTA), "delta": list(DELTA.values()), "count": 1})
    assert max_pmi("The Cat saw {pronoun1} DOG.", table) == MaxPMI(-0.7, "dog")
    assert max_pmi("The Cat saw {pronoun1} DOG.", pd.Series(DELTA)) == MaxPMI(-0.7, "dog")
    dup = pd.DataFrame({"word": ["cat", "cat"], "delta": [0.1, 0.2], "count": 1})
    with pytest.raises(ValueError, match="duplicated word"):
        max_pmi("{pronoun} cat", dup)


def test_add_max_pmi_fills_columns():
    pairs = pd.DataFrame(
        {"pair_id": ["a", "b"], "template": ["{pronoun} walked the cat.", "{pronoun} is here."]}
    )
    out = add_max_pmi(pairs, DELTA)
    assert out["max_pmi"].iloc[0] == 0.2 and out["max_pmi_word"].iloc[0] == "cat"
    assert math.isnan(out["max_pmi"].iloc[1]) and pd.isna(out["max_pmi_word"].iloc[1])
    assert "max_pmi" not in pairs.columns  # input untouched


def test_released_csv_words_null_and_nan_are_kept(tmp_path):
    # The released table has the words "null" and "nan"; read_delta keeps them (pandas would read NaN).
    csv = tmp_path / "pmi_file_w_counts.csv"
    csv.write_text(",word,pmi_diff,counts,freq\n0,null,-0.6,10,0.1\n1,nan,0.7,5,0.05\n2,cat,0.2,3,0.01\n")
    delta = read_delta(csv)
    assert max_pmi("{pronoun} said null", delta) == MaxPMI(-0.6, "null")
    assert max_pmi("{pronoun} ate nan bread", delta) == MaxPMI(0.7, "nan")
