"""Quality filters of generated pairs: duplicates, sentence length near k, other gendered words.

- :func:`dedup_key` / :func:`first_occurrences`: two templates are the same pair when their lower-cased words (see
  :func:`unstereo.templates.words`: punctuation and spacing ignored) are equal; only the first one is kept.
- :func:`length_ok`: the optional "about k words" check, ``|words - k| <= tolerance``.
- :func:`gendered_words`: gendered words other than the pronouns (``data/gendered_pairs.csv``) in a template; a
  pair with one is flagged (its counterfactual changes only the pronoun, not "mother" or "king").
"""

from __future__ import annotations

from functools import lru_cache
from pathlib import Path

from unstereo.llm.parse import PRONOUNS
from unstereo.templates import words

# The pronoun families: the placeholders replace them, so they are not "other" gendered words.
PRONOUN_WORDS = frozenset(PRONOUNS["male"] + PRONOUNS["female"])


def dedup_key(template: str) -> str:
    """The words of ``template``, lower-cased and joined by one space."""
    return " ".join(w.lower() for w in words(template))


def first_occurrences(templates: list[str]) -> list[int | None]:
    """For each template, None when it is the first of its key, else the index of that first one."""
    seen: dict[str, int] = {}
    out: list[int | None] = []
    for i, t in enumerate(templates):
        key = dedup_key(t)
        out.append(seen.get(key))
        seen.setdefault(key, i)
    return out


def length_ok(sentence: str, k: int, tolerance: int | None) -> bool:
    """True when ``sentence`` has k +- ``tolerance`` words (always True when ``tolerance`` is None)."""
    return tolerance is None or abs(len(words(sentence)) - k) <= tolerance


@lru_cache(maxsize=8)
def load_gendered_words(path: str | Path | None = None) -> tuple[frozenset[str], frozenset[str]]:
    """(female, male) words of a gendered-pairs CSV (default ``data/gendered_pairs.csv``), pronouns left out."""
    from unstereo.unstereoeval.lexicon import load_pairs

    pairs = load_pairs(path)
    female = frozenset(p.female.lower() for p in pairs) - PRONOUN_WORDS
    male = frozenset(p.male.lower() for p in pairs) - PRONOUN_WORDS
    return female, male


def gendered_words(template: str, path: str | Path | None = None) -> list[str]:
    """The gendered words (female or male, pronouns excluded) among the words of ``template``, in order, once each."""
    female, male = load_gendered_words(path)
    found = [w for w in (x.lower() for x in words(template)) if w in female or w in male]
    return list(dict.fromkeys(found))
