"""Counterfactual debiasing (Huang et al. 2020, section 4): its training data, and a quality measure (section 5.3).

Training data: sentences of a corpus that hold a sensitive token (an attribute value of the templates: a country, an
occupation noun, a name; whole word). For such a sentence x with the token ending at position i, the counterfactual
prefix x~_{1:i} swaps the token for another value of the attribute from another subgroup (another country or
occupation, a name of the other gender). The fine-tune itself (embedding or sentiment regularisation, resumable) is
:mod:`unstereo.finetune.regularised`, shared with the model variants; the corpus is read by
:mod:`unstereo.finetune.text`.

Quality (paper Table 1, Figure 6): perplexity on held-out sentences (PPL: sentences of the corpus; PPL_s: held-out
sentences with a sensitive token), :func:`unstereo.finetune.perplexity.perplexity`; semantic similarity S.S. = share
of continuations whose sentence embedding has cosine similarity > threshold with the prefix's, and S.S._c = share of
continuations that mention a value of the attribute (:func:`mentions`).
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.finetune.regularised import CounterfactualExample

_ARTICLE = re.compile(r"^(a|an)\s+", re.I)


# ---- sensitive tokens and the corpus -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """A sensitive token: its text, attribute and subgroup (names: female/male; else the value itself)."""

    text: str
    attribute: str
    subgroup: str


def sensitive_terms(values: pd.DataFrame, attributes: Sequence[str]) -> list[Term]:
    """The sensitive tokens of the values table (occupations without their article)."""
    out = []
    for row in values.itertuples(index=False):
        if row.attribute in attributes:
            text = _ARTICLE.sub("", row.value)
            out.append(Term(text, row.attribute, row.subgroup or text))
    return out


def find_term(sentence: str, pattern: re.Pattern, by_text: dict[str, Term]) -> tuple[Term, int, int] | None:
    """The first sensitive token of the sentence (whole word): (term, start, end) or None."""
    m = pattern.search(sentence)
    return None if m is None else (by_text[m.group(0)], m.start(), m.end())


def term_pattern(terms: Sequence[Term]) -> re.Pattern:
    """One regex for every term as a whole word (longest first, case-sensitive: names and countries are capitalised,
    occupation nouns are matched as written in the values)."""
    alts = sorted({t.text for t in terms}, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, alts)) + r")(?![\w-])")


@dataclass(frozen=True)
class Example(CounterfactualExample):
    """A training sentence with its sensitive token at ``[start, end)``, the counterfactual token ``swap`` and the
    sensitive token's ``term``."""

    term: Term | None = None


def counterfactual(term: Term, terms: Sequence[Term], rng: random.Random) -> str:
    """Another value of the term's attribute from another subgroup."""
    pool = [t.text for t in terms if t.attribute == term.attribute and t.subgroup != term.subgroup]
    return rng.choice(pool)


def build_examples(
    sentences: Sequence[str], terms: Sequence[Term], max_sentences: int, heldout_fraction: float, seed: int
) -> tuple[list[Example], list[str], list[str]]:
    """(training examples, held-out sensitive sentences, held-out general sentences), shuffled by ``seed``.

    Sentences with a sensitive token are shuffled, the first ``max_sentences`` kept, and ``heldout_fraction`` of
    them held out (PPL_s); as many sentences without the restriction are held out for PPL (none of them trained on).
    """
    rng = random.Random(seed)
    pattern = term_pattern(terms)
    by_text = {t.text: t for t in terms}
    found = []
    for s in sentences:
        hit = find_term(s, pattern, by_text)
        if hit:
            found.append((s, *hit))
    rng.shuffle(found)
    found = found[:max_sentences]
    if len(found) < 2:
        raise InputError(f"the corpus has {len(found)} sentence(s) with a sensitive token; need at least 2")
    n_held = max(1, int(round(len(found) * heldout_fraction)))
    held, train = found[:n_held], found[n_held:]
    examples = [Example(s, a, b, counterfactual(t, terms, rng), term=t) for s, t, a, b in train]
    trained = {s for s, *_ in train}
    general = [s for s in sentences if s not in trained]
    rng.shuffle(general)
    return examples, [s for s, *_ in held], general[:n_held]


# ---- quality ----------------------------------------------------------------------------------------------------


def mentions(continuations: Sequence[str], terms: Sequence[str]) -> np.ndarray:
    """Whether each continuation mentions one of ``terms`` (whole word, case-insensitive): S.S._c's numerator."""
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, terms)) + r")(?![\w-])", re.I)
    return np.array([bool(pattern.search(c)) for c in continuations])
