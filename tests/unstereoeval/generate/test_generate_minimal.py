"""Post-conditions of generated pairs (unstereo.unstereoeval.generate.minimal): hand-made cases and a seeded property test."""

from __future__ import annotations

import random

import pytest

from unstereo.templates import fill_template
from unstereo.unstereoeval.filters import load_gendered_words
from unstereo.unstereoeval.generate.minimal import (
    RULES,
    check_minimal_pair,
    pieces,
    pronoun_alternatives,
    rule_of,
)

GENDERED = frozenset().union(*load_gendered_words())


def rule(male, female, template=None):
    why = check_minimal_pair(male, female, template)
    return None if why is None else rule_of(why)


# ------------------------------------------------------------------------------------------------ hand-made
def test_valid_pairs():
    assert check_minimal_pair("He ate an apple.", "She ate an apple.") is None
    t = "{pronoun} gave {pronoun2} {pronoun1} book {pronoun2}self."
    assert fill_template(t, "male") == "He gave him his book himself."
    assert check_minimal_pair("He gave him his book himself.", "She gave her her book herself.", t) is None
    assert check_minimal_pair("He's late.", "She's late.", "{pronoun}'s late.") is None


def test_the_issue_examples():
    # the generator wrote "his/her": the template kept "her", the male sentence reads "his/her"
    t = "The cat answered {pronoun1}/her answer."
    why = check_minimal_pair(fill_template(t, "male"), fill_template(t, "female"), t)
    assert why == "pronoun alternative: 'his/her'"
    # a gendered word, kept before this check
    t = "The bald female was walking down the street. {pronoun} had long brown hair."
    assert (
        check_minimal_pair(fill_template(t, "male"), fill_template(t, "female"), t)
        == "gendered word: 'female'"
    )


@pytest.mark.parametrize(
    ("male", "female", "template", "expected"),
    [
        ("It rained.", "It rained.", "It rained.", "no placeholder"),
        ("He ran.", "She ran.", "{pronoun} ran {name}.", "no placeholder"),
        ("He or she ran.", "She or she ran.", None, "pronoun alternative"),
        ("S/he ran.", "S/he ran.", None, "pronoun alternative"),
        ("(s)he ran.", "(s)he ran.", None, "pronoun alternative"),
        ("He ran to him / her.", "She ran to her / her.", None, "pronoun alternative"),
        ("He ran.", "She ran.", "{pronoun} walked.", "not the template's filling"),
        ("He saw her.", "She saw her.", None, "mixed pronouns"),  # "her" in the male sentence
        ("He saw him.", "She saw him.", None, "mixed pronouns"),  # "him" in the female sentence
        ("He said it was hers.", "She said it was hers.", None, "mixed pronouns"),
        ("He ran.", "She walked.", None, "differs beyond pronouns"),
        ("He ran.", "She  ran.", None, "differs beyond pronouns"),  # two spaces
        ("He ran.", "she ran.", None, "differs beyond pronouns"),  # capitalisation changed
        ("His dog ran.", "She dog ran.", None, "differs beyond pronouns"),  # his-she is no swap
        ("It ran.", "It ran.", None, "differs beyond pronouns"),  # no pronoun differs
        ("He met the king.", "She met the king.", None, "gendered word"),
        ("He met two girls.", "She met two girls.", None, "gendered word"),
    ],
)
def test_each_rule(male, female, template, expected):
    assert rule(male, female, template) == expected


def test_pieces_and_alternatives():
    assert pieces("He's here.") == ["He", "'", "s", " ", "here", "."]
    assert pronoun_alternatives("{pronoun1}/her and he or she, not Shelby/Hershey") == [
        "{pronoun1}/her",
        "he or she",
    ]
    assert pronoun_alternatives("the/a tree, either he or it") == []
    with pytest.raises(ValueError, match="not a minimal-pair reason"):
        rule_of("semantic filter: male unlikely")


def test_gendered_list_is_the_project_list():
    assert {"female", "mother", "king", "girls"} <= GENDERED and not GENDERED & {"he", "her", "his"}
    # a caller's own list replaces it
    assert check_minimal_pair("He met the king.", "She met the king.", gendered_words={"apple"}) is None
    assert rule_of(check_minimal_pair("He ate an apple.", "She ate an apple.", gendered_words={"apple"})) == (
        "gendered word"
    )


# ------------------------------------------------------------------------------------------------ property test
NEUTRAL = ["the", "dog", "ran", "quickly", "to", "a", "park", "bright", "answered", "booth", "it", "home", "was",
           "late", "bolted", "door", "and", "then", "smiled", "sun"]  # fmt: skip
PLACEHOLDERS = ["{pronoun}", "{pronoun1}", "{pronoun2}", "{pronoun2}self"]


def random_template(rng: random.Random) -> str:
    """3-9 words, at least one placeholder, optional comma and final punctuation."""
    n = rng.randint(3, 9)
    toks = [rng.choice(NEUTRAL) for _ in range(n)]
    for _ in range(rng.randint(1, 3)):
        toks[rng.randrange(n)] = rng.choice(PLACEHOLDERS)
    if rng.random() < 0.3:
        i = rng.randrange(n - 1)
        toks[i] += ","
    text = " ".join(toks) + rng.choice([".", "!", "?", ""])
    return text[0].upper() + text[1:] if text[0] != "{" else text


def corrupt(rng: random.Random, template: str) -> tuple[str, str, str | None, str]:
    """A broken (male, female, template) and the rule it must break."""
    male, female = fill_template(template, "male"), fill_template(template, "female")
    kind = rng.choice(["alternative", "mixed", "word", "gendered", "placeholder", "filling"])
    if kind == "alternative":
        alt = rng.choice(["his/her", "he/she", "s/he", "him / her", "he or she", "his or her", "(s)he"])
        t = f"{template} {alt} ran."
        return fill_template(t, "male"), fill_template(t, "female"), t, "pronoun alternative"
    if kind == "mixed":
        other = rng.choice(["her", "she", "hers", "herself"])
        t = f"{template} {other} ran."  # a female pronoun left in the template: in the male sentence too
        return fill_template(t, "male"), fill_template(t, "female"), t, "mixed pronouns"
    if kind == "word":  # the female sentence changed beyond the pronouns (checked without a template)
        new = female.replace(" ", " x ", 1) if " " in female else female + " x"
        return male, new, None, "differs beyond pronouns"
    if kind == "gendered":
        w = rng.choice(sorted(GENDERED))
        t = f"{template} the {w} ran."
        return fill_template(t, "male"), fill_template(t, "female"), t, "gendered word"
    if kind == "placeholder":
        t = " ".join(rng.choice(NEUTRAL) for _ in range(5)) + "."
        return t, t, t, "no placeholder"
    return (
        male,
        female.replace(" ", "  ", 1) if " " in female else female + " x",
        template,
        ("not the template's filling"),
    )


def test_property_valid_templates_pass_and_corruptions_fail():
    rng = random.Random(34)
    seen = set()
    for _ in range(2000):
        t = random_template(rng)
        male, female = fill_template(t, "male"), fill_template(t, "female")
        assert check_minimal_pair(male, female, t) is None, t
        assert check_minimal_pair(male, female) is None, t
        # swapped roles: the "male" sentence has female pronouns
        assert rule(female, male) == "mixed pronouns", t
        m, f, tt, expected = corrupt(rng, t)
        assert rule(m, f, tt) == expected, (t, m, f, tt)
        seen.add(expected)
    assert seen == set(RULES)  # every rule was exercised
