"""Post-conditions of a generated pair: the male and female sentences are a true minimal pair.

:func:`check_minimal_pair` returns None for a valid pair, else the first broken rule as ``"<rule>: <detail>"``
(``rule`` is one of :data:`RULES`, the key counted in summary.json). The rules, checked in this order:

1. ``no placeholder``: the template has no ``{pronoun}``, ``{pronoun1}`` or ``{pronoun2}`` (or an unknown brace);
2. ``pronoun alternative``: a sentence offers both genders, "his/her", "he/she", "s/he", "(s)he", "him / her" or
   "he or she" (any two pronouns joined by a slash or by "or"): the filled male version would read "his/his";
3. ``not the template's filling``: the sentences are not the template filled with he/his/him and she/her/her;
4. ``mixed pronouns``: the male sentence has she/her/hers/herself, or the female one he/his/him/himself;
5. ``differs beyond pronouns``: the sentences, split into words, spaces and punctuation, differ somewhere other
   than in a he-she, him-her, his-her or himself-herself swap (same position, same capitalisation of the first
   letter), or do not differ at all;
6. ``gendered word``: a word of the gendered-word list (``data/gendered_pairs.csv``, the pronouns left out) is in
   either sentence ("mother", "king", "female").

"hers" has no placeholder (``{pronoun1}`` fills "her"), so a pair with it breaks rule 4 or 5; the pipeline also
checks that a she-sentence is the female filling of its template (see :mod:`.pipeline`).
"""

from __future__ import annotations

import re
from collections.abc import Collection

from unstereo.llm.parse import PRONOUNS
from unstereo.templates import fill_template, has_placeholder, unknown_placeholders
from unstereo.unstereoeval.filters import load_gendered_words

RULES = (
    "no placeholder",
    "pronoun alternative",
    "not the template's filling",
    "mixed pronouns",
    "differs beyond pronouns",
    "gendered word",
)
MALE = frozenset(PRONOUNS["male"])
FEMALE = frozenset(PRONOUNS["female"])
# male form -> the female form a minimal pair may put in its place (lower case)
SWAPS = {"he": "she", "him": "her", "his": "her", "himself": "herself"}

_P = r"(?:he|she|him|her|his|hers|himself|herself|\{pronoun[12]?\}(?:self)?)"
_ALTERNATIVE = re.compile(
    rf"(?<![\w{{}}])(?:s\s*/\s*he|\(s\)he|{_P}\s*/\s*{_P}|{_P}\s+or\s+{_P})(?![\w{{}}])", re.IGNORECASE
)
_PIECES = re.compile(r"\w+|\s+|[^\w\s]")
_WORD = re.compile(r"[a-z]+")


def pieces(sentence: str) -> list[str]:
    """Words, runs of spaces and single punctuation marks: "He's here." -> He, ', s, ' ', here, '.'."""
    return _PIECES.findall(sentence)


def pronoun_alternatives(text: str) -> list[str]:
    """The "his/her", "s/he", "he or she" ... spans of ``text`` (placeholders count as pronouns)."""
    return [m.group(0) for m in _ALTERNATIVE.finditer(text)]


def _words(sentence: str) -> list[str]:
    return _WORD.findall(sentence.lower())


def _differences(male: str, female: str) -> str | None:
    """None when the sentences differ only in pronoun swaps (and at least one); else what differs."""
    m, f = pieces(male), pieces(female)
    if len(m) != len(f):
        return f"{len(m)} vs {len(f)} pieces"
    swaps = 0
    for a, b in zip(m, f, strict=True):
        if a == b:
            continue
        if SWAPS.get(a.lower()) == b.lower() and a[:1].isupper() == b[:1].isupper():
            swaps += 1
            continue
        return f"{a!r} vs {b!r}"
    return None if swaps else "the sentences are equal"


def check_minimal_pair(
    male: str,
    female: str,
    template: str | None = None,
    gendered_words: Collection[str] | None = None,
) -> str | None:
    """None when (``male``, ``female``) is a minimal pair (filled from ``template`` when one is given), else the
    first broken rule as ``"<rule>: <detail>"`` (rules and order in the module doc). ``gendered_words``:
    lower-case words that make a pair gendered (default: the project's list without the pronouns)."""
    if template is not None:
        bad = unknown_placeholders(template)
        if not has_placeholder(template) or bad:
            return f"no placeholder: {template!r}" + (f" has {bad}" if bad else "")
    for text in (male, female) if template is None else (male, female, template):
        alternatives = pronoun_alternatives(text)
        if alternatives:
            return f"pronoun alternative: {alternatives[0]!r}"
    if template is not None:
        for gender, sentence in (("male", male), ("female", female)):
            filled = fill_template(template, gender)
            if sentence != filled:
                return f"not the template's filling: {sentence!r} is not {filled!r}"
    for gender, sentence, other in (("male", male, FEMALE), ("female", female, MALE)):
        found = [w for w in _words(sentence) if w in other]
        if found:
            return f"mixed pronouns: the {gender} sentence has {found[0]!r}"
    diff = _differences(male, female)
    if diff:
        return f"differs beyond pronouns: {diff}"
    if gendered_words is None:
        female_words, male_words = load_gendered_words()
        gendered_words = female_words | male_words
    gendered = set(gendered_words) - MALE - FEMALE
    for sentence in (male, female):
        found = [w for w in _words(sentence) if w in gendered]
        if found:
            return f"gendered word: {found[0]!r}"
    return None


def rule_of(reason: str) -> str:
    """The rule (a key of :data:`RULES`) a reason of :func:`check_minimal_pair` names."""
    rule = reason.split(":", 1)[0]
    if rule not in RULES:
        raise ValueError(f"not a minimal-pair reason: {reason!r}")
    return rule
