"""The gender swap of counterfactual data augmentation (CDA; Webster et al. 2020, bias-bench's CDA): every gendered
word of a sentence replaced by its counterpart, in both directions, with the project's gendered word pairs
(``data/gendered_pairs.csv``, :func:`unstereo.unstereoeval.api.load_pairs`).

Words are matched whole (case-insensitive; a hyphen joins words, as elsewhere in the project: "she-wolf" stays) and
the replacement takes the matched word's case (``She`` -> ``He``, ``HER`` -> ``HIS``). The pairs file lists some
words in two pairs: ``her`` pairs with ``him`` and ``his``, ``his`` with ``her`` and ``hers``. The project's lexicon
leaves that ambiguity to the reader (the generate stage sends a sentence with "her" to the model rather than map it
directly, :mod:`unstereo.unstereoeval.generate.pairing`); a swap must choose, and it chooses by the word's role: a
possessive determiner stands before its noun phrase, so where the next word (after spaces only) is a word that does
not begin a new phrase (:data:`PHRASE_STARTS`: articles, prepositions, conjunctions, pronouns, auxiliaries and a few
adverbs) the counterpart is the determiner (``her book`` -> ``his book``, ``his own`` -> ``her own``), else the other
form (``saw her.`` -> ``saw him.``, ``gave her the key`` -> ``gave him the key``, ``is his, not`` -> ``is hers, not``).
A word in two pairs whose counterparts are not a determiner and another form takes its first pair's.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

#: The possessive determiners among the gendered words (the forms that stand before a noun phrase).
POSSESSIVE_DETERMINERS = frozenset({"her", "his"})
#: Words that begin a new phrase after an object or possessive pronoun ("gave her THE key", "told her THAT"), so
#: that the pronoun before them is not a determiner.
PHRASE_STARTS = frozenset(
    """a an the this that these those some any every each no all both
    to in on at by for with from of about into onto over under after before through during without within against
    among between around near behind beyond upon across along toward towards
    and or but nor so yet because if when while as than then
    i me you he she it we they him her us them my your our their its his hers
    is am are was were be been being has have had do does did will would can could shall should may might must
    not too also again now here there back away up down out off yesterday today tomorrow tonight""".split()
)
_NEXT_WORD = re.compile(r"\s+([A-Za-z]+)")


@dataclass(frozen=True)
class Swapper:
    """The counterparts of each gendered word (lowercase; one, or two for a word in two pairs, first pair first)
    and the pattern that finds them."""

    counterparts: Mapping[str, tuple[str, ...]]
    pattern: re.Pattern


def make_swapper(pairs: Iterable[tuple[str, str]]) -> Swapper:
    """The swapper of (female, male) word pairs, both directions."""
    found: dict[str, list[str]] = {}
    for female, male in pairs:
        for word, other in ((female.lower(), male.lower()), (male.lower(), female.lower())):
            if other not in found.setdefault(word, []):
                found[word].append(other)
    if not found:
        raise ValueError("no gendered word pairs")
    alts = sorted(found, key=len, reverse=True)
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, alts)) + r")(?![\w-])", re.IGNORECASE)
    return Swapper({w: tuple(c) for w, c in found.items()}, pattern)


def pairs_swapper(path: str | None = None) -> Swapper:
    """The swapper of a pairs CSV (columns ``female, male``; default the project's ``data/gendered_pairs.csv``)."""
    from unstereo.unstereoeval.api import load_pairs

    return make_swapper((p.female, p.male) for p in load_pairs(path))


def _case_like(word: str, like: str) -> str:
    if like.isupper() and len(like) > 1:
        return word.upper()
    return word.capitalize() if like[:1].isupper() else word


def counterpart(sw: Swapper, word: str, next_word: str | None) -> str:
    """The counterpart of the gendered ``word`` (any case; returned in its case) before ``next_word`` (None: no word
    follows, or punctuation does)."""
    candidates = sw.counterparts[word.lower()]
    choice = candidates[0]
    if len(candidates) > 1:
        det = [c for c in candidates if c in POSSESSIVE_DETERMINERS]
        other = [c for c in candidates if c not in POSSESSIVE_DETERMINERS]
        if det and other:
            before_noun = next_word is not None and next_word.lower() not in PHRASE_STARTS
            choice = det[0] if before_noun else other[0]
    return _case_like(choice, word)


def gendered_spans(sentence: str, sw: Swapper) -> list[tuple[int, int, str]]:
    """(start, end, counterpart) of every gendered word of ``sentence``, in order."""
    out = []
    for m in sw.pattern.finditer(sentence):
        nxt = _NEXT_WORD.match(sentence, m.end())
        out.append((m.start(), m.end(), counterpart(sw, m.group(0), nxt.group(1) if nxt else None)))
    return out


def swap(sentence: str, sw: Swapper) -> str:
    """``sentence`` with every gendered word replaced by its counterpart (unchanged without one)."""
    parts, last = [], 0
    for start, end, word in gendered_spans(sentence, sw):
        parts += [sentence[last:start], word]
        last = end
    return "".join(parts) + sentence[last:]


def augment(sentences: Sequence[str], sw: Swapper, share: float, seed: int) -> tuple[list[str], list[bool]]:
    """(the sentences, with ``share * n`` (rounded half up) of the n that hold a gendered word swapped; which were
    swapped).

    The swapped ones are the first of those n in a shuffle by ``seed``, so at one seed a smaller share swaps a subset
    of a larger one's sentences; the other sentences stay as they are (share 0: the text unchanged)."""
    if not 0 <= share <= 1:
        raise ValueError(f"share {share} is not in [0, 1]")
    gendered = [i for i, s in enumerate(sentences) if sw.pattern.search(s)]
    random.Random(seed).shuffle(gendered)
    chosen = set(gendered[: int(share * len(gendered) + 0.5)])
    return [swap(s, sw) if i in chosen else s for i, s in enumerate(sentences)], [
        i in chosen for i in range(len(sentences))
    ]
