"""Rule-based perturbation p: whole-word replacement of one entity's words by the other's (FairPair,
docs/methods.md#fairpair).

A :class:`RulePerturbation` holds a word map (e.g. ``John -> Jane``, ``he -> she``, ``his -> her``). Matching is on
word boundaries only (``Johnson``, ``Hebrew``, ``this`` are never touched), keeps the case of what it replaces
(``he``/``He``/``HE`` -> ``she``/``She``/``SHE``) and leaves a possessive ending alone (``John's`` -> ``Jane's``,
``John’s`` -> ``Jane’s``, ``James'`` -> ``Janet'``).

Two kinds of entries:

- *names* match only capitalised (``John``) or in capitals (``JOHN``): a name that is also a common word (``Will``,
  ``Rose``, ``Bill``) is never replaced in lower case (``I will``, ``the bill``);
- *words* (pronouns, descriptors such as ``man -> woman``) match in any case.

All replacements happen in one pass, so a map may swap words (``he -> she`` and ``she -> he``) without one
replacement being undone by the next.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field

#: Male -> female pronouns, the paper's direction (John -> Jane). ``his`` is mapped to the determiner ``her`` (the
#: common case: "his job" -> "her job"); "the book is his" -> "the book is her" is a known limit of word rules.
PRONOUNS_MALE_TO_FEMALE: dict[str, str] = {
    "he": "she",
    "him": "her",
    "his": "her",
    "himself": "herself",
}

# Word edges: no word character (letter of any script, digit, underscore) right before or after a key.
_BEFORE = r"(?<!\w)"
_AFTER = r"(?!\w)"


def match_case(source: str, target: str) -> str:
    """``target`` in the case pattern of ``source``: all capitals, capitalised, or as given (lower case source)."""
    if len(source) > 1 and source.isupper():
        return target.upper()
    if source[:1].isupper():
        return target[:1].upper() + target[1:]
    return target


@dataclass(frozen=True)
class RulePerturbation:
    """p as whole-word rules: ``names`` (case-sensitive, capitalised or capitals) and ``words`` (any case).

    ``names`` keys and values are written as they appear in text (``{"John": "Jane"}``); ``words`` in lower case
    (``{"he": "she"}``). A key listed in both is an error.
    """

    names: Mapping[str, str] = field(default_factory=dict)
    words: Mapping[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        names = {str(k): str(v) for k, v in dict(self.names).items()}
        words = {str(k).lower(): str(v) for k, v in dict(self.words).items()}
        for key in list(names) + list(words):
            if not key or not re.fullmatch(r"[\w][\w'\-. ]*", key):
                raise ValueError(f"perturbation key {key!r} is not a word")
        both = {k.lower() for k in names} & set(words)
        if both:
            raise ValueError(f"perturbation keys listed as names and as words: {sorted(both)}")
        object.__setattr__(self, "names", names)
        object.__setattr__(self, "words", words)
        object.__setattr__(self, "_upper_names", {k.upper(): v.upper() for k, v in names.items()})
        # Names match case-sensitively (their spelling or all capitals), words in any case; longest keys first so a
        # multi-word key ("Mary Ann") wins over its first word. One regex: one pass, so swaps are not undone.
        name_keys = sorted({*names, *(k.upper() for k in names)}, key=len, reverse=True)
        word_keys = sorted(words, key=len, reverse=True)
        parts = []
        if name_keys:
            parts.append("(?P<name>" + "|".join(map(re.escape, name_keys)) + ")")
        if word_keys:
            parts.append("(?i:(?P<word>" + "|".join(map(re.escape, word_keys)) + "))")
        pattern = re.compile(_BEFORE + "(?:" + "|".join(parts) + ")" + _AFTER) if parts else None
        object.__setattr__(self, "_pattern", pattern)

    def _replace(self, m: re.Match) -> str:
        found = m.groupdict().get("name")
        if found:
            return self.names.get(found) or self._upper_names[found]
        found = m.group("word")
        return match_case(found, self.words[found.lower()])

    def __call__(self, text: str) -> str:
        """``text`` with every whole-word occurrence of a key replaced."""
        if self._pattern is None or not text:
            return text
        return self._pattern.sub(self._replace, text)

    @classmethod
    def from_pairs(
        cls, names: list[tuple[str, str]] | Mapping[str, str], words: Mapping[str, str] | None = None
    ) -> RulePerturbation:
        """From (original, perturbed) name pairs and a word map."""
        return cls(dict(names), dict(words or {}))


def mentions(text: str, names: list[str] | tuple[str, ...]) -> bool:
    """Whether ``text`` contains one of ``names`` as a whole word (in its spelling or in capitals)."""
    keys = sorted({*names, *(n.upper() for n in names)} - {""}, key=len, reverse=True)
    if not keys:
        return False
    return re.search(_BEFORE + "(?:" + "|".join(map(re.escape, keys)) + ")" + _AFTER, text) is not None
