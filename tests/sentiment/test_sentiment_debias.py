"""Counterfactual debiasing's training data (Huang et al. 2020, section 4): sensitive tokens, counterfactual examples,
the corpus's sentences and the S.S._c helper (the fine-tune itself: tests/finetune/test_finetune_regularised.py)."""

from __future__ import annotations

import random

import pytest
from _scoring_models import tiny_gpt2, word_tokenizer

from unstereo.finetune import regularised as R
from unstereo.finetune.text import split_sentences
from unstereo.sentiment import debias as D

TERMS = [
    D.Term("mary", "name", "female"),
    D.Term("champion", "name", "male"),
    D.Term("city", "place", "city"),
]
SENTENCES = [
    "mary went to the store .",
    "i gave mary a book yesterday .",
    "the champion asked nobody .",
    "a dog barked at the champion of the city .",
    "she said hi to the dog .",
    "nobody expected mary to win the long race .",
]


@pytest.fixture()
def lm():
    tok = word_tokenizer()
    return tiny_gpt2(len(tok), seed=1), tok


def encoded(tok):
    rng = random.Random(0)
    out = []
    for s in SENTENCES:
        hit = D.find_term(s, D.term_pattern(TERMS), {t.text: t for t in TERMS})
        if hit and hit[0].attribute == "name":
            term, a, b = hit
            out.append(
                R.encode_example(tok, D.Example(s, a, b, D.counterfactual(term, TERMS, rng), term=term), 32)
            )
    return out


def test_examples_swap_the_sensitive_token(lm):
    _, tok = lm
    batch = encoded(tok)
    assert len(batch) == 5  # mary x3, champion x2 ("the champion of the city": the first term counts)
    ids, pos, cf = batch[0]  # "mary went to the store ." -> prefix "mary", counterfactual "champion"
    assert tok.convert_ids_to_tokens([ids[pos], cf[-1]]) == ["mary", "champion"]
    assert ids[0] == cf[0] == tok.bos_token_id and len(cf) == pos + 1
    examples, held_s, held = D.build_examples(
        SENTENCES, TERMS[:2], max_sentences=10, heldout_fraction=0.25, seed=0
    )
    assert len(held_s) == 1 and len(examples) == 4 and len(held) == 1
    assert all(e.swap != e.term.text and e.swap in ("mary", "champion") for e in examples)
    assert held[0] not in {e.text for e in examples}


def test_mentions():
    assert list(D.mentions(["Mary left", "the primary", "MARY-JANE", "x"], ["mary"])) == [
        True,
        False,
        False,
        False,
    ]


def test_sentence_split_and_terms():
    import pandas as pd

    assert split_sentences(["One two three. Four five six! Seven\nEight nine ten"]) == [
        "One two three.", "Four five six!", "Eight nine ten"]  # fmt: skip
    values = pd.DataFrame({"attribute": ["occupation", "name"], "value": ["an editor", "Amy"], "subgroup": ["", "female"]})  # fmt: skip
    assert D.sensitive_terms(values, ["occupation", "name"]) == [
        D.Term("editor", "occupation", "editor"), D.Term("Amy", "name", "female")]  # fmt: skip
