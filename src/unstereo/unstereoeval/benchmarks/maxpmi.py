"""MaxPMI of a template (docs/methods.md#maxpmi-and-eta): the signed delta of the template word with the
largest |delta|.

Steps, on the TEMPLATE (not a filled sentence):

1. lowercase;
2. delete ``{pronoun2}self``, then the placeholders ``{pronoun}``, ``{pronoun1}``, ``{pronoun2}``
   (the convention of :mod:`unstereo.templates`);
3. tokenize with spaCy's English tokenizer (``spacy.blank("en")``);
4. keep a token when it is one of the literal pronouns she/her/hers/he/his/him/himself/herself, or when it is
   neither a spaCy stop word nor punctuation (whitespace tokens are dropped);
5. look each kept token up in the delta table (words whose delta is NaN count as absent);
6. MaxPMI = the signed delta of largest |delta|, with the word that gives it; undefined (NaN, word None) when no
   token has a delta.

Ties (two tokens with the same |delta|, e.g. +0.5 and -0.5, or two words with equal delta): the FIRST in token
order wins, as ``np.argmax`` does in the reference notebook. The released data cannot tell rules apart: none of its
15,810 templates has such a tie between different words (checked in the golden test).

:func:`max_pmi_many` is the vectorised form: each distinct template is tokenized once, tokens are looked up through
one dict, and the per-template maximum is a pandas group-by over the long (template, position, word) table.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import NamedTuple

import numpy as np
import pandas as pd

from unstereo.templates import MALE_TO_PLACEHOLDER, PLACEHOLDERS, unknown_placeholders

# Literal pronouns kept although spaCy lists them as stop words (docs/methods.md#maxpmi-and-eta; Razeghi et
# al. 2022).
KEPT_PRONOUNS = frozenset({"she", "her", "hers", "he", "his", "him", "himself", "herself"})

# Placeholder forms that carry a suffix (``{pronoun2}self``); deleted whole, before the bare placeholders.
_SUFFIXED = tuple(p for _, p in MALE_TO_PLACEHOLDER if p not in PLACEHOLDERS)
_PLACEHOLDER_RE = re.compile("|".join(re.escape(p) for p in PLACEHOLDERS))


class MaxPMI(NamedTuple):
    """MaxPMI of one template: ``value`` (NaN when undefined) and the ``word`` that gives it (None when undefined)."""

    value: float
    word: str | None


@cache
def _tokenizer():
    import spacy

    return spacy.blank("en").tokenizer


def strip_placeholders(template: str) -> str:
    """Steps 1-2: lowercase, delete ``{pronoun2}self``, then the placeholders."""
    text = template.lower()
    for suffixed in _SUFFIXED:
        text = text.replace(suffixed, "")
    return _PLACEHOLDER_RE.sub("", text)


# Keep/drop decision per token text: it depends on the text only (spaCy's lexical attributes), so it is cached.
_KEEP: dict[str, bool] = {}


def _kept(doc) -> list[str]:
    out = []
    for token in doc:
        text = token.text
        keep = _KEEP.get(text)
        if keep is None:
            keep = _KEEP[text] = bool(
                (text in KEPT_PRONOUNS or not (token.is_stop or token.is_punct)) and text.strip()
            )
        if keep:
            out.append(text)
    return out


def template_words(template: str) -> list[str]:
    """Steps 1-4: the words of ``template`` that are looked up in the delta table, in order."""
    return _kept(_tokenizer()(strip_placeholders(template)))


def _check_templates(templates: Iterable[str]) -> None:
    for t in templates:
        if not isinstance(t, str):
            raise ValueError(f"template must be a string, got {t!r}")
        unknown = unknown_placeholders(t)
        if unknown:
            raise ValueError(f"template has unknown placeholder(s) {unknown}: {t!r}")


def delta_lookup(delta: pd.DataFrame | pd.Series | Mapping[str, float]) -> dict[str, float]:
    """A ``{word: delta}`` dict from a DELTA table (``word``, ``delta`` columns), a Series or a mapping.

    Words with a NaN delta are left out (no delta = not looked up).
    """
    if isinstance(delta, pd.DataFrame):
        missing = {"word", "delta"} - set(delta.columns)
        if missing:
            raise ValueError(f"delta table lacks column(s) {sorted(missing)}")
        if delta["word"].duplicated().any():
            dup = delta.loc[delta["word"].duplicated(), "word"].iloc[0]
            raise ValueError(f"delta table has duplicated word {dup!r}")
        pairs = zip(delta["word"].astype(str), delta["delta"].astype(float), strict=True)
    elif isinstance(delta, pd.Series):
        pairs = zip(delta.index.astype(str), delta.astype(float), strict=True)
    else:
        pairs = ((str(w), float(d)) for w, d in delta.items())
    return {w: d for w, d in pairs if not math.isnan(d)}


def max_pmi(template: str, delta: pd.DataFrame | pd.Series | Mapping[str, float]) -> MaxPMI:
    """MaxPMI of one template (see the module doc). For many templates use :func:`max_pmi_many`."""
    row = max_pmi_many([template], delta).iloc[0]
    return MaxPMI(float(row["max_pmi"]), row["max_pmi_word"])


def max_pmi_many(
    templates: Sequence[str], delta: pd.DataFrame | pd.Series | Mapping[str, float] | dict[str, float]
) -> pd.DataFrame:
    """MaxPMI of every template: a DataFrame with ``max_pmi`` (float, NaN = undefined) and ``max_pmi_word``
    (str or None), one row per template in input order (RangeIndex)."""
    templates = list(templates)
    _check_templates(templates)
    lookup = delta if isinstance(delta, dict) else delta_lookup(delta)
    distinct = list(dict.fromkeys(templates))
    docs = _tokenizer().pipe(strip_placeholders(t) for t in distinct)
    # Long table of the words that have a delta: (distinct template, position, word, delta).
    tpl, pos, words, values = [], [], [], []
    for i, doc in enumerate(docs):
        for j, word in enumerate(_kept(doc)):
            d = lookup.get(word)
            if d is not None:
                tpl.append(i)
                pos.append(j)
                words.append(word)
                values.append(d)
    value = np.full(len(distinct), np.nan)
    word = np.full(len(distinct), None, dtype=object)
    if values:
        long = pd.DataFrame({"tpl": tpl, "word": words, "delta": values})
        long["abs"] = long["delta"].abs()
        # idxmax returns the first maximum in index order, i.e. the first in token order (the tie rule).
        best = long.loc[long.groupby("tpl", sort=False)["abs"].idxmax()]
        value[best["tpl"].to_numpy()] = best["delta"].to_numpy()
        word[best["tpl"].to_numpy()] = best["word"].to_numpy()
    position = {t: i for i, t in enumerate(distinct)}
    at = np.fromiter((position[t] for t in templates), dtype=np.int64, count=len(templates))
    out = pd.DataFrame({"max_pmi": value[at], "max_pmi_word": word[at]})
    out["max_pmi"] = out["max_pmi"].astype(float)
    return out


def add_max_pmi(pairs: pd.DataFrame, delta: pd.DataFrame | pd.Series | Mapping[str, float]) -> pd.DataFrame:
    """A copy of a PAIRS table with ``max_pmi`` and ``max_pmi_word`` (re)computed from ``delta``."""
    out = pairs.copy()
    result = max_pmi_many(out["template"].tolist(), delta)
    out["max_pmi"] = result["max_pmi"].to_numpy()
    out["max_pmi_word"] = result["max_pmi_word"].to_numpy()
    return out
