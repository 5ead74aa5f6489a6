"""Exact term matching in generated sentences, and pairing by swapping the group term (rule).

A term occurs in a sentence when its characters appear there as whole words: not inside a longer word (``he`` is not
in ``the``, ``man`` not in ``woman``, ``art`` not in ``party``), with the term's own punctuation matched literally
(``decision-making``, ``Eur.-American``), any run of spaces between the words of a multi-word term (``bedside
manner``), and a possessive or punctuation allowed right after it (``Emily's``, ``math.``). Case: the term as written,
or with its first letter upper-cased at the start of a sentence; ``case_sensitive=False`` ignores case altogether.
"""

from __future__ import annotations

import re
from functools import lru_cache

# A term starts and ends at a word boundary: no letter or digit right before or after it.
_EDGE_BEFORE = r"(?<![\w])"
_EDGE_AFTER = r"(?![\w])"


@lru_cache(maxsize=4096)
def term_pattern(term: str, case_sensitive: bool = True) -> re.Pattern[str]:
    """The compiled pattern of ``term`` (see the module doc)."""
    words = term.split()
    body = r"\s+".join(re.escape(w) for w in words)
    # Edges only where the term itself begins/ends with a word character ("Eur.-" may end in punctuation).
    before = _EDGE_BEFORE if re.match(r"\w", term) else ""
    after = _EDGE_AFTER if re.search(r"\w$", term) else ""
    if case_sensitive and term[:1].isalpha() and term[:1].islower():
        # sentence-initial capital: "He" for "he", only at the start of the text or of a sentence
        first = re.escape(term[0])
        rest = body[len(first) :] if body.startswith(first) else body[1:]
        cap = r"(?:(?<=^)|(?<=[.!?]\s)|(?<=[.!?]\s\s)|(?<=\"))" + re.escape(term[0].upper()) + rest
        return re.compile(rf"{before}(?:{body}|{cap}){after}")
    return re.compile(rf"{before}{body}{after}", 0 if case_sensitive else re.IGNORECASE)


def find_term(sentence: str, term: str, case_sensitive: bool = True) -> list[tuple[int, int]]:
    """Spans (start, end) of every occurrence of ``term`` in ``sentence``."""
    return [m.span() for m in term_pattern(term, case_sensitive).finditer(sentence)]


def has_term(sentence: str, term: str, case_sensitive: bool = True) -> bool:
    return bool(find_term(sentence, term, case_sensitive))


def other_group_terms(
    sentence: str, terms: tuple[str, ...], keep: str, case_sensitive: bool = True
) -> list[str]:
    """Terms of ``terms`` other than ``keep`` that occur in ``sentence`` outside ``keep``'s own occurrences."""
    own = find_term(sentence, keep, case_sensitive)
    found = []
    for t in terms:
        if t == keep:
            continue
        for s, e in find_term(sentence, t, case_sensitive):
            if not any(a <= s and e <= b for a, b in own):  # "man" inside the term "Hispanic man" is the term
                found.append(t)
                break
    return found


def swap_term(sentence: str, term: str, counterpart: str, case_sensitive: bool = True) -> str | None:
    """``sentence`` with its single occurrence of ``term`` replaced by ``counterpart`` (a sentence-initial capital
    carried over), or None when ``term`` does not occur exactly once (the rule does not apply)."""
    spans = find_term(sentence, term, case_sensitive)
    if len(spans) != 1:
        return None
    s, e = spans[0]
    found = sentence[s:e]
    new = counterpart
    if found[:1].isupper() and term[:1].islower() and counterpart[:1].islower():
        new = counterpart[:1].upper() + counterpart[1:]
    return sentence[:s] + new + sentence[e:]
