"""The robustness stage end to end, as library functions the CLI and the rules call.

1. :func:`construct_file`: a benchmark's pair table -> one construction's pair table (MaxPMI recomputed from the
   benchmark's delta table, so the eta filters apply to the constructed templates).
2. :func:`score_constructions`: every construction of a benchmark under one model through the project's scorer
   (:func:`unstereo.scoring.chunks.score_pairs`) with the score cache: a sentence a construction leaves unchanged, or
   that the score stage already scored, costs no forward pass. The cost table says, per construction, how many
   sentences a naive rescoring would run (``texts``) and how many reached the model (``forward_passes``).
3. :func:`robustness_scores`: US, PD, AuFC (the metric registry, :func:`unstereo.unstereoeval.metrics.compute.metrics_from_joined`)
   per (model, benchmark, construction, trial, eta); sub-samples are drawn from the ``original`` construction's
   scores (no scoring at all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from unstereo.defaults import DEFAULT_EPS
from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.robustness.build import (
    ORIGINAL,
    RELEASE_PREFIX,
    construct,
    from_release,
    sample_name,
    subsample,
)
from unstereo.robustness.schemas import COST, RANK_SWAPS  # noqa: F401  (RANK_SWAPS: importable from here as before)
from unstereo.robustness.schemas import SCORES as ROBUSTNESS_SCORES
from unstereo.tables import PAIRS, SCORES, read_delta, read_table, validate, write_table
from unstereo.unstereoeval.api import join_scores, metrics_from_joined

if TYPE_CHECKING:
    from unstereo.models.request import ModelRequest

log = get_logger("robustness")

COST_COLUMNS = COST.names


def construct_file(
    pairs_path: str | Path,
    name: str,
    out: str | Path,
    *,
    adjectives: Sequence[str] | None = None,
    synonyms: Mapping[str, str] | None = None,
    delta: str | Path | None = None,
    release_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Construction ``name`` of the pair table ``pairs_path`` written to ``out`` (PAIRS + construction columns);
    ``release_dir`` (``reference/tail-wagging/winogender/data``) for the ``release:FILE`` constructions."""
    from unstereo.robustness.constructions import ADJECTIVES

    pairs = read_table(pairs_path, PAIRS)
    if name.startswith(RELEASE_PREFIX):
        if release_dir is None:
            raise InputError(f"construction {name!r} needs the release directory (--release-dir)")
        out_df = from_release(pairs, name, release_dir)
    else:
        out_df = construct(pairs, name, adjectives or ADJECTIVES, synonyms)
    if delta is not None and out_df["changed"].any():
        from unstereo.unstereoeval.api import add_max_pmi

        out_df = add_max_pmi(out_df, read_delta(delta))
    write_table(out_df, out, PAIRS)
    log.info("%s: %d pairs (%d changed) from %s", name, len(out_df), int(out_df["changed"].sum()), pairs_path)
    return out_df


class _Counting:
    """A scorer passing through to ``inner`` that records every text the model runs on."""

    def __init__(self, inner: Any, seen: list[str]):
        self.inner, self.seen = inner, seen
        self.kind = getattr(inner, "kind", "causal")

    def score(self, sentences: list[str]) -> list[tuple[float, int]]:
        self.seen.extend(sentences)
        return self.inner.score(sentences)

    def metadata(self) -> dict[str, Any]:
        return self.inner.metadata()


def concat_pairs(paths: Sequence[str | Path]) -> pd.DataFrame:
    """The construction pair tables of one benchmark, one after the other (pair ids must stay unique)."""
    tables = [read_table(p, PAIRS) for p in paths]
    pairs = pd.concat(tables, ignore_index=True) if tables else pd.DataFrame(columns=PAIRS.names)
    dup = pairs["pair_id"].duplicated()
    if dup.any():
        raise InputError(
            f"pair id {pairs['pair_id'][dup].iloc[0]!r} in two construction tables", path=str(paths[0])
        )
    if "construction" not in pairs.columns:
        pairs["construction"] = ORIGINAL
    return pairs


def score_constructions(
    request: ModelRequest,
    pairs_paths: Sequence[str | Path],
    out: str | Path,
    *,
    name: str,
    cache: Any = None,
    chunk_size: int = 500,
    cost_out: str | Path | None = None,
    reference_quirks: bool = False,
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Score the construction tables ``pairs_paths`` of one benchmark under the model run ``request`` (a
    :class:`~unstereo.models.request.ModelRequest`) into one SCORES table
    ``out``; returns (scores, cost). ``cache``: a :class:`~unstereo.scoring.cache.ScoreCache` or its file."""
    from unstereo.scoring.cache import ScoreCache
    from unstereo.scoring.chunks import score_pairs
    from unstereo.scoring.registry import scorer_for

    pairs = concat_pairs(pairs_paths)
    run, make_scorer = scorer_for(request)
    if cache is not None and not isinstance(cache, ScoreCache):
        cache = ScoreCache(cache)
    seen: list[str] = []
    scores = score_pairs(
        pairs.drop(
            columns=[c for c in ("construction", "original_pair_id", "changed") if c in pairs.columns]
        ),
        lambda: _Counting(make_scorer(), seen),
        out,
        model_name=name,
        run=run,
        chunk_size=chunk_size,
        reference_quirks=reference_quirks,
        cache=cache,
    )
    cost = forward_pass_cost(pairs, seen, name)
    if cost_out is not None:
        write_table(cost, cost_out, COST)
    return scores, cost


def forward_pass_cost(pairs: pd.DataFrame, scored: Sequence[str], model: str) -> pd.DataFrame:
    """Per construction: pairs, texts a naive rescoring runs (two per pair) and forward passes this run made (each
    text the model ran on is charged to the first construction, in table order, that holds it)."""
    charged: dict[str, int] = {}
    owner: dict[str, str] = {}
    for cons, f, m in zip(
        pairs["construction"], pairs["sentence_female"], pairs["sentence_male"], strict=True
    ):
        owner.setdefault(f, cons)
        owner.setdefault(m, cons)
    for text in scored:
        cons = owner.get(text, ORIGINAL)
        charged[cons] = charged.get(cons, 0) + 1
    bench = pairs["benchmark"].iloc[0] if len(pairs) else ""
    rows = [
        [model, bench, cons, int(n), 2 * int(n), charged.get(cons, 0)]
        for cons, n in pairs.groupby("construction", sort=False).size().items()
    ]
    return pd.DataFrame(rows, columns=COST_COLUMNS)


def robustness_scores(
    scores: pd.DataFrame,
    pairs: pd.DataFrame,
    *,
    etas: Sequence[float | str] = ("inf",),
    fractions: Sequence[float] = (),
    trials: int = 100,
    seed: int = 0,
    eps: float = DEFAULT_EPS,
    eps_grid: np.ndarray | None = None,
) -> pd.DataFrame:
    """The ROBUSTNESS_SCORES table of ``scores`` (SCORES of every model over every construction table in
    ``pairs``, which has a ``construction`` column): each construction once (trial 0), and ``trials`` seeded
    sub-samples of the ``original`` construction per fraction of ``fractions``."""
    validate(scores, SCORES, source="scores")
    parts = []
    for cons, cpairs in pairs.groupby("construction", sort=False):
        joined = join_scores(scores, cpairs.drop(columns=["construction"]))
        parts.append(_with_keys(metrics_from_joined(joined, etas, eps, eps_grid), cons, 0))
    if fractions:
        original = pairs[pairs["construction"] == ORIGINAL]
        if original.empty:
            raise InputError("sub-sampling needs the 'original' construction's pairs", path="pairs")
        joined = join_scores(scores, original.drop(columns=["construction"]))
        for fraction in fractions:
            for trial in range(trials):
                for _, bpairs in original.groupby("benchmark", sort=False):
                    keep = set(subsample(bpairs, fraction, trial, seed)["pair_id"])
                    sub = joined[joined["pair_id"].isin(keep)]
                    metrics = metrics_from_joined(sub, etas, eps, eps_grid)
                    parts.append(_with_keys(metrics, sample_name(fraction), trial))
    out = pd.concat(parts, ignore_index=True)[ROBUSTNESS_SCORES.names]
    return validate(
        out.astype({"trial": "int64", "n": "int64"}), ROBUSTNESS_SCORES, source="robustness scores"
    )


def _with_keys(metrics: pd.DataFrame, construction: str, trial: int) -> pd.DataFrame:
    metrics = metrics.copy()
    metrics.insert(2, "construction", construction)
    metrics.insert(3, "trial", trial)
    return metrics


def gather_cost(parts: Sequence[pd.DataFrame]) -> pd.DataFrame:
    """The COST tables ``parts`` one after the other. Empty ones (no sub-samples, a benchmark without pairs) are
    left out: their object columns would turn the others' counts into objects, which the COST schema rejects."""
    parts = [t for t in parts if len(t)]
    return pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COST_COLUMNS)


def sampling_cost(table: pd.DataFrame) -> pd.DataFrame:
    """Cost rows of the sub-sampling constructions (from a ROBUSTNESS_SCORES table): the pairs of all their trials,
    the texts a naive rescoring of every trial would run, and no forward pass (they reuse the original's scores).
    Counted at eta = inf (every pair of the sample); empty without that eta."""
    rows = table[table["construction"].str.startswith("sample_") & np.isinf(table["eta"].astype(float))]
    if rows.empty:
        return pd.DataFrame(columns=COST_COLUMNS)
    out = (
        rows.groupby(["model", "benchmark", "construction"], sort=False)["n"].sum().reset_index(name="pairs")
    )
    out["texts"] = 2 * out["pairs"]
    out["forward_passes"] = 0
    return out[COST_COLUMNS]
