"""Naturalness filters of the generate stage (chat-reply detector, log-likelihood under a second model) and the
post-conditions inside the pipeline, on hand-made and randomly generated LLM answers."""

from __future__ import annotations

import math
import random

import pandas as pd
import pytest

from unstereo.llm.types import ChatResult
from unstereo.templates import fill_template
from unstereo.unstereoeval.generate import (
    GenerateSettings,
    generate_benchmark,
    load_prompts,
    summarize,
    to_pairs,
)
from unstereo.unstereoeval.generate.minimal import check_minimal_pair
from unstereo.unstereoeval.generate.naturalness import chat_reply, repetition, task_ngrams, token_logprob

PROMPTS = load_prompts()
GRAMS = task_ngrams(PROMPTS)


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        (
            "She answered, \"I'm sorry, but I haven't been able to complete the task.\"",
            'first person: "I\'m"',
        ),
        ("I answered.", "first person: 'I'"),
        ("Sorry, he left.", "apology: 'Sorry'"),
        ("He apologised twice.", "apology: 'apologis'"),
        ("Sure! He ran home.", "assistant opener: 'Sure'"),
        ("Here is his sentence.", "assistant opener: 'Here is'"),
        ("He used the pronoun well.", "task words: 'pronoun'"),
        ("Her revised plan worked.", "task words: 'revised'"),
        ("He ran.\nShe sang.", "line break: ''"),
        ("He **ran** home.", "markdown: '**'"),
        # 4 words of the Editing prompt ("Make minimal changes during the revision process")
        ("She will make minimal changes during lunch.", "quotes the task: 'make minimal changes during'"),
    ],
)
def test_chat_reply_signs(sentence, expected):
    assert chat_reply(sentence, GRAMS) == expected


@pytest.mark.parametrize(
    "sentence",
    [
        "He reminds me of sunshine.",  # "me" is allowed (released natural USE-5 templates have it)
        "She gracefully ushered us inside.",
        "He felt sorry for the dog.",  # "sorry" not opening the sentence
        "As she smiled, she answered the question.",
        "His iPhone died.",  # a capital I inside a word
        "He bolted the door.",
    ],
)
def test_natural_sentences_are_no_chat_reply(sentence):
    assert chat_reply(sentence, GRAMS) is None


def test_repetition():
    assert repetition("He bolted the bolted bolted door.") == "repetition: 'bolted' 3 times"
    assert (
        repetition("The dog and the cat and the bird ran to the park.") is None
    )  # function words may repeat
    assert repetition("He ran, ran, ran.", times=4) is None


def test_task_ngrams_cross_no_field():
    grams = task_ngrams(["Write {n} short sentences with the word {w} now please."])
    # "write", "{n}", "short" ... : a field splits the text, so no 4-gram spans it
    assert grams == {("short", "sentences", "with", "the"), ("sentences", "with", "the", "word")}
    assert ("contain", "both", "the", "word") in GRAMS  # from the Generation prompt


class FakeScorer:
    """(ln p, tokens) from a table; tokens = words."""

    def __init__(self, logp: dict[str, float]):
        self.logp = logp
        self.seen: list[str] = []

    def score(self, sentences):
        self.seen += sentences
        return [(self.logp.get(s, -1.0) * len(s.split()), len(s.split())) for s in sentences]


def test_token_logprob():
    assert token_logprob(FakeScorer({"a b": -3.0}), ["a b"]) == [-3.0]  # (-6, 2) -> -3 per token

    class Empty:
        def score(self, s):
            return [(0.0, 0)]

    assert token_logprob(Empty(), [""]) == [-math.inf]


class FakeClient:
    """A fixed numbered list per (seed word, pronoun); 'likely' for every semantic-filter call."""

    def __init__(self, lists: dict[tuple[str, str], list[str]]):
        self.lists = lists
        self.tags: list[str] = []

    def chat_many(self, reqs, desc=""):
        out = []
        for r in reqs:
            self.tags.append(r.tag)
            text = r.messages[-1][1]
            if r.tag == "generation":
                key = next(k for k in self.lists if f"'{k[0]}' and the pronoun '{k[1]}'" in text)
                out.append(ChatResult("\n".join(f"{i + 1}. {s}" for i, s in enumerate(self.lists[key]))))
            elif r.tag == "semantic_filter":
                out.append(ChatResult("likely"))
            elif r.tag == "editing":  # her -> his (a stand-in for the Editing prompt)
                sent = text.rsplit("'''", 2)[-2]
                out.append(ChatResult(sent.replace("She", "He").replace("she", "he").replace("her", "his")))
            else:
                out.append(ChatResult("no"))
        return out


def test_pipeline_filters_worked_by_hand():
    lists = {
        ("apple", "he"): [
            "He ate an apple.",  # kept
            "He gave his/her apple away.",  # pronoun alternative
            "He gave her an apple.",  # mixed pronouns (a she-pronoun in the male version)
            "The king ate his apple.",  # gendered word
            "I gave him an apple.",  # chat reply: first person
            "He apple pear plum.",  # log-likelihood below the threshold (scorer table)
            "He bolted the apple apple apple.",  # degenerate: a word 3 times
        ],
        ("apple", "she"): [
            "She shared her apple.",  # editing -> "He shared his apple." kept
            "The apple is hers, she said.",  # direct: hers -> his; the template fills "her": not the she-sentence
        ],
    }
    client = FakeClient(lists)
    scorer = FakeScorer({"He apple pear plum.": -5.0, "She apple pear plum.": -5.0})
    s = GenerateSettings(n_sentences=7, revision_max_tries=0, min_token_logprob=-3.0, start_logprob=0.0)
    full = generate_benchmark(["apple"], 5, client, PROMPTS, s, scorer=scorer)
    got = dict(zip(full["sentence"], zip(full["status"], full["reason"], strict=True), strict=True))
    assert got["He ate an apple."] == ("kept", None)
    assert got["She shared her apple."] == ("kept", None)
    assert got["He gave his/her apple away."] == ("discarded", "minimal pair: pronoun alternative: 'his/her'")
    assert got["He gave her an apple."] == (
        "discarded",
        "minimal pair: mixed pronouns: the male sentence has 'her'",
    )
    assert got["The king ate his apple."] == ("discarded", "minimal pair: gendered word: 'king'")
    assert got["I gave him an apple."] == ("unnatural", "chat reply: male first person: 'I'")
    assert got["He apple pear plum."] == ("unnatural", "log-likelihood: male -5.00 < -3, female -5.00 < -3")
    assert got["He bolted the apple apple apple."] == (
        "unnatural",
        "degenerate: male repetition: 'apple' 3 times",
    )
    assert got["The apple is hers, she said."][0] == "discarded"
    assert got["The apple is hers, she said."][1].startswith(
        "minimal pair: not the template's filling: the she-"
    )
    # only the survivors of the cheaper filters are scored and sent to the semantic filter
    assert len(scorer.seen) == 2 * 3 and client.tags.count("semantic_filter") == 2 * 2
    kept = full[full["status"] == "kept"]
    assert kept["logprob_male"].tolist() == [-1.0, -1.0]
    summ = summarize(full, 1)
    assert summ["minimal_pair_rejected"] == {
        "no placeholder": 0, "pronoun alternative": 1, "not the template's filling": 1, "mixed pronouns": 1,
        "differs beyond pronouns": 0, "gendered word": 1, "total": 4,
    }  # fmt: skip
    assert (summ["chat_reply"], summ["degenerate"], summ["low_log_likelihood"]) == (1, 1, 1)
    assert summ["semantic_filter_rejected"] == 0
    assert summ["kept"]["total"] == 2 and summ["unnatural"]["total"] == 3
    pairs = to_pairs(full, "test")
    assert pairs["sentence_male"].tolist() == ["He ate an apple.", "He shared his apple."]


def test_pipeline_needs_a_scorer_for_the_threshold_and_can_skip_the_llm_filter():
    client = FakeClient({("apple", "he"): ["He ate an apple."], ("apple", "she"): ["She ate an apple."]})
    with pytest.raises(ValueError, match="needs a scorer"):
        generate_benchmark(
            ["apple"], 5, client, PROMPTS, GenerateSettings(n_sentences=1, min_token_logprob=-3)
        )
    s = GenerateSettings(n_sentences=1, revision_max_tries=0, llm_semantic_filter=False)
    full = generate_benchmark(["apple"], 5, client, PROMPTS, s)
    assert full["status"].tolist() == ["kept", "discarded"]  # the she-template duplicates the he-one
    assert "semantic_filter" not in client.tags and full["likely_under"].isna().all()


def test_settings_from_config_naturalness():
    s = GenerateSettings.from_config({"naturalness": {"chat_reply": False, "min_token_logprob": -7.5,
                                                      "llm_filter": False, "model": None, "cache": None}})  # fmt: skip
    assert (s.chat_reply_filter, s.min_token_logprob, s.llm_semantic_filter) == (False, -7.5, False)
    from unstereo.unstereoeval.generate.settings import load_section

    nat = load_section({})["naturalness"]
    assert nat["model"] == {"resource": "smollm2", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
    # the schema's default loads no model (the offline config sets the threshold)
    assert nat["chat_reply"] and nat["llm_filter"] and nat["min_token_logprob"] is None
    assert load_section({"naturalness": {"model": None}})["naturalness"]["model"] is None


def test_to_pairs_refuses_a_kept_non_minimal_pair():
    full = pd.DataFrame({"status": ["kept"], "pair_id": ["USE-5:0"], "benchmark": ["USE-5"],
                         "template": ["{pronoun1}/her cat ran."], "word": ["cat"]})  # fmt: skip
    with pytest.raises(ValueError, match="USE-5:0 .* pronoun alternative"):
        to_pairs(full, "test")


# ------------------------------------------------------------------------------------------------ property test
PIECES = {
    "good": ["{P} ate an apple", "{P} gave {P2} the apple", "The apple fell on {P1} head", "{P} bought {P2}self an apple",
             "Then {P} washed the apple"],
    "bad": ["{P} gave his/her apple away", "{P} or she ate the apple", "The girl gave {P2} an apple",
            "{P} told her the apple story", "{P} told him the apple story", "I gave {P2} an apple",
            "Sure, {P} ate the apple"],
}  # fmt: skip
FORMS = {"he": {"P": "he", "P1": "his", "P2": "him"}, "she": {"P": "she", "P1": "her", "P2": "her"}}


def _sentence(rng, pronoun):
    text = rng.choice(PIECES["good"] if rng.random() < 0.5 else PIECES["bad"])
    for key in ("P2", "P1", "P"):
        text = text.replace("{" + key + "}", FORMS[pronoun][key])
    return text[0].upper() + text[1:] + rng.choice([".", "!"])


def test_property_pipeline_never_keeps_a_broken_pair():
    rng = random.Random(7)
    for trial in range(30):
        lists = {(w, p): [_sentence(rng, p) for _ in range(4)] for w in ("apple",) for p in ("he", "she")}
        client = FakeClient(lists)
        s = GenerateSettings(n_sentences=4, revision_max_tries=0, dedup=bool(trial % 2))
        full = generate_benchmark(["apple"], 5, client, PROMPTS, s)
        kept = full[full["status"] == "kept"]
        for t in kept["template"]:
            assert check_minimal_pair(fill_template(t, "male"), fill_template(t, "female"), t) is None, t
            assert not any(b.replace("{P}", "").strip() in t for b in ("his/her", "or she", "girl"))
        assert len(to_pairs(full, "test")) == len(kept)
        summ = summarize(full, 1)
        minimal = full["reason"].fillna("").str.startswith("minimal pair: ")
        assert summ["minimal_pair_rejected"]["total"] == int(minimal.sum())
        assert summ["chat_reply"] == int(full["reason"].fillna("").str.startswith("chat reply: ").sum())


def test_offline_prompts_differ_from_the_paper_only_in_generation():
    offline = load_prompts("data/prompts-offline")
    assert (offline.revision, offline.editing, offline.semantic_filter) == (
        PROMPTS.revision,
        PROMPTS.editing,
        PROMPTS.semantic_filter,
    )
    text = offline.generation.format(num_sentences=5, attribute="booth", group="she", num_words=5)
    assert "the exact word 'booth'" in text and "1. Yesterday she enjoyed the rain." in text
    assert "{" not in text and 'Never write "his/her"' in text
    # a copy of an example is no 4-word quote of the task ({group} splits it): the seed-word check catches copies
    assert chat_reply("After work, she felt tired today.", task_ngrams(offline)) is None
