"""Quality filters of the generate stage: dedup, the "about k words" check, other gendered words (hand-made)."""

from __future__ import annotations

from unstereo.llm.types import ChatResult
from unstereo.templates import words
from unstereo.unstereoeval.filters import dedup_key, first_occurrences, gendered_words, length_ok
from unstereo.unstereoeval.generate import GenerateSettings, generate_benchmark, load_prompts, summarize


def test_words_strip_punctuation_keep_placeholders():
    assert words("He said: 'no' -- twice.") == ["He", "said", "no", "twice"]
    assert words("{pronoun} bought it {pronoun2}self, well-known!") == [
        "{pronoun}", "bought", "it", "{pronoun2}self", "well-known"
    ]  # fmt: skip
    assert words(" … ") == []


def test_dedup_key_and_first_occurrences():
    assert dedup_key("{pronoun} bolted  the Woman.") == dedup_key("{pronoun} bolted the woman!")
    assert dedup_key("{pronoun} ran.") != dedup_key("{pronoun1} ran.")
    bolted = "{pronoun} bolted bolted the woman to the bolted bolted."
    templates = [
        bolted,
        "{pronoun} ran.",
        bolted,
        bolted.upper().replace("{PRONOUN}", "{pronoun}"),
        "{pronoun} ran",
    ]
    assert first_occurrences(templates) == [None, None, 0, 0, 1]


def test_length_ok():
    assert length_ok("He ate an apple today.", 5, 0)  # 5 words
    assert not length_ok("He ate an apple.", 5, 0)  # 4 words
    assert length_ok("He ate an apple.", 5, 1)
    assert not length_ok("He ate the apple quickly today at noon.", 5, 2)  # 8 words
    assert length_ok("He ate the apple quickly today at noon.", 5, None)  # no check


def test_gendered_words_exclude_pronouns():
    assert gendered_words("{pronoun} and {pronoun1} Mother met the king, and the mother left.") == [
        "mother",
        "king",
    ]
    assert gendered_words("She told her brother about himself.") == ["brother"]  # pronouns are not flagged
    assert gendered_words("{pronoun} ate an apple.") == []


class FakeClient:
    """Answers by step (``tag``): a fixed numbered list per generation prompt, 'likely' for every filter call."""

    def __init__(self, lists: dict[str, str]):
        self.lists = lists
        self.tags: list[str] = []

    def chat_many(self, reqs, desc=""):
        out = []
        for r in reqs:
            self.tags.append(r.tag)
            text = r.messages[-1][1]
            if r.tag == "generation":
                out.append(ChatResult(self.lists["she" if "pronoun 'she'" in text else "he"]))
            elif r.tag == "semantic_filter":
                out.append(ChatResult("likely"))
            else:
                raise AssertionError(f"unexpected call {r.tag}")
        return out


LISTS = {
    "he": "1. He ate an apple.\n2. He ate an apple!\n3. He ate the apple quickly today at noon.",
    "she": "1. She ate an apple.\n2. She, a mother, loves an apple.",
}


def test_pipeline_dedups_checks_length_and_flags():
    client = FakeClient(LISTS)
    s = GenerateSettings(n_sentences=3, revision_max_tries=1, length_tolerance=1)
    full = generate_benchmark(["apple"], 5, client, load_prompts(), s)
    assert full["status"].tolist() == ["kept", "discarded", "discarded", "discarded", "discarded"]
    assert full["reason"].tolist()[1:] == [
        "duplicate: same template as row 0",
        "length: 8 words, not 5 +- 1",
        "duplicate: same template as row 0",
        # a pair with another gendered word is no minimal pair: discarded (it was kept and flagged before)
        "minimal pair: gendered word: 'mother'",
    ]
    assert full["gendered_words"].tolist() == [None, None, None, None, "mother"]
    # the duplicates and the gendered pair never reach the semantic filter: 1 kept row x 2 fillings
    assert client.tags.count("semantic_filter") == 2
    summ = summarize(full, 1)
    assert (summ["duplicates"], summ["length_failed"], summ["kept"]["total"]) == (2, 1, 1)
    assert summ["kept_with_gendered_words"] == 0 and summ["minimal_pair_rejected"]["gendered word"] == 1


def test_pipeline_without_dedup_keeps_repeats():
    client = FakeClient(LISTS)
    s = GenerateSettings(n_sentences=3, revision_max_tries=1, dedup=False)
    full = generate_benchmark(["apple"], 5, client, load_prompts(), s)
    assert (full["status"] == "kept").sum() == 4  # the fifth has "mother"
    summ = summarize(full, 1)
    assert (summ["duplicates"], summ["length_failed"]) == (0, 0)
    assert GenerateSettings.from_config({"dedup": False, "length_tolerance": 2}).length_tolerance == 2


class ReviseNeverClient(FakeClient):
    """Generation lists without the seed word; every revision answer still lacks it."""

    def chat_many(self, reqs, desc=""):
        if reqs[0].tag != "revision":
            return super().chat_many(reqs, desc)
        self.tags += [r.tag for r in reqs]
        return [ChatResult("He ate a pear.") for _ in reqs]


def test_revision_budget_caps_calls_per_sentence():
    lists = {"he": "1. He ate a pear.", "she": "1. She ate a pear."}
    # 2 sentences (one per pronoun) x 4 prompts x 2 tries = 16 calls without a budget; 3 per sentence with it
    for budget, calls in ((None, 16), (3, 6), (0, 0)):
        client = ReviseNeverClient(lists)
        s = GenerateSettings(n_sentences=1, revision_max_tries=2, revision_max_calls=budget)
        full = generate_benchmark(["apple"], 5, client, load_prompts(), s)
        assert client.tags.count("revision") == calls
        tries = 8 if budget is None else budget
        assert full["reason"].str.endswith(f"no valid revision in {tries} tries").all()
        assert (full["revision_calls"] == tries).all()
