"""Readers: every benchmark source becomes the project's pair table (:data:`unstereo.tables.PAIRS`).

Kinds (``build_pairs(kind, paths, ...)``), with the pair ids they give (fixed project-wide):

| kind | source | pair_id |
|---|---|---|
| ``winobias`` | the 8 original WinoBias files ``{pro,anti}_stereotyped_type{1,2}.txt.{dev,test}`` (a folder or the files), or the released ``coref__Winobias__templates.{dev,test}.csv`` | ``Winobias:{split}:{i}``, i = row of the split sorted by sentence (= row of the released file) |
| ``winogender`` | ``all_sentences.tsv`` of Winogender, or the released ``coref__Winogender__templates.csv`` | ``Winogender:{example_id}`` |
| ``use-raw`` | released ``data/datasets/raw/USE-{5,10,20}.csv`` (``natural_only``: keep ``is_natural`` rows) | ``USE-5:{i}``, i = 0-based row of the raw file (= row of ``results/5words/*.csv``) |
| ``use-released`` | released ``data/datasets/preprocessed/*-no-maxpmi-constraint.csv.gz`` (all six) | as above; USE rows are mapped to raw rows (the ``orig_index`` column counts rows AFTER the naturalness filter) |
| ``templates`` | user CSV / TSV / JSONL / parquet with a ``template`` column (optional ``id`` or ``pair_id``, ``seed_word`` or ``word``) | ``{name}:{id}`` (``pair_id`` verbatim; no id column: ``{name}:{row}``, 0-based) |
| ``pairs`` | an existing PAIRS table (e.g. ``generate/{benchmark}/pairs.parquet``) | kept |

Winobias from the original files (docs/methods.md#benchmarks-and-their-sizes; the reference notebook
``0.Preprocess-baselines``): strip the leading id, remove the brackets, drop sentences whose bracketed pronoun
is female, turn he/his/him/himself into placeholders, sort each split by sentence. With ``reference_quirks``
the reference's bracket removal is reproduced: it only removes the brackets of the first two bracketed spans
(entity and first pronoun), so 41 released templates keep a ``[{pronoun1}]``-like span; by default every
bracket is removed. Winogender: one row per example id, the male one; with ``reference_quirks`` the released
file's conversion artifact is reproduced as well (a sentence with an apostrophe loses it and gains a trailing
``"``: 4 cashier sentences, "couldn't" -> "couldnt ... dollars.\"").
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from pathlib import Path

import pandas as pd

from unstereo.errors import InputError
from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.readers.common import SPLITS
from unstereo.unstereoeval.benchmarks.readers.pairs import read_pairs
from unstereo.unstereoeval.benchmarks.readers.templates import read_templates
from unstereo.unstereoeval.benchmarks.readers.use_raw import read_use_raw
from unstereo.unstereoeval.benchmarks.readers.use_released import read_use_released
from unstereo.unstereoeval.benchmarks.readers.winobias import FEMALE_PRONOUNS, MALE_PRONOUNS, read_winobias
from unstereo.unstereoeval.benchmarks.readers.winogender import read_winogender

# kind -> reader; each reader takes (paths, name=..., <its own options>, reference_quirks=..., bad=...)
READERS: dict[str, Callable[..., pd.DataFrame]] = {
    "winobias": read_winobias,
    "winogender": read_winogender,
    "use-raw": read_use_raw,
    "use-released": read_use_released,
    "templates": read_templates,
    "pairs": read_pairs,
}
KINDS = tuple(READERS)

__all__ = ["FEMALE_PRONOUNS", "KINDS", "MALE_PRONOUNS", "READERS", "SPLITS", "build_pairs"]
__all__ += [reader.__name__ for reader in READERS.values()]


def build_pairs(
    kind: str,
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    *,
    splits: Sequence[str] = SPLITS,
    natural_only: bool = True,
    raw: str | Path | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
) -> pd.DataFrame:
    """Read a benchmark source of ``kind`` (one of :data:`KINDS`) into a PAIRS table (``max_pmi`` empty).

    ``splits`` applies to winobias, ``natural_only`` to use-raw, ``raw`` to use-released; ``reference_quirks``
    switches on the reference code's filling (and its Winobias/Winogender artifacts); ``on_bad_row`` is "error" (an
    InputError naming file and line) or "drop" (dropped, logged and counted).
    """
    if kind not in READERS:
        raise InputError(f"unknown benchmark kind {kind!r}; use one of {list(KINDS)}")
    own = {
        "winobias": {"splits": splits},
        "use-raw": {"natural_only": natural_only},
        "use-released": {"raw": raw},
    }
    named = {"name": name} if name else {}  # else the reader's default name
    return READERS[kind](
        paths, **named, **own.get(kind, {}), reference_quirks=reference_quirks, bad=BadRows(on_bad_row)
    )
