"""The placeholder convention and filling (clean default and the reference quirk)."""

from __future__ import annotations

import pytest

from unstereo.templates import fill_template, has_placeholder, templatize_male, unknown_placeholders


def test_fill_female_and_male():
    t = "{pronoun} told {pronoun1} friend that the book was for {pronoun2} and {pronoun2}self."
    assert fill_template(t, "female") == "She told her friend that the book was for her and herself."
    assert fill_template(t, "male") == "He told his friend that the book was for him and himself."


def test_clean_fill_keeps_case_and_quotes():
    t = 'The NASA engineer said "{pronoun} will go".'
    assert fill_template(t, "female") == 'The NASA engineer said "she will go".'


def test_reference_quirks_capitalize_and_drop_quotes():
    # str.capitalize lowercases everything after the first character; quotes are deleted; outer spaces stripped.
    t = '  The NASA engineer said "{pronoun} will go".'
    assert fill_template(t, "female", reference_quirks=True) == "The nasa engineer said she will go."


def test_unknown_gender():
    with pytest.raises(ValueError, match="gender"):
        fill_template("{pronoun}", "other")


def test_templatize_male_round_trip():
    s = "He said his dog loves him, and he trusts himself."
    t = templatize_male(s)
    assert t == "{pronoun} said {pronoun1} dog loves {pronoun2}, and {pronoun} trusts {pronoun2}self."
    assert fill_template(t, "male") == s


def test_templatize_leaves_substrings_alone():
    assert templatize_male("The theme of this hymn is hidden.") == "The theme of this hymn is hidden."


def test_placeholder_checks():
    assert has_placeholder("{pronoun1} cat")
    assert not has_placeholder("a cat")
    assert unknown_placeholders("{pronoun} met {pronoun3} and {name}") == ["{pronoun3}", "{name}"]


def test_pronoun_starting_a_later_sentence_is_capitalised():
    t = 'It was late. {pronoun} left! "{pronoun} is gone," they said of {pronoun2}.'
    assert fill_template(t, "female") == 'It was late. She left! "She is gone," they said of her.'
    assert fill_template(t, "male") == 'It was late. He left! "He is gone," they said of him.'
