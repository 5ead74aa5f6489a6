"""Counterfactual debiasing (Huang et al. 2020, section 4) on a tiny random GPT-2: one step moves the hidden states of
a prefix and its counterfactual closer; resumable checkpoints; examples, perplexity, similarity helpers."""

from __future__ import annotations

import math
import random

import pytest
import torch
from _float_tolerance import f32_sum_tol
from _scoring_models import tiny_gpt2, word_tokenizer

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
                D.encode_example(tok, D.Example(s, term, a, b, D.counterfactual(term, TERMS, rng)), 32)
            )
    return out


def distance(model, tok, batch, method="embedding", head=None):
    with torch.no_grad():
        h_x, *_ = D.features_at(model, [b[0] for b in batch], [b[1] for b in batch], tok.pad_token_id)
        h_cf, *_ = D.features_at(
            model, [b[2] for b in batch], [len(b[2]) - 1 for b in batch], tok.pad_token_id
        )
        return float(D.fairness_loss(h_x, h_cf, method, head))


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


def test_one_embedding_step_moves_the_hidden_states_closer(lm):
    model, tok = lm
    batch = encoded(tok)
    before = distance(model, tok, batch)
    assert before > 0.01
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    # eval mode (no dropout), so the loss's fairness term is the distance measured above; a small step along the
    # gradient of L_LM + lambda * d, with lambda large enough that d dominates
    loss, l_lm, l_fair = D.debias_loss(model, tok, batch, lam=10.0, method="embedding")
    # float32 cosine distance and mean losses over a few hundred terms (hidden size x tokens), computed in other
    # batches: rel 1e-4 is ~800 float32 eps, the error of a few-hundred-term float32 sum with the per-term error
    # of tests/_float_tolerance.py
    assert l_fair.item() == pytest.approx(before, rel=1e-4)
    assert loss.item() == pytest.approx(l_lm.item() + 10 * before, rel=1e-4)
    loss.backward()
    opt.step()
    assert distance(model, tok, batch) < before


def test_one_sentiment_step_moves_the_head_projections_closer(lm):
    model, tok = lm
    batch = encoded(tok)
    head = D.make_head(model.config.n_embd, hidden=8, seed=3)
    for p in head.parameters():
        p.requires_grad_(False)
    before = distance(model, tok, batch, "sentiment", head)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss, *_ = D.debias_loss(model, tok, batch, lam=100.0, method="sentiment", head=head)
    loss.backward()
    opt.step()
    assert distance(model, tok, batch, "sentiment", head) < before


def test_finetune_resumes_from_its_checkpoint(tmp_path):
    tok = word_tokenizer()
    batch = encoded(tok)
    kw = dict(method="embedding", lam=1.0, steps=3, batch_size=2, lr=1e-2, checkpoint_every=1, seed=0)
    whole = tiny_gpt2(len(tok), seed=1)
    hist = D.finetune(whole, tok, batch, out_dir=tmp_path / "a", **kw)
    assert [h["step"] for h in hist] == [1, 2, 3] and not (tmp_path / "a" / "checkpoint.pt").exists()

    def kill(step):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        D.finetune(tiny_gpt2(len(tok), seed=1), tok, batch, out_dir=tmp_path / "b", after_step=kill, **kw)
    assert (tmp_path / "b" / "checkpoint.pt").exists()
    resumed = tiny_gpt2(len(tok), seed=1)
    hist2 = D.finetune(resumed, tok, batch, out_dir=tmp_path / "b", **kw)
    assert [h["step"] for h in hist2] == [1, 2, 3] and hist2[-1]["loss"] == pytest.approx(hist[-1]["loss"])
    for a, b in zip(whole.parameters(), resumed.parameters(), strict=True):
        # the same three SGD steps from the same checkpoint on one machine: identical up to the order of float32
        # sums (a resumed run's state is reloaded, not recomputed); 1e-6 is ~8 eps of parameters of size < 1
        assert torch.allclose(a, b, atol=1e-6)


def test_perplexity_and_mentions(lm):
    model, tok = lm
    text = "mary went to the store ."
    ids = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits
    nll = D.lm_loss(logits, torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long))
    # exp of a float32 mean of 6 log-probs: its relative error is the mean's absolute error (f32_sum_tol, over 6)
    assert D.perplexity(model, tok, [text]) == pytest.approx(
        math.exp(float(nll)), rel=f32_sum_tol(float(nll) * 7, 7) / 7
    )
    assert list(D.mentions(["Mary left", "the primary", "MARY-JANE", "x"], ["mary"])) == [
        True,
        False,
        False,
        False,
    ]


def test_sentence_split_and_terms():
    import pandas as pd

    assert D.split_sentences(["One two three. Four five six! Seven\nEight nine ten"]) == [
        "One two three.", "Four five six!", "Eight nine ten"]  # fmt: skip
    values = pd.DataFrame({"attribute": ["occupation", "name"], "value": ["an editor", "Amy"], "subgroup": ["", "female"]})  # fmt: skip
    assert D.sensitive_terms(values, ["occupation", "name"]) == [
        D.Term("editor", "occupation", "editor"), D.Term("Amy", "name", "female")]  # fmt: skip
