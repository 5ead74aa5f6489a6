"""The placeholder convention for gender templates, in one place.

A template is a sentence whose gendered pronouns are replaced by placeholders (as in the UnStereoEval release,
``benchmark-creation-configs/placeholders.json``):

| placeholder       | male    | female  | replaces (case-insensitive, whole word) |
|-------------------|---------|---------|-----------------------------------------|
| ``{pronoun}``     | he      | she     | he                                      |
| ``{pronoun1}``    | his     | her     | his                                     |
| ``{pronoun2}``    | him     | her     | him                                     |
| ``{pronoun2}self``| himself | herself | himself                                 |

``{pronoun2}self`` needs no filling of its own: ``{pronoun2}`` is replaced and ``self`` stays.

Filling (:func:`fill_template`): by default (``reference_quirks=False``) the placeholders are replaced and a pronoun
that starts the text or a sentence (after ``.``, ``!`` or ``?``) is capitalised; nothing else changes. With
``reference_quirks=True`` the reference code's ``.strip().capitalize()`` is applied and double quotes are deleted
(docs/methods.md#quirk-1-capitalize): everything after the first character is lower-cased. The released scores
were computed on those strings.
"""

from __future__ import annotations

import re

GENDERS = ("female", "male")

PLACEHOLDERS = ("{pronoun}", "{pronoun1}", "{pronoun2}")

FILLINGS: dict[str, dict[str, str]] = {
    "male": {"{pronoun}": "he", "{pronoun1}": "his", "{pronoun2}": "him"},
    "female": {"{pronoun}": "she", "{pronoun1}": "her", "{pronoun2}": "her"},
}

# Male pronoun -> placeholder; order matters: "himself" before "him".
MALE_TO_PLACEHOLDER: tuple[tuple[re.Pattern[str], str], ...] = (
    (re.compile(r"\b[Hh]imself\b"), "{pronoun2}self"),
    (re.compile(r"\b[Hh]e\b"), "{pronoun}"),
    (re.compile(r"\b[Hh]is\b"), "{pronoun1}"),
    (re.compile(r"\b[Hh]im\b"), "{pronoun2}"),
)

_ANY_BRACE = re.compile(r"\{[^{}]*\}")
_PLACEHOLDER_RE = re.compile(r"\{pronoun[12]?\}")
# The text before a sentence-initial placeholder: nothing, or anything ending in . ! ? then spaces / opening quotes.
_SENTENCE_START = re.compile(r"(|.*[.!?][\"')\]]*)\s*[\"'(\[]*", re.DOTALL)


# Characters stripped from both ends of a whitespace token by :func:`words` (braces are kept: placeholders are words).
_PUNCT = "".join(c for c in "!\"#$%&'()*+,-./:;<=>?@[\\]^_`|~“”‘’–—…" if c not in "{}")


def words(text: str) -> list[str]:
    """Whitespace tokens of ``text`` with punctuation removed from their ends; tokens that were only punctuation are
    dropped. "He said: 'no' -- twice." -> He, said, no, twice. A placeholder (``{pronoun2}self``) is one word.
    This is the paper's word count (Table 7: "whitespace tokenization and removing punctuation")."""
    return [w for w in (t.strip(_PUNCT) for t in text.split()) if w]


def is_placeholder_word(word: str) -> bool:
    """True when a word of :func:`words` is (or contains) a pronoun placeholder."""
    return bool(_PLACEHOLDER_RE.search(word))


def unknown_placeholders(template: str) -> list[str]:
    """Brace expressions in ``template`` that are not one of :data:`PLACEHOLDERS`."""
    return [m for m in _ANY_BRACE.findall(template) if m not in PLACEHOLDERS]


def has_placeholder(template: str) -> bool:
    """True when ``template`` contains at least one known placeholder."""
    return bool(_PLACEHOLDER_RE.search(template))


def fill_template(template: str, gender: str, reference_quirks: bool = False) -> str:
    """Fill ``template`` with the pronouns of ``gender`` ("female" or "male"); see the module doc."""
    if gender not in FILLINGS:
        raise ValueError(f"gender must be one of {GENDERS}, got {gender!r}")
    fill = FILLINGS[gender]
    if reference_quirks:
        # Reference code: fill_template(...).strip().capitalize() and '"' removed.
        text = _PLACEHOLDER_RE.sub(lambda m: fill[m.group(0)], template)
        return text.replace('"', "").strip().capitalize()

    def substitute(m: re.Match[str]) -> str:
        word = fill[m.group(0)]
        # A pronoun that starts the text or a sentence (after . ! ? and spaces, maybe a quote) is capitalised.
        return word.capitalize() if _SENTENCE_START.fullmatch(template[: m.start()]) else word

    return _PLACEHOLDER_RE.sub(substitute, template)


def templatize_male(sentence: str) -> str:
    """Turn a male sentence into a template by replacing he/his/him/himself with placeholders."""
    for pattern, placeholder in MALE_TO_PLACEHOLDER:
        sentence = pattern.sub(placeholder, sentence)
    return sentence
