"""The USE-k generation pipeline (docs/methods.md#use-k-generation): generation -> check -> revision ->
pairing -> template -> filter.

Beyond the paper: an optional length check after revision (about k words), deduplication of templates before the
semantic filter (on by default: a repeated template costs two filter calls and adds no pair), and a flag for other
gendered words (``gendered_words``), see :mod:`unstereo.unstereoeval.filters`; the naturalness filters of
:mod:`.naturalness` and, last (the costliest, so it sees the fewest sentences), the judge of sense
(:mod:`unstereo.unstereoeval.generate.judge`) on both sentences of every surviving pair.

Every sentence the LLM produced becomes one row of the full table with its ``status`` (``kept``, ``unnatural`` or
``discarded``) and ``reason``; nothing is dropped silently. Each step sends all its requests at once through
:meth:`~unstereo.llm.client.LLMClient.chat_many` (parallel HTTP calls or batched local generation), and every
finished call is cached.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field, fields
from typing import Any

import numpy as np
import pandas as pd

from unstereo.llm.parse import (
    has_pronoun,
    has_word,
    is_refusal,
    parse_likelihood,
    parse_numbered_list,
    parse_single,
)
from unstereo.log import get_logger
from unstereo.templates import fill_template, has_placeholder, templatize_male, words
from unstereo.unstereoeval.filters import first_occurrences, gendered_words, length_ok, load_gendered_words
from unstereo.unstereoeval.generate.minimal import RULES, check_minimal_pair, rule_of
from unstereo.unstereoeval.generate.naturalness import chat_reply, repetition, task_ngrams, token_logprob
from unstereo.unstereoeval.generate.pairing import (
    direct_female_to_male,
    has_female_pronoun,
    has_male_pronoun,
    modifications,
)
from unstereo.unstereoeval.prompts import PromptSet

log = get_logger("unstereoeval.generate")

PRONOUNS = ("he", "she")
# The {group} value of the revision and editing prompts: the whole pronoun family, written as the released USE-5
# data shows it (a revised sentence there echoes the prompt: "one of the pronouns 'she/her/her/herself'", and
# another "he/his/him/himself"); the generation prompt gets the bare pronoun.
GROUP = {"he": "he/his/him/himself", "she": "she/her/her/herself"}

FULL_COLUMNS = [
    "benchmark", "k", "round", "word", "target_word", "sample", "item", "raw_sentence", "sentence", "has_word",
    "has_pronoun", "is_revised", "revision_calls", "revision_prompt", "pairing", "sentence_male", "modifications",
    "template", "has_placeholder", "gendered_words", "logprob_male", "logprob_female", "likely_under", "likely_male",
    "likely_female", "is_natural", "judge_p_yes_male", "judge_p_yes_female", "status", "reason", "pair_id",
]  # fmt: skip


def _key(path: str) -> Any:
    """A field of :class:`GenerateSettings` read from the ``generate`` section's key ``path``, its default the
    schema's (generate.schema.yaml, the one declaration)."""
    from unstereo.config.settings import section

    return field(default=section("generate").default(path), metadata={"key": path})


@dataclass
class GenerateSettings:
    """Parameters of one generation run: the ``generate`` section's keys the pipeline reads, flat (the layout of
    summary.json's ``settings``), each field's key and default taken from the schema (:func:`_key`)."""

    n_sentences: int = _key("n_sentences")
    temperature_generation: float = _key("temperatures.generation")
    temperature_revision: float = _key("temperatures.revision")
    temperature_editing: float = _key("temperatures.editing")
    temperature_semantic_filter: float = _key("temperatures.semantic_filter")
    top_p: float = _key("top_p")
    max_tokens_generation: int = _key("max_tokens.generation")
    max_tokens_revision: int = _key("max_tokens.revision")
    max_tokens_editing: int = _key("max_tokens.editing")
    max_tokens_semantic_filter: int = _key("max_tokens.semantic_filter")
    revision_max_tries: int = _key("revision_max_tries")
    revision_max_calls: int | None = _key(
        "revision_max_calls"
    )  # budget per sentence (None: 4 prompts x tries)
    generation_max_tries: int = _key("generation_max_tries")
    pairing: str = _key("pairing")
    strip_quotes: bool = _key("strip_quotes")
    pronoun_check: str = _key("pronoun_check")
    dedup: bool = _key("dedup")
    length_tolerance: int | None = _key("length_tolerance")
    chat_reply_filter: bool = _key("naturalness.chat_reply")
    min_token_logprob: float | None = _key("naturalness.min_token_logprob")  # None: no log-likelihood filter
    # subtracted from ln p before dividing by the tokens (.naturalness.token_logprob)
    start_logprob: float = _key("naturalness.start_logprob")
    llm_semantic_filter: bool = _key("naturalness.llm_filter")
    # the judge of sense (.naturalness.judge): a pair is kept when P(Yes) >= this for both sentences; None: no judge
    # (derived from the section's judge mapping, :func:`judge_threshold`)
    judge_threshold: float | None = None
    # the section's null ("derived from the global seed") is resolved by the rule; a run without one starts at 0
    seed: int = 0

    @classmethod
    def from_config(cls, cfg: dict[str, Any], seed: int | None = None) -> GenerateSettings:
        """From a ``generate`` config section (nested ``temperatures``/``max_tokens``/``naturalness`` mappings; a key
        it leaves out keeps the schema's default)."""
        from unstereo.config.settings import NO_DEFAULT, lookup

        kw: dict[str, Any] = {}
        for f in fields(cls):
            key = f.metadata.get("key")
            if key is not None:
                value = lookup(cfg, key)
                if value is not NO_DEFAULT:
                    kw[f.name] = value
        if isinstance(cfg.get("naturalness"), dict):
            kw["judge_threshold"] = judge_threshold(cfg["naturalness"].get("judge"))
        for value in (cfg.get("seed"), seed):
            if value is not None:
                kw["seed"] = value
        return cls(**kw)


def judge_threshold(judge: dict[str, Any] | None) -> float | None:
    """The P(Yes) threshold of a ``generate.naturalness.judge`` mapping: its ``threshold``, else the judge's
    calibrated default (:data:`unstereo.unstereoeval.generate.judge.DEFAULT_THRESHOLD`); None when no judge is configured."""
    if judge is None:
        return None
    from unstereo.unstereoeval.generate.judge import DEFAULT_THRESHOLD

    threshold = judge.get("threshold")
    return DEFAULT_THRESHOLD if threshold is None else float(threshold)


def _req(prompt_text: str, temperature: float, max_tokens: int, top_p: float, seed: int, tag: str):
    from unstereo.llm import ChatRequest

    return ChatRequest.user(
        prompt_text, temperature=temperature, max_tokens=max_tokens, top_p=top_p, seed=seed, tag=tag
    )


def _word_pronoun_ok(sentence: str, word: str, pronoun: str, s: GenerateSettings) -> bool:
    return has_word(sentence, word) and has_pronoun(sentence, pronoun, s.pronoun_check)


def _missing(sentence: str, word: str, pronoun: str, s: GenerateSettings) -> str:
    miss = [f"word '{word}'"] if not has_word(sentence, word) else []
    if not has_pronoun(sentence, pronoun, s.pronoun_check):
        miss.append(f"pronoun '{pronoun}'")
    return " and ".join(miss)


def generate_benchmark(
    seed_words: list[str],
    k: int,
    client: Any,
    prompts: PromptSet,
    settings: GenerateSettings | None = None,
    benchmark: str | None = None,
    scorer: Any = None,
    judge: Any = None,
    samples: list[int] | None = None,
    earlier: pd.DataFrame | None = None,
    round_number: int = 1,
) -> pd.DataFrame:
    """Run the pipeline for sentences of at most ``k`` words; return the full table (one row per sentence).

    A seed word listed twice is generated twice (distinct seeds), as in the released USE data: its n-th listing is
    sample n. ``samples`` (one per seed word) gives each word's sample index instead (the rounds of
    :mod:`.rounds`); a sample's generation seed is ``seed + sample``, whatever else the round holds. ``earlier`` is
    the full table of the rounds before this one (``round_number``): its templates count for the deduplication
    (a template seen there is a duplicate here, before any naturalness filter), and this round's rows are
    numbered after its rows (``pair_id`` and the row a duplicate names are those of the two tables concatenated).
    ``scorer`` (a
    :mod:`unstereo.scoring` scorer, see :func:`.naturalness.make_scorer`) gives the log-likelihoods of the
    naturalness filter; it is needed when ``settings.min_token_logprob`` is set. ``judge`` (a
    :class:`unstereo.unstereoeval.generate.judge.SenseJudge`, or anything with ``p_yes(sentences) -> [float]``) is the judge of
    sense; it is needed when ``settings.judge_threshold`` is set.

    The steps below work on one list of row dicts; a row whose ``status`` is set (discarded, unnatural, kept) is
    out of the later steps.
    """
    s = settings or GenerateSettings()
    benchmark = benchmark or f"USE-{k}"
    tag = benchmark
    if samples is not None and len(samples) != len(seed_words):
        raise ValueError(f"{len(samples)} samples for {len(seed_words)} seed words")
    offset = 0 if earlier is None else len(earlier)
    rows = _generate(seed_words, k, client, prompts, s, benchmark, tag, samples, round_number)
    _revise(rows, client, prompts, s, tag)
    _check_length(rows, k, s)
    _pair(rows, client, prompts, s, tag)
    _templatize(rows)
    _check_minimal(rows, s, seen_templates(earlier), offset)
    _naturalness(rows, client, prompts, s, tag, scorer, judge)
    return _full_table(rows, benchmark, offset)


def seen_templates(full: pd.DataFrame | None) -> list[tuple[int, str]]:
    """(row, template) of every row of ``full`` whose template reached the deduplication: the pairs kept, judged
    unnatural, or set aside beyond the target (``target:``); a later duplicate of one of them is a duplicate. The
    rows the post-conditions discarded never took part (nor did the duplicates, whose templates repeat these)."""
    if full is None or not len(full):
        return []
    reason = full["reason"].fillna("")
    took_part = full["template"].notna() & (
        full["status"].isin(["kept", "unnatural"]) | reason.str.startswith("target:")
    )
    return [(i, str(t)) for i, (t, ok) in enumerate(zip(full["template"], took_part, strict=True)) if ok]


def _alive(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The rows still in the pipeline (no status yet)."""
    return [r for r in rows if r["status"] is None]


def _generate(
    seed_words: list[str],
    k: int,
    client: Any,
    prompts: PromptSet,
    s: GenerateSettings,
    benchmark: str,
    tag: str,
    samples: list[int] | None = None,
    round_number: int = 1,
) -> list[dict[str, Any]]:
    """1. generation: per seed word (occurrence, or the sample ``samples`` gives it) and pronoun; retry answers
    without a usable list. One row per generated sentence, or one discarded row (item -1) per job that never gave a
    list."""
    occurrence: Counter[str] = Counter()
    jobs = []
    for n, word in enumerate(seed_words):
        sample = occurrence[word] if samples is None else int(samples[n])
        for pronoun in PRONOUNS:
            jobs.append({"word": word, "target_word": pronoun, "sample": sample})
        occurrence[word] += 1
    lists: dict[int, list[str]] = {}
    failure: dict[int, str] = {}
    pending = list(range(len(jobs)))
    for attempt in range(max(1, s.generation_max_tries)):
        if not pending:
            break
        reqs = []
        for i in pending:
            job = jobs[i]
            text = prompts.generation.format(
                num_sentences=s.n_sentences, attribute=job["word"], group=job["target_word"], num_words=k
            )
            seed = s.seed + job["sample"] + 100_000 * attempt
            reqs.append(
                _req(text, s.temperature_generation, s.max_tokens_generation, s.top_p, seed, "generation")
            )
        answers = client.chat_many(reqs, desc=f"{tag} generation (try {attempt + 1})")
        still = []
        for i, ans in zip(pending, answers, strict=True):
            items = parse_numbered_list(ans.text, s.strip_quotes)
            if items:
                if len(items) > s.n_sentences:
                    log.info("%s/%s: %d items, keeping the first %d", jobs[i]["word"], jobs[i]["target_word"],
                             len(items), s.n_sentences)  # fmt: skip
                lists[i] = items[: s.n_sentences]
            else:
                failure[i] = "refusal" if is_refusal(ans.text) else "no numbered list in the answer"
                still.append(i)
        pending = still

    rows: list[dict[str, Any]] = []
    for i, job in enumerate(jobs):
        base = {"benchmark": benchmark, "k": k, "round": round_number, **job}
        if i not in lists:
            tries = max(1, s.generation_max_tries)
            rows.append({**base, "item": -1, "status": "discarded",
                         "reason": f"generation: {failure[i]} ({tries} tries)"})  # fmt: skip
            continue
        for j, sent in enumerate(lists[i]):
            rows.append({**base, "item": j, "raw_sentence": sent, "sentence": sent, "is_revised": False,
                         "revision_calls": 0, "status": None, "reason": None})  # fmt: skip
    return rows


def _revise(
    rows: list[dict[str, Any]], client: Any, prompts: PromptSet, s: GenerateSettings, tag: str
) -> None:
    """2. revision: the 4 prompts round robin (each at most revision_max_tries times) on the original sentence;
    then every sentence's word and pronoun checks."""
    need = [r for r in _alive(rows) if not _word_pronoun_ok(r["sentence"], r["word"], r["target_word"], s)]
    for r in need:
        r["reason"] = f"missing {_missing(r['sentence'], r['word'], r['target_word'], s)}"
    n_prompts = len(prompts.revision)
    tries = n_prompts * max(0, s.revision_max_tries)
    if (
        s.revision_max_calls is not None
    ):  # a budget knob for quick runs: the first prompts of the round robin only
        tries = min(tries, s.revision_max_calls)
    for t in range(tries):
        if not need:
            break
        prompt = prompts.revision[t % n_prompts]
        reqs = [
            _req(
                prompt.format(sentence=r["raw_sentence"], attribute=r["word"], group=GROUP[r["target_word"]]),
                s.temperature_revision, s.max_tokens_revision, s.top_p, s.seed + t, "revision",
            )
            for r in need
        ]  # fmt: skip
        answers = client.chat_many(reqs, desc=f"{tag} revision {t + 1}")
        still = []
        for r, ans in zip(need, answers, strict=True):
            revised = parse_single(ans.text, s.strip_quotes)
            if revised and _word_pronoun_ok(revised, r["word"], r["target_word"], s):
                r.update(
                    sentence=revised,
                    is_revised=True,
                    revision_calls=t + 1,
                    revision_prompt=prompt.id,
                    reason=None,
                )
            else:
                still.append(r)
        need = still
    for r in need:
        r["revision_calls"] = tries
        r.update(status="discarded", reason=f"revision: {r['reason']}; no valid revision in {tries} tries")

    for r in rows:
        if r.get("sentence"):
            r["has_word"] = has_word(r["sentence"], r["word"])
            r["has_pronoun"] = has_pronoun(r["sentence"], r["target_word"], s.pronoun_check)


def _check_length(rows: list[dict[str, Any]], k: int, s: GenerateSettings) -> None:
    """2b. optional length check: about k words (after revision, before any editing call)."""
    if s.length_tolerance is None:
        return
    for r in _alive(rows):
        if not length_ok(r["sentence"], k, s.length_tolerance):
            n_words = len(words(r["sentence"]))
            r.update(status="discarded", reason=f"length: {n_words} words, not {k} +- {s.length_tolerance}")


def _pair(rows: list[dict[str, Any]], client: Any, prompts: PromptSet, s: GenerateSettings, tag: str) -> None:
    """3. pairing: the male version of every she-sentence (directly, else by the editing prompt)."""
    to_edit = []
    for r in _alive(rows):
        if r["target_word"] == "he":
            r.update(pairing="identity", sentence_male=r["sentence"])
            continue
        direct = direct_female_to_male(r["sentence"]) if s.pairing == "auto" else None
        if direct is not None:
            r.update(pairing="direct", sentence_male=direct)
        else:
            to_edit.append(r)
    if to_edit:
        reqs = [
            _req(
                prompts.editing.format(from_group=GROUP["she"], to_group=GROUP["he"], sentence=r["sentence"]),
                s.temperature_editing, s.max_tokens_editing, s.top_p, s.seed, "editing",
            )
            for r in to_edit
        ]  # fmt: skip
        for r, ans in zip(to_edit, client.chat_many(reqs, desc=f"{tag} editing"), strict=True):
            male = parse_single(ans.text, s.strip_quotes)
            if not male:
                r.update(status="discarded", reason="editing: no sentence in the answer")
            elif has_female_pronoun(male) or not has_male_pronoun(male):
                r.update(status="discarded", reason=f"editing: not a male version: {male!r}")
            else:
                r.update(pairing="editing", sentence_male=male)
    for r in _alive(rows):
        if r["target_word"] == "she":
            r["modifications"] = modifications(r["sentence_male"], r["sentence"])


def _templatize(rows: list[dict[str, Any]]) -> None:
    """4. template: the male sentence with its pronouns as placeholders."""
    for r in _alive(rows):
        r["template"] = templatize_male(r["sentence_male"])
        r["has_placeholder"] = has_placeholder(r["template"])
        if not r["has_placeholder"]:
            r.update(status="discarded", reason="template: no pronoun placeholder")


def _check_minimal(
    rows: list[dict[str, Any]],
    s: GenerateSettings,
    earlier: Sequence[tuple[int, str]] = (),
    offset: int = 0,
) -> None:
    """4b. post-conditions: a true minimal pair (.minimal); the she-sentence must be its template's female filling
    ("hers" has no placeholder; an edited male version may have changed other words), and an edited male version
    must keep the seed word; then (``dedup``) one row per template, over the earlier rounds' templates too
    (``earlier``: (row, template) from :func:`seen_templates`; this round's rows are numbered from ``offset``)."""
    gendered = frozenset().union(*load_gendered_words())
    for r in _alive(rows):
        r["gendered_words"] = ", ".join(gendered_words(r["template"])) or None
        male, female = fill_template(r["template"], "male"), fill_template(r["template"], "female")
        why = check_minimal_pair(male, female, r["template"], gendered)
        if why is None and r["target_word"] == "she" and female != r["sentence"]:
            why = f"not the template's filling: the she-sentence {r['sentence']!r} is not {female!r}"
        if why is not None:
            r.update(status="discarded", reason=f"minimal pair: {why}")
        elif not has_word(male, r["word"]):
            r.update(status="discarded", reason=f"editing: the male version lost the word {r['word']!r}")
    if s.dedup:
        live = _alive(rows)
        index = {id(r): offset + i for i, r in enumerate(rows)}
        # the earlier rounds' templates first: a template one of them had is this round's duplicate
        row_of = [i for i, _ in earlier] + [index[id(r)] for r in live]
        firsts = first_occurrences([t for _, t in earlier] + [r["template"] for r in live])
        for r, first in zip(live, firsts[len(earlier) :], strict=True):
            if first is not None:
                r.update(status="discarded", reason=f"duplicate: same template as row {row_of[first]}")


def _naturalness(
    rows: list[dict[str, Any]],
    client: Any,
    prompts: PromptSet,
    s: GenerateSettings,
    tag: str,
    scorer: Any,
    judge: Any = None,
) -> None:
    """5. naturalness, cheapest first, each filter seeing only the survivors of the ones before: chat-reply
    detector, log-likelihood under a second model, the paper's semantic filter (the generator's own verdict on
    both fillings), the judge of sense (a larger model's P(Yes) on both fillings). Every row still alive ends kept
    or unnatural."""
    if s.judge_threshold is not None and judge is None:
        # checked before any filter runs: a missing judge must not cost the semantic filter's calls first
        raise ValueError("judge_threshold needs a judge (unstereo.unstereoeval.generate.judge.load_judge)")
    if s.chat_reply_filter:
        _chat_reply_filter(rows, prompts)
    if s.min_token_logprob is not None:
        _logprob_filter(rows, s, scorer)
        if s.judge_threshold is not None and hasattr(scorer, "release"):
            from unstereo.engine.memory import give_back_free_memory

            # the judge's model comes next: the scorer's (SmolLM2: 0.6 GB) is not kept beside it
            scorer.release()
            give_back_free_memory()
    if s.llm_semantic_filter:
        _semantic_filter(_alive(rows), client, prompts, s, tag)
    if s.judge_threshold is not None:
        _judge_filter(rows, s, judge)
    for r in _alive(rows):
        r.update(status="kept", reason=None)


def _chat_reply_filter(rows: list[dict[str, Any]], prompts: PromptSet) -> None:
    """A filling that reads as a chat reply (echoes the task) or is degenerate (repetition) is unnatural."""
    grams = task_ngrams(prompts)
    for r in _alive(rows):
        for g in ("male", "female"):
            text = fill_template(r["template"], g)
            why = chat_reply(text, grams)
            if why:
                r.update(status="unnatural", reason=f"chat reply: {g} {why}")
                break
            why = repetition(text)
            if why:
                r.update(status="unnatural", reason=f"degenerate: {g} {why}")
                break


def _logprob_filter(rows: list[dict[str, Any]], s: GenerateSettings, scorer: Any) -> None:
    """A filling whose token log-likelihood under ``scorer`` is below ``min_token_logprob`` is unnatural."""
    if scorer is None:
        raise ValueError(
            "min_token_logprob needs a scorer (unstereo.unstereoeval.generate.naturalness.make_scorer)"
        )
    live = _alive(rows)
    texts = [fill_template(r["template"], g) for r in live for g in ("male", "female")]
    lps = token_logprob(scorer, texts, s.start_logprob) if texts else []
    for n, r in enumerate(live):
        r["logprob_male"], r["logprob_female"] = lps[2 * n], lps[2 * n + 1]
        low = [
            (g, v) for g, v in (("male", lps[2 * n]), ("female", lps[2 * n + 1])) if v < s.min_token_logprob
        ]
        if low:
            r.update(status="unnatural", reason="log-likelihood: " + ", ".join(
                f"{g} {v:.2f} < {s.min_token_logprob:g}" for g, v in low))  # fmt: skip


def _semantic_filter(
    live: list[dict[str, Any]], client: Any, prompts: PromptSet, s: GenerateSettings, tag: str
) -> None:
    """The paper's semantic filter on ``live``: unnatural unless the generator calls both fillings likely."""
    reqs = [
        _req(
            prompts.semantic_filter.format(sentence=fill_template(r["template"], g)),
            s.temperature_semantic_filter, s.max_tokens_semantic_filter, s.top_p, s.seed, "semantic_filter",
        )
        for r in live
        for g in ("male", "female")
    ]  # fmt: skip
    answers = client.chat_many(reqs, desc=f"{tag} semantic filter") if reqs else []
    for n, r in enumerate(live):
        male, female = (parse_likelihood(a.text) for a in answers[2 * n : 2 * n + 2])
        r["likely_male"], r["likely_female"] = male, female
        r["likely_under"] = str({"male": male or "invalid", "female": female or "invalid"})
        r["is_natural"] = male == "likely" and female == "likely"
        if not r["is_natural"]:
            bad = [g for g, v in (("male", male), ("female", female)) if v != "likely"]
            r.update(status="unnatural", reason="semantic filter: " + ", ".join(
                f"{g} {'unparsable' if v is None else v}" for g, v in zip(bad, [male if g == "male" else female for g in bad], strict=True)
            ))  # fmt: skip


def _judge_filter(rows: list[dict[str, Any]], s: GenerateSettings, judge: Any) -> None:
    """The judge of sense on both fillings of every surviving row (one batch): P(Yes) in ``judge_p_yes_male`` /
    ``_female``; unnatural when either is below ``judge_threshold``."""
    live = _alive(rows)
    if not live:
        return
    texts = [fill_template(r["template"], g) for r in live for g in ("male", "female")]
    # the seconds are the caller's to add up (the generate CLI wraps the judge: judge_seconds in summary.json)
    log.info("judge of sense: %d sentences", len(texts))
    ps = list(judge.p_yes(texts))
    if len(ps) != len(texts):
        raise ValueError(f"the judge gave {len(ps)} scores for {len(texts)} sentences")
    t = s.judge_threshold
    for n, r in enumerate(live):
        r["judge_p_yes_male"], r["judge_p_yes_female"] = ps[2 * n], ps[2 * n + 1]
        low = [(g, p) for g, p in (("male", ps[2 * n]), ("female", ps[2 * n + 1])) if p < t]
        if low:
            r.update(
                status="unnatural",
                reason="judge: " + ", ".join(f"{g} P(Yes) {p:.2f} < {t:g}" for g, p in low),
            )


_BOOL_COLUMNS = ("is_revised", "has_word", "has_pronoun", "has_placeholder", "is_natural")
_INT_COLUMNS = ("k", "round", "sample", "item", "revision_calls")
_FLOAT_COLUMNS = ("logprob_male", "logprob_female", "judge_p_yes_male", "judge_p_yes_female")


def _full_table(rows: list[dict[str, Any]], benchmark: str, offset: int = 0) -> pd.DataFrame:
    """The rows as the full table: every FULL_COLUMNS column, typed, a pair_id on each kept row (its row number,
    counted from ``offset``: the rows of earlier rounds come first)."""
    df = pd.DataFrame(rows)
    for col in FULL_COLUMNS:
        if col not in df.columns:
            df[col] = None
    df["pair_id"] = [
        f"{benchmark}:{offset + i}" if st == "kept" else None for i, st in enumerate(df["status"])
    ]
    for col in _BOOL_COLUMNS:
        df[col] = df[col].astype("boolean")
    for col in _INT_COLUMNS:
        df[col] = df[col].fillna(0).astype("int64")
    for col in _FLOAT_COLUMNS:
        df[col] = df[col].astype("float64")
    for col in df.columns:
        if col not in (*_BOOL_COLUMNS, *_INT_COLUMNS, *_FLOAT_COLUMNS):
            df[col] = df[col].astype(object).where(df[col].notna(), None)
    return df[FULL_COLUMNS]


def to_pairs(full: pd.DataFrame, source: str) -> pd.DataFrame:
    """The kept rows as a PAIRS table (max_pmi / max_pmi_word null: the benchmarks stage adds them). A kept row
    that is not a minimal pair (:func:`.minimal.check_minimal_pair`) is an error: the pipeline never keeps one."""
    kept = full[full["status"] == "kept"]
    for pid, t in zip(kept["pair_id"], kept["template"], strict=True):
        why = check_minimal_pair(fill_template(t, "male"), fill_template(t, "female"), t)
        if why is not None:
            raise ValueError(f"kept pair {pid} ({t!r}) is not a minimal pair: {why}")
    return pd.DataFrame(
        {
            "pair_id": kept["pair_id"].astype(str).tolist(),
            "benchmark": kept["benchmark"].astype(str).tolist(),
            "template": kept["template"].astype(str).tolist(),
            "sentence_female": [fill_template(t, "female") for t in kept["template"]],
            "sentence_male": [fill_template(t, "male") for t in kept["template"]],
            "seed_word": kept["word"].astype(str).tolist(),
            "max_pmi": np.full(len(kept), np.nan),
            "max_pmi_word": pd.Series([None] * len(kept), dtype=object),
            "source": source,
        }
    )


def _rule_counts(reason: pd.Series) -> dict[str, int]:
    """Rows per broken minimal-pair rule (reasons "minimal pair: <rule>: ..."), every rule listed, and the total."""
    prefix = "minimal pair: "
    rules = Counter(rule_of(x[len(prefix) :]) for x in reason.dropna() if x.startswith(prefix))
    return {rule: int(rules[rule]) for rule in RULES} | {"total": int(sum(rules.values()))}


def summarize(full: pd.DataFrame, n_seed_words: int, min_pairs: int | None = None) -> dict[str, Any]:
    """Counts per step (and per pronoun) of one benchmark's full table, and its rounds (:mod:`.rounds`; a table
    without a ``round`` column is one round): ``rounds``, ``kept_per_round`` (after the cut at the target),
    ``target_surplus`` (kept pairs set aside beyond the target), ``min_pairs`` and ``target_reached`` (None
    without a target)."""
    sent = full[full["item"] >= 0]
    reasons = full["reason"].fillna("").str.split(":").str[0]
    rounds = full["round"] if "round" in full else pd.Series(1, index=full.index)
    kept_mask = full["status"] == "kept"
    kept_per_round = [int(kept_mask[rounds == r].sum()) for r in sorted(set(rounds))]

    def by_pronoun(mask: pd.Series) -> dict[str, int]:
        return {p: int((mask & (full["target_word"] == p)).sum()) for p in PRONOUNS} | {
            "total": int(mask.sum())
        }

    return {
        "seed_words": int(n_seed_words),
        "generation_prompts": int(full[["word", "target_word", "sample"]].drop_duplicates().shape[0]),
        "generation_failed": by_pronoun(full["item"] < 0),
        "sentences_generated": by_pronoun(full["item"] >= 0),
        "passed_check_directly": by_pronoun(
            (full["item"] >= 0)
            & (full["is_revised"] == False)  # noqa: E712
            & (reasons != "revision")
        ),
        "revised": by_pronoun(full["is_revised"] == True),  # noqa: E712
        "revision_failed": by_pronoun(reasons == "revision"),
        "paired_direct": int((full["pairing"] == "direct").sum()),
        "paired_editing": int((full["pairing"] == "editing").sum()),
        "editing_failed": int((reasons == "editing").sum()),
        "no_placeholder": int((reasons == "template").sum()),
        "length_failed": int((reasons == "length").sum()),
        "duplicates": int((reasons == "duplicate").sum()),
        "semantic_filter_checked": int(full["likely_under"].notna().sum()),
        "unnatural": by_pronoun(full["status"] == "unnatural"),
        "kept": by_pronoun(full["status"] == "kept"),
        "kept_with_gendered_words": int(((full["status"] == "kept") & full["gendered_words"].notna()).sum()),
        "minimal_pair_rejected": _rule_counts(full["reason"]),
        "chat_reply": int((reasons == "chat reply").sum()),
        "degenerate": int((reasons == "degenerate").sum()),
        "low_log_likelihood": int((reasons == "log-likelihood").sum()),
        "semantic_filter_rejected": int((reasons == "semantic filter").sum()),
        "judge_checked": int(full["judge_p_yes_male"].notna().sum()) if "judge_p_yes_male" in full else 0,
        "judge_rejected": int((reasons == "judge").sum()),
        "yield_per_sentence": round(float((full["status"] == "kept").sum()) / max(1, len(sent)), 4),
        "rounds": len(kept_per_round),
        "kept_per_round": kept_per_round,
        "target_surplus": int((reasons == "target").sum()),
        "min_pairs": min_pairs,
        "target_reached": None if min_pairs is None else bool(kept_mask.sum() >= min_pairs),
    }
