"""Compare a seed list with the released one (``data/seed_words``: JSON ``{word: n_samples}``) and explain the gap.

Besides overlap figures this reconstructs the size of the pool the released words were drawn from: for every
candidate pool size N the seeded permutations fix which pool positions were drawn and which were drawn twice. The
released words, ranked by delta inside the region of a delta table, must then (a) put the words drawn twice at the
same ranks as the positions drawn twice and (b) lie at table ranks that minus their pool positions never decrease
(those differences count the table words the authors' filters excluded). Only the true N passes both checks in
practice, and the differences tell how many words the authors excluded between consecutive seed words.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.errors import InputError


def read_released_seeds(path: str | Path) -> dict[str, int]:
    """The released ``seed_words`` JSON (``{word: number of samples that drew it}``)."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise InputError(f"cannot read seed words JSON: {exc}", path=path) from exc
    if not isinstance(data, dict):
        raise InputError("expected a JSON object {word: count}", path=path)
    return {str(k): int(v) for k, v in data.items()}


def overlap(ours: Iterable[str], released: Iterable[str]) -> dict:
    """Sizes, intersection and Jaccard index of two word sets."""
    a, b = set(ours), set(released)
    inter, union = len(a & b), len(a | b)
    return {
        "ours": len(a),
        "released": len(b),
        "intersection": inter,
        "jaccard": inter / union if union else 1.0,
    }


def drawn_positions(n_pool: int, sample_size: int, seeds: Sequence[int]) -> Counter:
    """Pool positions drawn by the seeded samples (as :func:`~unstereo.unstereoeval.vocabulary.seeds.sample_seed_words`), with
    the number of samples that drew each."""
    size = min(sample_size, n_pool)
    return Counter(int(i) for s in seeds for i in np.random.RandomState(s).permutation(n_pool)[:size])


def infer_pool_sizes(
    ranks: Sequence[int],
    multiplicity: Sequence[int],
    sample_size: int,
    seeds: Sequence[int],
    n_max: int,
    n_min: int = 1,
) -> list[int]:
    """Pool sizes ``n_min <= N <= n_max`` consistent with released words at table ranks ``ranks`` (0-based, in the
    delta-sorted region of a table) drawn ``multiplicity`` times each (see module docstring)."""
    order = np.argsort(ranks, kind="stable")
    r = np.asarray(ranks)[order]
    mult = np.asarray(multiplicity)[order]
    n_words = len(r)
    found = []
    for n_pool in range(max(n_words, n_min, 1), n_max + 1):
        drawn = drawn_positions(n_pool, sample_size, seeds)
        if len(drawn) != n_words:
            continue
        pos = np.array(sorted(drawn))
        if not np.array_equal(np.array([drawn[p] for p in pos]), mult):
            continue
        gaps = r - pos
        if gaps[0] >= 0 and np.all(np.diff(gaps) >= 0):
            found.append(n_pool)
    return found


def excluded_between(ranks: Sequence[int], n_pool: int, sample_size: int, seeds: Sequence[int]) -> np.ndarray:
    """For a reconstructed pool size: how many table words the authors excluded before each released word (sorted
    by rank)."""
    pos = np.array(sorted(drawn_positions(n_pool, sample_size, seeds)))
    return np.sort(np.asarray(ranks)) - pos


def region_ranks(
    delta: pd.DataFrame, words: Iterable[str], low: float, high: float
) -> tuple[pd.DataFrame, dict]:
    """The region ``low <= delta <= high`` of a delta table sorted by delta (stable) and each word's rank in it."""
    region = delta[(delta["delta"] >= low) & (delta["delta"] <= high)]
    region = region.sort_values("delta", kind="stable").reset_index(drop=True)
    rank = {w: i for i, w in enumerate(region["word"])}
    return region, {w: rank[w] for w in words if w in rank}


def compare_report(
    ours: pd.DataFrame,
    released: dict[str, int],
    delta: pd.DataFrame,
    vocab: pd.DataFrame,
    pool: pd.DataFrame,
    region: tuple[float, float],
    sample_size: int,
    seeds: Sequence[int],
    lid=None,
    wordnet=None,
    lid_threshold: float = 0.6,
    reconstruct: bool = False,
) -> dict:
    """Overlap of ``ours`` with ``released`` and where the released words fall out of our pipeline.

    ``delta`` is the input table, ``vocab`` our English vocabulary, ``pool`` our sampling pool. With ``lid`` and
    ``wordnet`` the released words our filter drops are classified; with ``reconstruct`` the authors' pool size is
    inferred (slow: one permutation per candidate size and seed).
    """
    words = list(released)
    rep: dict = {"overlap": overlap(ours["word"], words)}
    d = delta.set_index("word")
    known = [w for w in words if w in d.index]
    rel = d.loc[known]
    low, high = region
    pct = delta["count"].rank(pct=True)
    pct.index = delta["word"]
    rep["released"] = {
        "in_delta_table": len(known),
        "delta_min": float(rel["delta"].min()),
        "delta_max": float(rel["delta"].max()),
        "inside_region": int(((rel["delta"] >= low) & (rel["delta"] <= high)).sum()),
        "count_min": int(rel["count"].min()),
        "count_percentile_in_table": {
            k: float(v) for k, v in pct.loc[known].describe()[["min", "25%", "50%", "75%", "max"]].items()
        },
        "in_our_vocabulary": int(vocab["word"].isin(words).sum()),
        "in_our_pool": int(pool["word"].isin(words).sum()),
        "drawn_twice": sum(1 for v in released.values() if v > 1),
    }
    missing = [w for w in known if w not in set(vocab["word"])]
    rows = []
    for w in missing:
        row = {"word": w, "count": int(d.at[w, "count"]), "alphabetic": w.isalpha()}
        if lid is not None:
            row["lid_lang"], row["lid_conf"] = lid(w)
        if wordnet is not None:
            row["wordnet_synsets"] = wordnet(w)
        if lid is not None and wordnet is not None:
            row["english"] = bool(
                row["alphabetic"]
                and (
                    (row["lid_lang"] == "en" and row["lid_conf"] > lid_threshold)
                    or row["wordnet_synsets"] > 0
                )
            )
        rows.append(row)
    rep["released_not_in_our_vocabulary"] = rows
    if reconstruct:
        table_region, ranks = region_ranks(delta, known, low, high)
        ranked = [w for w in known if w in ranks]
        sizes = infer_pool_sizes(
            [ranks[w] for w in ranked], [released[w] for w in ranked], sample_size, seeds, len(table_region)
        )
        rec = {
            "table_region_size": len(table_region),
            "our_pool_size": len(pool),
            "consistent_pool_sizes": sizes,
        }
        if len(sizes) == 1:
            gaps = excluded_between([ranks[w] for w in ranked], sizes[0], sample_size, seeds)
            in_pool = set(pool["word"])
            ours_excl = np.cumsum(~table_region["word"].isin(in_pool).to_numpy())
            r = np.sort([ranks[w] for w in ranked])
            ours_before = ours_excl[r] - (~table_region["word"].isin(in_pool).to_numpy())[r]
            rec.update(
                {
                    "authors_excluded_in_region": len(table_region) - sizes[0],
                    "our_excluded_in_region": len(table_region) - len(pool),
                    "excluded_before_each_seed_ours_minus_authors": {
                        k: float(v)
                        for k, v in pd.Series(ours_before - gaps).describe()[["min", "50%", "max"]].items()
                    },
                }
            )
        rep["reconstruction"] = rec
    return rep
