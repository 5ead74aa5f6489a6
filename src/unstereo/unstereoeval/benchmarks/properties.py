"""Benchmark properties (the paper's Table 7, appendix F) of a pair table, and a benchmark card.

Words are whitespace tokens with punctuation removed (:func:`unstereo.templates.words`, the paper's footnote 11),
counted on the template, where a pronoun placeholder (``{pronoun}``, ``{pronoun1}``, ``{pronoun2}self``, ...) is one
word. Per benchmark:

- ``# sentences``: pairs; ``# seed words``: distinct (lower-cased) seed words;
- ``# female words`` / ``# male words``: distinct words of the gendered-pairs list (``data/gendered_pairs.csv``,
  pronouns left out: the placeholders replace them) that occur in some template;
- ``# pronouns``: placeholders per template; ``pos. first pronoun`` / ``pos. last pronoun``: 0-based word index of
  the first / last placeholder; ``sentence length``: words per template;
- ``seed-word delta``: delta(w) of each distinct seed word (docs/methods.md#word-statistics; seed words
  without a delta are left out).

The paper prints "median / max" for the per-sentence and seed-word rows (its text: "the median sentence length
closely matching the sentence length restrictions"; every median of the released benchmarks reproduces), so the
table has a ``(median)`` and a ``(max)`` row for each; the card also gives the minimum.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import pandas as pd

from unstereo.errors import InputError
from unstereo.render.formats import html_table, markdown_table
from unstereo.templates import is_placeholder_word, words

COUNT_ROWS = ["# sentences", "# seed words", "# female words", "# male words"]
STAT_ROWS = ["# pronouns", "pos. first pronoun", "pos. last pronoun", "sentence length", "seed-word delta"]
STATS = ("min", "median", "max")
TABLE7_STATS = ("median", "max")  # what the paper prints
TABLE7_ROWS = COUNT_ROWS + [f"{r} ({s})" for r in STAT_ROWS for s in TABLE7_STATS]
DECIMALS = {"seed-word delta": 2}


def _stats(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {s: math.nan for s in STATS}
    ser = pd.Series(values, dtype=float)
    return {"min": float(ser.min()), "median": float(ser.median()), "max": float(ser.max())}


def benchmark_properties(
    pairs: pd.DataFrame,
    delta: pd.DataFrame | None = None,
    gendered: tuple[frozenset[str], frozenset[str]] | None = None,
) -> dict[str, Any]:
    """The properties of one pair table: ``{"# sentences": n, ..., "# pronouns": {"min", "median", "max"}, ...}``.

    ``delta``: a DELTA table (``word``, ``delta``) for the seed-word row (None: that row is empty); ``gendered``:
    (female, male) word sets (default: :func:`unstereo.unstereoeval.filters.load_gendered_words`).
    """
    if "template" not in pairs.columns:
        raise InputError("pair table lacks column 'template'", path="pairs")
    if gendered is None:
        from unstereo.unstereoeval.filters import load_gendered_words

        gendered = load_gendered_words()
    female, male = gendered
    n_pron, first, last, length = [], [], [], []
    seen: set[str] = set()
    for template in pairs["template"].astype(str):
        ws = words(template)
        hits = [i for i, w in enumerate(ws) if is_placeholder_word(w)]
        length.append(len(ws))
        n_pron.append(len(hits))
        if hits:
            first.append(hits[0])
            last.append(hits[-1])
        seen.update(w.lower() for w in ws)
    seeds = pairs["seed_word"].dropna().astype(str).str.lower().unique() if "seed_word" in pairs else []
    deltas: list[float] = []
    if delta is not None and len(seeds):
        lookup = delta.drop_duplicates("word").set_index("word")["delta"]
        deltas = [float(v) for v in lookup.reindex(list(seeds)).dropna()]
    return {
        "# sentences": len(pairs),
        "# seed words": len(seeds),
        "# female words": len(seen & female),
        "# male words": len(seen & male),
        "female words": sorted(seen & female),
        "male words": sorted(seen & male),
        "# pronouns": _stats(n_pron),
        "pos. first pronoun": _stats(first),
        "pos. last pronoun": _stats(last),
        "sentence length": _stats(length),
        "seed-word delta": _stats(deltas),
        "seed words with a delta": len(deltas),
    }


def _card_blocks(p: dict[str, Any], source: str | None) -> list[str | tuple[list[str], list[list[str]]]]:
    """The card's blocks in order: a paragraph (a string) or a table (header, rows of formatted cells)."""

    def fmt(v: float, row: str) -> str:
        return "" if math.isnan(v) else f"{v:.{DECIMALS.get(row, 0) or (0 if float(v).is_integer() else 1)}f}"

    blocks: list[str | tuple[list[str], list[list[str]]]] = [f"Source: `{source}`"] if source else []
    blocks.append((["property", "value"], [[row, str(p[row])] for row in COUNT_ROWS]))
    stat_header = "per sentence (words: whitespace tokens, punctuation removed; positions 0-based)"
    blocks.append(
        ([stat_header, *STATS], [[row] + [fmt(p[row][s], row) for s in STATS] for row in STAT_ROWS])
    )
    blocks.append(
        f"Gendered words other than the pronouns (`data/gendered_pairs.csv`): female {', '.join(p['female words']) or '-'}; "
        f"male {', '.join(p['male words']) or '-'}. Seed-word delta over {p['seed words with a delta']} of "
        f"{p['# seed words']} seed words (the others have no delta)."
    )
    return blocks


def card_markdown(name: str, p: dict[str, Any], source: str | None = None) -> str:
    """A benchmark card: the properties of one benchmark as Markdown (min / median / max per statistic)."""
    parts = [b + "\n" if isinstance(b, str) else markdown_table(*b) for b in _card_blocks(p, source)]
    return f"# Benchmark card: {name}\n\n" + "\n".join(parts)


def card_html(name: str, p: dict[str, Any], source: str | None = None) -> str:
    """The benchmark card as a standalone HTML page (what the Snakemake report shows)."""
    import html

    esc = html.escape
    blocks = [
        f"<p>{esc(b.replace('`', ''))}</p>" if isinstance(b, str) else html_table(*b)
        for b in _card_blocks(p, source)
    ]
    style = "body{font-family:sans-serif;font-size:14px} td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
    return (
        f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{esc(name)}</title><style>{style}</style></head>"
        f"<body><h2>Benchmark card: {esc(name)}</h2>{''.join(blocks)}</body></html>\n"
    )


def read_properties(paths) -> dict[str, dict[str, Any]]:
    """benchmark -> properties from the JSON files of ``unstereo benchmarks card --json``."""
    import json
    from pathlib import Path

    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            data = json.loads(Path(path).read_text(encoding="utf-8"))
            name = data.pop("benchmark")
        except (OSError, ValueError, KeyError) as exc:
            raise InputError(f"not a properties file of `benchmarks card`: {exc}", path=path) from exc
        if name in out:
            raise InputError(f"benchmark {name!r} appears in more than one properties file", path=path)
        out[name] = data
    return out
