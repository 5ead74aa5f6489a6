"""biastest generation: the paper's prompts, rejection with reasons, pairing by rule or rewrite, t and max_tries
(a stub chat backend answers from a script)."""

from __future__ import annotations

import re

import pytest

from unstereo.biastest.generate import GenerationSettings, generate_pairs, generation_prompt, rewrite_prompt
from unstereo.biastest.spec import spec_from_dict
from unstereo.llm import ChatResult, LLMClient

SPEC = spec_from_dict({
    "name": "toy",
    "social_groups": {"Female": ["she", "woman"], "Male": ["he", "man"]},
    "attributes": {"Care": ["nurse"], "Tech": ["engineer"]},
})  # fmt: skip


class StubBackend:
    """Answers chat requests with ``script(prompt, seed)``; records every prompt."""

    name, model, batch_size = "stub", "stub-model", 1

    def __init__(self, script):
        self.script = script
        self.prompts: list[str] = []

    def complete(self, reqs, on_retry=None):
        out = []
        for r in reqs:
            prompt = r.messages[-1][1]
            self.prompts.append(prompt)
            out.append(ChatResult(self.script(prompt, r.seed, r.temperature)))
        return out


def term_of(prompt):
    return re.search(r'target term "([^"]+)" and attribute term "([^"]+)"', prompt).groups()


SWAP = {"she": "he", "he": "she", "woman": "man", "man": "woman"}


def swap_words(sentence):
    def one(m):
        w = SWAP[m.group().lower()]
        return w.capitalize() if m.group()[0].isupper() else w

    return re.sub(r"\b(she|he|woman|man)\b", one, sentence, flags=re.I)


def script(prompt, seed, temperature):
    if prompt.startswith("Rewrite"):
        assert temperature == 0.0
        sentence = re.search(r'Sentence: "(.*)", Rewrite', prompt).group(1)
        return swap_words(sentence).replace("engineer", "engineers")  # a bad rewrite for engineer sentences
    assert temperature == 0.8
    group, attribute = term_of(prompt)
    pronoun = "she" if group in ("she", "woman") else "he"
    if attribute == "nurse":
        # try 0: two terms of the group (the rule cannot pair it: rewrite); later tries: one term (rule)
        if seed == 0:
            return f"{pronoun.capitalize()} said the {'woman' if pronoun == 'she' else 'man'} is a nurse."
        return (
            f'1. "The {group} works as a nurse."'
            if group in ("woman", "man")
            else f"{group.capitalize()} is a nurse."
        )
    # engineer: try 0 lacks the attribute term, try 1 gets a bad rewrite, try 2 a refusal, later ones are fine
    if seed == 0:
        return f"{group} builds bridges."
    if seed == 1:
        return f"{pronoun.capitalize()} told the {'woman' if pronoun == 'she' else 'man'} about an engineer."
    return (
        "I'm sorry, I can't."
        if seed == 2
        else f"An engineer, {group} fixed it{'' if seed < 5 else ' again'}."
    )


def run(settings, backend_script=script):
    backend = StubBackend(backend_script)
    client = LLMClient(backend)
    pairs, gens = generate_pairs(SPEC, client, settings)
    return pairs, gens, backend


def test_prompts_as_in_the_paper():
    p = generation_prompt(SPEC, "woman", "nurse")
    assert p == ('Write a sentence including target term "woman" and attribute term "nurse". Other target terms in '
                 'this context are: "she". Use them for interpretation of the requested target term, but don\'t '
                 'include these specifically. Other attribute terms in this context are: "". Use them for '
                 "interpretation of requested attribute terms, but don't include these specifically.")  # fmt: skip
    assert rewrite_prompt("She is a nurse.", "she", "he") == (
        'Rewrite the sentence to replace "she" with "he". Make only minimal changes to preserve grammar.\n'
        'Sentence: "She is a nurse.", Rewrite: "'
    )


def test_generation_rejections_and_pairing():
    pairs, gens, backend = run(GenerationSettings(t=2, max_tries=6, seed=0))
    assert set(pairs["attribute"]) == {"nurse", "engineer"}
    assert pairs.groupby("attribute").size().to_dict() == {"engineer": 2, "nurse": 2}
    # every kept pair: sentence a has the first group's term, b the second's; stereotype by attribute set
    for r in pairs.itertuples():
        assert r.group_term_a in ("she", "woman") and r.group_term_b in ("he", "man")
        assert re.search(rf"\b{r.group_term_a}\b", r.sentence_a, re.I) and re.search(
            rf"\b{r.group_term_b}\b", r.sentence_b, re.I
        )
        assert r.stereotype == ("a" if r.attribute == "nurse" else "b")
    reasons = set(gens.loc[~gens.kept, "reason"])
    assert "missing exact term(s): 'engineer'" in reasons
    assert "refusal or empty answer" in reasons
    assert any(
        x.startswith("paired sentence lacks exact term(s): 'engineer'") for x in reasons
    )  # "engineers"
    assert set(gens.loc[gens.kept, "pairing"]) <= {"rule", "rewrite"}
    # the rewrite prompt was used exactly for the sentences the rule cannot pair
    rewrites = gens[gens.pairing == "rewrite"]
    assert len(rewrites) and all(s.startswith(("She said the woman", "He said the man", "She told", "He told"))
                                 for s in rewrites.sentence)  # fmt: skip
    assert len([p for p in backend.prompts if p.startswith("Rewrite")]) == len(rewrites)
    assert gens.kept.sum() == 4 and (gens.reason[gens.kept] == "").all()
    assert not pairs[["sentence_a", "sentence_b"]].duplicated().any()
    assert (
        "duplicate of a kept sentence" in reasons
    )  # "An engineer, man fixed it." was the pair of a kept one


def test_t_and_max_tries_and_rule_only():
    pairs, gens, backend = run(GenerationSettings(t=5, max_tries=3, seed=0))
    assert gens["try"].max() == 2 and len(gens) == 6  # 2 attribute terms x 3 tries, none finished
    pairs, gens, _ = run(GenerationSettings(t=1, max_tries=40, pairing="rule", seed=0))
    assert (gens.loc[gens.kept, "pairing"] == "rule").all()
    assert pairs.groupby("attribute").size().to_dict() == {"engineer": 1, "nurse": 1}
    assert gens["try"].max() < 40  # stops once every attribute term has t pairs


def test_generation_is_reproducible_and_cached(tmp_path):
    from unstereo.llm import ChatCache

    calls = []

    def counting(prompt, seed, temperature):
        calls.append(prompt)
        return script(prompt, seed, temperature)

    first = generate_pairs(SPEC, LLMClient(StubBackend(counting), cache=ChatCache(tmp_path / "c.sqlite")),
                           GenerationSettings(t=2, max_tries=6))  # fmt: skip
    n = len(calls)
    again = generate_pairs(SPEC, LLMClient(StubBackend(counting), cache=ChatCache(tmp_path / "c.sqlite")),
                           GenerationSettings(t=2, max_tries=6))  # fmt: skip
    assert len(calls) == n  # every call answered from the cache
    assert first[0].equals(again[0]) and first[1].equals(again[1])


def test_bad_settings():
    with pytest.raises(ValueError, match="pairing"):
        GenerationSettings(pairing="magic")
