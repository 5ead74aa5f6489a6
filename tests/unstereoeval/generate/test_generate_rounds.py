"""Generation to a target (unstereo.unstereoeval.generate.rounds): the schedule of rounds on hand-made word lists,
and the loop over a scripted backend behind the real LLM client (its SQLite cache in tmp_path)."""

from __future__ import annotations

import json
import re

import pandas as pd
import pytest
from click.testing import CliRunner

from unstereo.llm import ChatCache, ChatResult, LLMClient
from unstereo.unstereoeval.filters import dedup_key
from unstereo.unstereoeval.generate import GenerateSettings, generate_benchmark, load_prompts, summarize
from unstereo.unstereoeval.generate.rounds import cut_at_target, generate_to_target, schedule

PROMPTS = load_prompts()
ADVERBS = ["quickly", "slowly", "happily", "calmly", "gladly", "loudly", "softly", "proudly"]
BARREN = {"fig"}  # words whose generation answer is a refusal: no sentence, no pair
SETTINGS = GenerateSettings(n_sentences=3, revision_max_tries=0, generation_max_tries=1, seed=0)
WORDS = ["apple", "pear", "plum", "fig", "lime", "kiwi"]


def answer(prompt: str, seed: int) -> str:
    """The scripted generator: per (word, pronoun, sample = seed - SETTINGS.seed) a fixed list. A he-list holds a
    new sentence and the sample-0 one (a duplicate within round 1, and of round 1's template in a later round); a
    she-list one new sentence (paired directly). So a word keeps 2 pairs at every sample. The semantic filter
    calls every filling likely."""
    if prompt.startswith("Would you say"):
        return "likely"
    m = re.search(r"the word '([^']+)' and the pronoun '(he|she)'", prompt)
    assert m, f"unexpected prompt {prompt!r}"
    word, pronoun = m.groups()
    if word in BARREN:
        return "I'm sorry, but I can't help with that."
    sample = seed - SETTINGS.seed
    if pronoun == "he":
        items = [f"He ate the {word} {ADVERBS[sample]}.", f"He ate the {word} {ADVERBS[0]}."]
    else:
        items = [f"She sold the {word} {ADVERBS[sample]}."]
    return "\n".join(f"{i + 1}. {s}" for i, s in enumerate(items))


class Backend:
    """A chat backend answering :func:`answer`; records the generation prompts and counts every request."""

    name, model, batch_size = "scripted", "m", 4

    def __init__(self):
        self.prompts: list[str] = []
        self.tags: list[str] = []

    def complete(self, reqs, on_retry=None):
        out = []
        for r in reqs:
            assert r.tag in ("generation", "semantic_filter"), r.tag  # no revision, direct pairing
            self.tags.append(r.tag)
            if r.tag == "generation":
                self.prompts.append(r.messages[-1][1])
            out.append(ChatResult(answer(r.messages[-1][1], r.seed), prompt_tokens=10, completion_tokens=5))
        return out


def client(cache=None) -> LLMClient:
    return LLMClient(Backend(), cache=ChatCache(cache))


def run(words=WORDS, cache=None, settings=SETTINGS, **kw):
    kw = {"max_seed_words": 2, "samples_per_word": 2, **kw}
    c = client(cache)
    return generate_to_target(words, 5, c, PROMPTS, settings, **kw), c


def kept_keys(full: pd.DataFrame) -> list[str]:
    """The dedup keys of the templates that passed every filter (kept, or set aside beyond the target)."""
    passed = (full["status"] == "kept") | full["reason"].fillna("").str.startswith("target:")
    return [dedup_key(t) for t in full.loc[passed, "template"]]


# ------------------------------------------------------------------------------------------------ schedule
def test_schedule_blocks_of_words_then_samples():
    rounds = schedule(list("abcdefghij"), 3, 2)
    assert [r.jobs for r in rounds] == [
        (("a", 0), ("b", 0), ("c", 0)),
        (("a", 1), ("b", 1), ("c", 1)),
        (("d", 0), ("e", 0), ("f", 0)),
        (("d", 1), ("e", 1), ("f", 1)),
        (("g", 0), ("h", 0), ("i", 0)),
        (("g", 1), ("h", 1), ("i", 1)),
        (("j", 0),),
        (("j", 1),),
    ]
    assert [r.number for r in rounds] == list(range(1, 9))
    assert [r.words_used for r in rounds] == [3, 3, 6, 6, 9, 9, 10, 10]
    assert [(r.block, r.sample_pass) for r in rounds[:3]] == [(0, 0), (0, 1), (1, 0)]
    assert [r.jobs for r in schedule(list("abc"), 3, 1)] == [(("a", 0), ("b", 0), ("c", 0))]
    # no limit: one block of every word
    assert [r.words for r in schedule(list("abc"), None, 2)] == [["a", "b", "c"]] * 2
    assert schedule([], 3, 2) == []


def test_schedule_gives_a_repeated_word_its_next_sample():
    # round 1 is the single pass (a word's n-th listing is sample n); no (word, sample) comes twice
    rounds = schedule(["a", "b", "a", "c"], 3, 2)
    assert [r.jobs for r in rounds] == [
        (("a", 0), ("b", 0), ("a", 1)),
        (("a", 2), ("b", 1), ("a", 3)),
        (("c", 0),),
        (("c", 1),),
    ]
    jobs = [j for r in schedule(["a", "b", "a", "b", "a"], 2, 3) for j in r.jobs]
    assert len(jobs) == len(set(jobs)) == 15
    with pytest.raises(ValueError, match="samples_per_word"):
        schedule(["a"], 1, 0)


# ------------------------------------------------------------------------------------------------ the loop
def test_stops_at_the_target_and_sets_the_surplus_aside():
    res, _ = run(min_pairs=5)
    full = res.full
    # round 1 (apple, pear at sample 0) keeps 4; round 2 (sample 1) 4 more: the target is reached there
    assert [r.number for r in res.rounds] == [1, 2] and res.stopped == "target"
    assert full["round"].tolist() == [1] * 6 + [2] * 6
    assert (full["status"] == "kept").sum() == 5 and res.target_reached and res.seed_words == 2
    target = full[full["reason"].fillna("").str.startswith("target:")]
    # the first 5 kept in generation order stay; the 3 later ones are set aside, with no pair id
    assert target.index.tolist() == [8, 9, 11] and (target["status"] == "discarded").all()
    assert target["pair_id"].isna().all()
    kept = full[full["status"] == "kept"]
    assert kept.index.tolist() == [0, 2, 3, 5, 6]
    assert kept["pair_id"].tolist() == [f"USE-5:{i}" for i in kept.index]
    s = summarize(full, res.seed_words, res.min_pairs)
    assert (s["rounds"], s["kept_per_round"], s["target_surplus"]) == (2, [4, 1], 3)
    assert (s["min_pairs"], s["target_reached"], s["kept"]["total"], s["seed_words"]) == (5, True, 5, 2)
    assert s["generation_prompts"] == 8  # (apple, pear) x (he, she) x samples 0, 1


def test_no_template_is_kept_twice_across_rounds():
    res, _ = run(min_pairs=100, max_rounds=4)
    full = res.full
    keys = kept_keys(full)
    assert len(keys) == len(set(keys)) == 12  # 4 rounds x 2 words x 2 pairs, but fig gives none
    # round 2's he-lists repeat round 1's first sentence: deduplicated against round 1's rows (by their row number
    # in the whole table), before any naturalness filter
    r2 = full[(full["round"] == 2) & (full["reason"].fillna("").str.startswith("duplicate"))]
    assert r2["sentence"].tolist() == ["He ate the apple quickly.", "He ate the pear quickly."]
    assert r2["reason"].tolist() == [
        "duplicate: same template as row 0",
        "duplicate: same template as row 3",
    ]
    assert full["pair_id"].dropna().is_unique


def test_duplicates_across_rounds_cost_no_filter_call():
    class Judge:
        def __init__(self):
            self.sentences: list[str] = []

        def p_yes(self, sentences):
            self.sentences += sentences
            return [0.9] * len(sentences)

    judge = Judge()
    settings = GenerateSettings(**{**SETTINGS.__dict__, "judge_threshold": 0.5})
    res, c = run(min_pairs=100, max_rounds=3, settings=settings, judge=judge)
    # 10 pairs (apple, pear: 2 each at samples 0 and 1; plum: 2 at sample 0; fig none), each judged once
    assert len(judge.sentences) == len(set(judge.sentences)) == 2 * 10
    assert res.full["judge_p_yes_male"].notna().sum() == 10
    # nor the semantic filter (the generator's verdict on both fillings, before the judge)
    assert c.backend.tags.count("semantic_filter") == 2 * 10


def test_stops_at_the_budget():
    res, _ = run(min_pairs=100, max_rounds=3)
    assert len(res.rounds) == 3 and res.stopped == "max_rounds" and res.target_reached is False
    # round 3 is the second block's sample 0: plum and fig (which gives no sentence)
    assert res.seed_words == 4
    s = summarize(res.full, res.seed_words, res.min_pairs)
    assert (s["rounds"], s["kept_per_round"], s["target_reached"]) == (3, [4, 4, 2], False)
    assert s["target_surplus"] == 0
    assert s["generation_failed"]["total"] == 2  # fig, he and she


def test_stops_when_the_seed_words_run_out():
    res, _ = run(words=["apple", "pear", "plum"], min_pairs=100, max_rounds=8)
    assert [r.jobs for r in res.rounds] == [
        (("apple", 0), ("pear", 0)),
        (("apple", 1), ("pear", 1)),
        (("plum", 0),),
        (("plum", 1),),
    ]
    assert res.stopped == "seed words" and res.target_reached is False and res.seed_words == 3
    assert (res.full["status"] == "kept").sum() == 12


def test_a_rerun_with_the_same_cache_calls_nothing(tmp_path):
    cache = tmp_path / "llm-cache.sqlite"
    first, c1 = run(cache=cache, min_pairs=9)
    assert len(first.rounds) == 3 and len(c1.backend.prompts) == 2 * (2 + 2 + 2)
    again, c2 = run(cache=cache, min_pairs=9)
    assert c2.backend.tags == []  # every call of every round from the cache
    pd.testing.assert_frame_equal(first.full, again.full)
    # 12 generation calls (3 rounds x 2 words x 2 pronouns), the semantic filter on both fillings of 10 pairs
    assert c2.usage.total()["cache_hits"] == len(c1.backend.tags) == 12 + 2 * 10


def test_round_one_is_the_single_pass_and_its_calls(tmp_path):
    """min_pairs null: one round, the table of the single pass over the first max_seed_words words; and with a
    target, round 1 sends exactly the single pass's requests (a cache filled by it answers round 1 whole)."""
    cache = tmp_path / "llm-cache.sqlite"
    single = generate_benchmark(WORDS[:2], 5, client(cache), PROMPTS, SETTINGS)
    res, c = run(cache=tmp_path / "other.sqlite", min_pairs=None, max_rounds=5)
    assert len(res.rounds) == 1 and res.stopped == "single pass" and res.target_reached is None
    pd.testing.assert_frame_equal(res.full, single)
    assert len(c.backend.prompts) == 4 and (res.full["round"] == 1).all()
    s = summarize(res.full, res.seed_words, res.min_pairs)
    assert (s["rounds"], s["min_pairs"], s["target_reached"], s["seed_words"]) == (1, None, None, 2)
    # a table without a round column (written before rounds) is one round
    assert summarize(single.drop(columns="round"), 2)["kept_per_round"] == [4]
    targeted, c2 = run(cache=cache, min_pairs=6)
    assert len(c2.backend.prompts) == 4  # round 2's only
    pd.testing.assert_frame_equal(targeted.full[targeted.full["round"] == 1], single)


def test_cut_at_target_keeps_the_first_kept_rows():
    full = pd.DataFrame({"status": ["kept", "unnatural", "kept", "kept"], "reason": [None, "x", None, None],
                         "pair_id": ["B:0", None, "B:2", "B:3"]})  # fmt: skip
    cut = cut_at_target(full, 2)
    assert cut["status"].tolist() == ["kept", "unnatural", "kept", "discarded"]
    assert cut["reason"][3].startswith("target:") and cut["pair_id"][3] is None
    assert full["status"][3] == "kept"  # a copy
    pd.testing.assert_frame_equal(cut_at_target(full, 3), full)


def test_cli_run_generates_to_the_target(tmp_path, monkeypatch):
    from llm_test_server import Reply, ScriptedServer, user_text

    from unstereo.cli import cli
    from unstereo.tables import PAIRS, read_table

    monkeypatch.setenv("UNSTEREO_TEST_KEY", "sk-test")
    (tmp_path / "seeds.csv").write_text("word\n" + "\n".join(WORDS) + "\n")
    out = tmp_path / "results" / "generate" / "USE-5"
    with ScriptedServer(lambda body, index: Reply(answer(user_text(body), body["seed"]))) as srv:
        settings = {"model": {"endpoint": srv.base_url, "name": "m", "api_key_env": "UNSTEREO_TEST_KEY"},
                    "n_sentences": 3, "revision_max_tries": 0, "generation_max_tries": 1, "seed": 0,
                    "max_retries": 0, "max_seed_words": 2, "min_pairs": 10, "max_rounds": 8,
                    "naturalness": {"min_token_logprob": None}}  # fmt: skip
        args = ["generate", "run", "--seed-words", str(tmp_path / "seeds.csv"), "--benchmark", "USE-5",
                "-o", str(out), "--settings", json.dumps(settings)]  # fmt: skip
        res = CliRunner().invoke(cli, args)
    assert res.exit_code == 0, res.output
    summary = json.loads((out / "summary.json").read_text())
    # rounds: (apple, pear) x 2 samples keep 8; round 3 (plum, fig at sample 0) 2 more: the target
    assert (summary["rounds"], summary["kept_per_round"], summary["min_pairs"]) == (3, [4, 4, 2], 10)
    assert summary["target_reached"] is True and summary["seed_words"] == 4 and summary["stopped"] == "target"
    assert len(read_table(out / "pairs.parquet", PAIRS)) == 10 == summary["kept"]["total"]
    assert read_table(out / "full.parquet")["round"].max() == 3
