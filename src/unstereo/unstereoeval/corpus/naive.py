"""The counts' definitions and the reference counter (plain Python) every fast path is held to.

Definitions (both counters):

- tokens of a document: :func:`~unstereo.unstereoeval.corpus.tokenize.tokenize`, then stop words removed except target words;
  positions are counted after removal;
- ``c(w)``: occurrences of w; ``N_uni``: number of tokens;
- ``c(w, g)`` for a target g: the number of ORDERED position pairs (i, j) in one document with i != j,
  |i - j| < window, token g at i and token w at j; i.e. for every occurrence of g, the tokens in its window.
  Consequences: a pair of positions holding two different targets g, h counts once in c(h, g) and once in
  c(g, h) (c is symmetric on targets); two occurrences of the SAME target g within the window count 2 in c(g, g)
  (once from each end). ``N_pairs`` counts ordered pairs the same way: sum over documents of
  sum_{d=1}^{window-1} 2 * max(n - d, 0). Delta does not depend on these constant factors.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from unstereo.unstereoeval.corpus import tokenize as tk


def pairs_in_document(n: np.ndarray | int, window: int) -> np.ndarray | int:
    """Ordered co-occurring position pairs in a document of ``n`` tokens: sum_{d=1}^{window-1} 2*max(n-d, 0)."""
    n = np.asarray(n, dtype=np.int64)
    w1 = window - 1
    full = 2 * (w1 * n - w1 * (w1 + 1) // 2)  # n >= window - 1: every offset d = 1..w1 fits n - d times
    short = n * (n - 1)  # n < window: all ordered pairs
    out = np.where(n > w1, full, short)
    return out if out.ndim else int(out)


@dataclass
class Counts:
    """Counts of a corpus (or a part): tables with words as strings plus the totals."""

    unigrams: pd.DataFrame  # word, count
    cooccurrence: pd.DataFrame  # word, target, count
    n_tokens: int
    n_pairs: int
    meta: dict = field(default_factory=dict)


def _arrow_tables(words, uni, co_word, targets: list[str], co_target, co_count):
    """Count tables (arrow) from sorted ``words`` (a list or an arrow array) and ``targets`` and index columns
    already in (word, target) order, zero rows dropped. Strings are gathered with arrow's ``take`` on the distinct
    strings: no Python string per row."""
    import pyarrow as pa

    w, t = pa.array(words, type=pa.string()), pa.array(targets, type=pa.string())
    uni, co_count = np.asarray(uni, np.int64), np.asarray(co_count, np.int64)
    co_word, co_target = np.asarray(co_word, np.int64), np.asarray(co_target, np.int64)
    nz = np.flatnonzero(uni > 0)
    unigrams = pa.table({"word": w.take(pa.array(nz)), "count": pa.array(uni[nz])})
    if not co_count.all():  # (the fast counter has no zero rows: no copies of its millions of rows then)
        cz = np.flatnonzero(co_count)
        co_word, co_target, co_count = co_word[cz], co_target[cz], co_count[cz]
    cooc = pa.table(
        {
            "word": w.take(pa.array(co_word)),
            "target": t.take(pa.array(co_target)),
            "count": pa.array(co_count),
        }
    )
    return unigrams, cooc


def _as_tables(words, uni, co_word, targets: list[str], co_target, co_count):
    """:func:`_arrow_tables` as pandas DataFrames (~10x faster than pandas' own object-to-string conversion)."""
    unigrams, cooc = _arrow_tables(words, uni, co_word, targets, co_target, co_count)
    return unigrams.to_pandas(), cooc.to_pandas()


# ----------------------------------------------------------------------------------------------------- naive


def count_naive(
    texts: Iterable[str], targets: Iterable[str], stopwords: Iterable[str], window: int = 10
) -> Counts:
    """The reference counter: per document, for each target occurrence, loop over its window."""
    targets = set(targets)
    stop = set(stopwords) - targets
    uni: Counter = Counter()
    co: Counter = Counter()
    n_pairs = 0
    for text in texts:
        toks = [t for t in tk.tokenize(text) if t not in stop]
        uni.update(toks)
        n = len(toks)
        n_pairs += pairs_in_document(n, window)
        for i, g in enumerate(toks):
            if g in targets:
                for j in range(max(0, i - window + 1), min(n, i + window)):
                    if j != i:
                        co[toks[j], g] += 1
    words = sorted(uni)
    keys = sorted(co)  # (word, target) order, as the fast counter writes
    tlist = sorted(targets)
    windex, tindex = {w: i for i, w in enumerate(words)}, {t: i for i, t in enumerate(tlist)}
    unigrams, cooc = _as_tables(
        words,
        [uni[w] for w in words],
        [windex[k[0]] for k in keys],
        tlist,
        [tindex[k[1]] for k in keys],
        [co[k] for k in keys],
    )
    return Counts(unigrams, cooc, int(sum(uni.values())), int(n_pairs))
