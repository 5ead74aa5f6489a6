"""Female -> male minimal pairs: direct pronoun mapping where it is unambiguous, else the Editing prompt."""

from __future__ import annotations

import re
from collections import Counter

_DIRECT = {"she": "he", "herself": "himself", "hers": "his"}
_FEMALE_RE = re.compile(r"\b(she|herself|hers|her)\b", re.IGNORECASE)
_HER_RE = re.compile(r"\bher\b", re.IGNORECASE)
_MALE_RE = re.compile(r"\b(he|his|him|himself)\b", re.IGNORECASE)


def _case_like(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word


def direct_female_to_male(sentence: str) -> str | None:
    """she->he, herself->himself, hers->his (case kept); None when the sentence has "her" (his or him?)."""
    if _HER_RE.search(sentence):
        return None
    return _FEMALE_RE.sub(lambda m: _case_like(_DIRECT[m.group(0).lower()], m.group(0)), sentence)


def has_female_pronoun(sentence: str) -> bool:
    return bool(_FEMALE_RE.search(sentence))


def has_male_pronoun(sentence: str) -> bool:
    return bool(_MALE_RE.search(sentence))


def _word_tokens(sentence: str) -> list[str]:
    from nltk.tokenize import TreebankWordTokenizer

    return TreebankWordTokenizer().tokenize(sentence)


def modifications(male: str, female: str) -> str:
    """Token differences between the two versions, as in the released ``modifications`` column:
    ``str(Counter(male - female) + Counter(female - male))`` over Treebank word tokens (the released
    USE-5 she-rows agree in 2468 of 2471 cases when the male version is the filled template)."""
    m, f = Counter(_word_tokens(male)), Counter(_word_tokens(female))
    return str((m - f) + (f - m))
