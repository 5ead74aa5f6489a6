"""The CDA gender swap on sentences whose swapped form was worked out by hand: both directions, her -> his/him and
his -> her/hers by the word's role, case, word boundaries; the strength's meaning (the share of gendered sentences
swapped)."""

from __future__ import annotations

import pytest

from unstereo.variants.swap import augment, gendered_spans, make_swapper, pairs_swapper, swap


@pytest.fixture(scope="module")
def sw():
    return pairs_swapper()  # data/gendered_pairs.csv


@pytest.mark.parametrize(
    "sentence, swapped",
    [
        # both directions in one sentence
        ("She told her brother that he was late.", "He told his sister that she was late."),
        ("The king and the queen met their sons.", "The queen and the king met their daughters."),
        # her: a determiner before its noun phrase (his), else an object (him)
        ("I saw her.", "I saw him."),
        ("I gave her the key.", "I gave him the key."),
        ("We told her that it rained.", "We told him that it rained."),
        ("Her own car is old.", "His own car is old."),
        ("Her, of all people!", "Him, of all people!"),
        ("He loves her dog and her.", "She loves his dog and him."),
        # his: a determiner (her) before a noun, else the pronoun (hers)
        ("His book is on the table.", "Her book is on the table."),
        ("The book is his.", "The book is hers."),
        ("It is his, not mine.", "It is hers, not mine."),
        ("Hers is red and his is blue.", "His is red and hers is blue."),
        # case kept; himself/herself; plural
        ("HE SAID SHE WON.", "SHE SAID HE WON."),
        ("The women asked the men themselves.", "The men asked the women themselves."),
        ("He hurt himself.", "She hurt herself."),
        # word boundaries: no swap inside a word, a hyphen joins words, an apostrophe does not
        ("The theme of the shepherd's manual: heroes.", "The theme of the shepherd's manual: heroes."),
        ("A she-wolf and a female fox.", "A she-wolf and a male fox."),
        ("He's the man's friend.", "She's the woman's friend."),
        ("Nobody was there.", "Nobody was there."),
    ],
)
def test_swap_by_hand(sw, sentence, swapped):
    assert swap(sentence, sw) == swapped


def test_swapping_twice_is_the_identity_where_no_word_is_ambiguous(sw):
    s = "She told her brother that he was late."
    assert swap(swap(s, sw), sw) == s
    # "her" -> "him" -> "her": an object stays an object; "his" -> "her" -> "his" before a noun
    assert swap(swap("I saw her and his dog.", sw), sw) == "I saw her and his dog."


def test_spans_and_the_first_pair_wins_without_a_determiner():
    sw = make_swapper([("mum", "dad"), ("mum", "father")])
    assert sw.counterparts["mum"] == ("dad", "father") and sw.counterparts["dad"] == ("mum",)
    assert (
        swap("Mum and dad.", sw) == "Dad and mum."
    )  # no determiner among mum's counterparts: the first pair's
    assert gendered_spans("My dad, my mum", sw) == [(3, 6, "mum"), (11, 14, "dad")]


def test_share_is_the_share_of_gendered_sentences_swapped(sw):
    sentences = [f"She ran {i} miles." for i in range(8)] + ["It rained.", "Nobody came."]
    for share, k in ((0.0, 0), (0.25, 2), (0.5, 4), (0.3, 2), (1.0, 8)):
        out, flags = augment(sentences, sw, share, seed=1)
        assert sum(flags) == k and not any(flags[8:])  # sentences without a gendered word are never counted
        assert [o != s for o, s in zip(out, sentences, strict=True)] == flags
        assert all(o.startswith("He ran") for o, f in zip(out, flags, strict=True) if f)
    # at one seed, a smaller share swaps a subset of a larger share's sentences; another seed picks others
    a, b = augment(sentences, sw, 0.25, 1)[1], augment(sentences, sw, 0.5, 1)[1]
    assert all(y for x, y in zip(a, b, strict=True) if x)
    assert augment(sentences, sw, 0.5, 2)[1] != b
    with pytest.raises(ValueError, match="not in"):
        augment(sentences, sw, 1.5, 1)
