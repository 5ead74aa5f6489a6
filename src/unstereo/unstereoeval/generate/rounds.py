"""Generation to a target (docs/methods.md#use-k-generation): rounds of the pipeline until ``min_pairs`` pairs are
kept.

One pass over the first ``max_seed_words`` seed words keeps however many pairs survive the filters, and float
rounding on another CPU kind changes that number. With ``min_pairs`` set, :func:`generate_to_target` runs rounds of
(seed word, sample) generation jobs, in an order fixed in advance (:func:`schedule`):

- round 1: the first block of ``max_seed_words`` seed words at sample 0, exactly the single pass (the same LLM calls,
  so the same cache keys);
- then the same block at samples 1 .. ``samples_per_word`` - 1;
- then the next block of ``max_seed_words`` words of the seed-word list at sample 0, 1, ..., and so on;

and stops when the pairs kept reach ``min_pairs``, after ``max_rounds`` rounds (the budget), or when the seed words
run out. A sample is a word's own count: a word listed twice in the file takes the next sample each time it comes
(its generation seed is ``seed + sample``), so no (word, sample) is asked twice and a round's calls are a pure
function of the seed, the words and the samples: a rerun answers all of them from the LLM cache.

Each round's templates are deduplicated against the earlier rounds' (before the naturalness filters, costing no
filter call): no pair is kept twice. After the round that reaches the target only the first ``min_pairs`` kept
pairs (in generation order) stay kept; the others become ``discarded`` with a reason starting ``target:``
(:func:`cut_at_target`), so the kept count does not depend on the CPU kind (which pairs may).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import pandas as pd

from unstereo.log import get_logger
from unstereo.unstereoeval.generate.pipeline import GenerateSettings, generate_benchmark
from unstereo.unstereoeval.prompts import PromptSet

log = get_logger("unstereoeval.generate")

#: The reason of a kept pair set aside beyond the target (its prefix ``target:`` is what summary.json counts).
TARGET_REASON = "target: beyond the first {min_pairs} kept pairs (generate.min_pairs)"


@dataclass(frozen=True)
class Round:
    """One round of generation jobs: ``number`` (from 1), the ``jobs`` ((seed word, sample) in order), the
    ``block`` of seed words (from 0) and its ``sample_pass`` (from 0), and ``words_used``: the seed-word list's
    entries taken up to and including this round's block."""

    number: int
    jobs: tuple[tuple[str, int], ...]
    block: int
    sample_pass: int
    words_used: int

    @property
    def words(self) -> list[str]:
        return [w for w, _ in self.jobs]

    @property
    def samples(self) -> list[int]:
        return [s for _, s in self.jobs]


def schedule(words: Sequence[str], max_seed_words: int | None, samples_per_word: int) -> list[Round]:
    """Every round of ``words`` (the seed-word list, in file order, repeats kept), in the order they would run:
    blocks of ``max_seed_words`` words (None: one block of all), each block ``samples_per_word`` times, a word's
    sample its count of earlier jobs (round 1 is the single pass: a word's n-th listing in the block is sample n)."""
    if samples_per_word < 1:
        raise ValueError(f"samples_per_word must be at least 1, not {samples_per_word}")
    if max_seed_words is not None and max_seed_words < 1:
        raise ValueError(f"max_seed_words must be at least 1 or None, not {max_seed_words}")
    size = max_seed_words or max(1, len(words))
    taken: Counter[str] = Counter()
    rounds: list[Round] = []
    for block, start in enumerate(range(0, len(words), size)):
        chunk = list(words[start : start + size])
        for sample_pass in range(samples_per_word):
            jobs = []
            for w in chunk:
                jobs.append((w, taken[w]))
                taken[w] += 1
            rounds.append(Round(len(rounds) + 1, tuple(jobs), block, sample_pass, start + len(chunk)))
    return rounds


def cut_at_target(full: pd.DataFrame, min_pairs: int) -> pd.DataFrame:
    """``full`` with only its first ``min_pairs`` kept rows (row order: generation order) kept; the later kept rows
    become ``discarded`` (reason :data:`TARGET_REASON`, no pair_id). A copy."""
    full = full.copy()
    kept = full["status"] == "kept"
    surplus = kept & (kept.cumsum() > min_pairs)
    if surplus.any():
        full.loc[surplus, "status"] = "discarded"
        full.loc[surplus, "reason"] = TARGET_REASON.format(min_pairs=min_pairs)
        full["pair_id"] = full["pair_id"].astype(object).where(~surplus, None)
    return full


@dataclass
class TargetRun:
    """What :func:`generate_to_target` made: the ``full`` table of every round run (concatenated, cut at the
    target), the ``rounds`` run, ``seed_words`` (the list's entries those rounds used), ``min_pairs`` and why it
    stopped (``stopped``: ``single pass``, ``target``, ``max_rounds`` or ``seed words``)."""

    full: pd.DataFrame
    rounds: list[Round]
    seed_words: int
    min_pairs: int | None
    stopped: str

    @property
    def kept(self) -> int:
        return int((self.full["status"] == "kept").sum())

    @property
    def target_reached(self) -> bool | None:
        return None if self.min_pairs is None else self.kept >= self.min_pairs


def generate_to_target(
    words: Sequence[str],
    k: int,
    client: Any,
    prompts: PromptSet,
    settings: GenerateSettings | None = None,
    *,
    min_pairs: int | None = None,
    max_rounds: int = 8,
    max_seed_words: int | None = None,
    samples_per_word: int = 2,
    benchmark: str | None = None,
    scorer: Any = None,
    judge: Any = None,
) -> TargetRun:
    """The pipeline (:func:`.pipeline.generate_benchmark`) over the rounds of :func:`schedule` until ``min_pairs``
    pairs are kept, ``max_rounds`` rounds ran or the seed words ran out; ``min_pairs`` None: round 1 only (the
    single pass over the first ``max_seed_words`` words). ``words`` is the whole seed-word list."""
    if min_pairs is not None and min_pairs < 1:
        raise ValueError(f"min_pairs must be at least 1 or None, not {min_pairs}")
    if max_rounds < 1:
        raise ValueError(f"max_rounds must be at least 1, not {max_rounds}")
    benchmark = benchmark or f"USE-{k}"
    plan = schedule(words, max_seed_words, samples_per_word)
    planned = len(plan)
    plan = plan[:1] if min_pairs is None else plan[:max_rounds]
    if not plan:  # no seed word: the single pass over none (an empty table)
        plan = [Round(1, (), 0, 0, 0)]
    full: pd.DataFrame | None = None
    ran: list[Round] = []
    stopped = "single pass" if min_pairs is None else "max_rounds"
    for rnd in plan:
        got = generate_benchmark(rnd.words, k, client, prompts, settings, benchmark=benchmark, scorer=scorer,
                                 judge=judge, samples=rnd.samples, earlier=full, round_number=rnd.number)  # fmt: skip
        full = got if full is None else pd.concat([full, got], ignore_index=True)
        ran.append(rnd)
        kept_now = int((got["status"] == "kept").sum())
        kept = int((full["status"] == "kept").sum())
        target = "" if min_pairs is None else f" (target {min_pairs})"
        log.info("%s round %d: block %d at sample pass %d: %d seed words, %d sentences generated, %d pairs kept; "
                 "%d kept so far%s", benchmark, rnd.number, rnd.block + 1, rnd.sample_pass, len(rnd.jobs),
                 int((got["item"] >= 0).sum()), kept_now, kept, target)  # fmt: skip
        if min_pairs is not None and kept >= min_pairs:
            stopped = "target"
            break
    else:
        if min_pairs is not None and len(ran) == planned:
            stopped = "seed words"
    assert full is not None
    if min_pairs is not None:
        full = cut_at_target(full, min_pairs)
        if stopped != "target":
            log.warning("%s: %d pairs kept, short of min_pairs %d (%s exhausted after %d rounds)", benchmark,
                        int((full["status"] == "kept").sum()), min_pairs,
                        "the seed words" if stopped == "seed words" else "max_rounds", len(ran))  # fmt: skip
    return TargetRun(full, ran, ran[-1].words_used, min_pairs, stopped)
