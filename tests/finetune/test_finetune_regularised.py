"""The shared fine-tune (unstereo.finetune) on a tiny random GPT-2: one step of Huang et al.'s embedding or sentiment
regularisation moves the hidden states of a prefix and its counterfactual closer; the loop resumes from its checkpoint
to the same weights; perplexity is exp of the LM loss."""

from __future__ import annotations

import math

import pytest
import torch
from _float_tolerance import f32_sum_tol
from _scoring_models import tiny_gpt2, word_tokenizer

from unstereo.finetune import regularised as R
from unstereo.finetune.language_model import lm_loss
from unstereo.finetune.perplexity import perplexity

# (sentence, its sensitive name, the counterfactual name): the names of the sentiment test's sentences
EXAMPLES = [
    ("mary went to the store .", "mary", "champion"),
    ("i gave mary a book yesterday .", "mary", "champion"),
    ("the champion asked nobody .", "champion", "mary"),
    ("a dog barked at the champion of the city .", "champion", "mary"),
    ("nobody expected mary to win the long race .", "mary", "champion"),
]


@pytest.fixture()
def lm():
    tok = word_tokenizer()
    return tiny_gpt2(len(tok), seed=1), tok


def encoded(tok):
    out = []
    for s, word, swap in EXAMPLES:
        a = s.index(word)
        out.append(R.encode_example(tok, R.CounterfactualExample(s, a, a + len(word), swap), 32))
    return out


def test_examples_encode_the_prefix_and_its_counterfactual(lm):
    _, tok = lm
    ids, pos, cf = encoded(tok)[0]  # "mary went to the store ." -> prefix "mary", counterfactual "champion"
    assert tok.convert_ids_to_tokens([ids[pos], cf[-1]]) == ["mary", "champion"]
    assert ids[0] == cf[0] == tok.bos_token_id and len(cf) == pos + 1
    assert (
        R.encode_example(tok, R.CounterfactualExample(EXAMPLES[1][0], 7, 11, "champion"), 3) is None
    )  # the prefix does not fit


def distance(model, tok, batch, method="embedding", head=None):
    with torch.no_grad():
        h_x, *_ = R.features_at(model, [b[0] for b in batch], [b[1] for b in batch], tok.pad_token_id)
        h_cf, *_ = R.features_at(
            model, [b[2] for b in batch], [len(b[2]) - 1 for b in batch], tok.pad_token_id
        )
        return float(R.fairness_loss(h_x, h_cf, method, head))


def test_one_embedding_step_moves_the_hidden_states_closer(lm):
    model, tok = lm
    batch = encoded(tok)
    before = distance(model, tok, batch)
    assert before > 0.01
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    # eval mode (no dropout), so the loss's fairness term is the distance measured above; a small step along the
    # gradient of L_LM + lambda * d, with lambda large enough that d dominates
    loss, l_lm, l_fair = R.debias_loss(model, tok, batch, lam=10.0, method="embedding")
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
    head = R.make_head(model.config.n_embd, hidden=8, seed=3)
    for p in head.parameters():
        p.requires_grad_(False)
    before = distance(model, tok, batch, "sentiment", head)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    loss, *_ = R.debias_loss(model, tok, batch, lam=100.0, method="sentiment", head=head)
    loss.backward()
    opt.step()
    assert distance(model, tok, batch, "sentiment", head) < before


def test_finetune_resumes_from_its_checkpoint(tmp_path):
    tok = word_tokenizer()
    batch = encoded(tok)
    kw = dict(method="embedding", lam=1.0, steps=3, batch_size=2, lr=1e-2, checkpoint_every=1, seed=0)
    whole = tiny_gpt2(len(tok), seed=1)
    hist = R.finetune(whole, tok, batch, out_dir=tmp_path / "a", **kw)
    assert [h["step"] for h in hist] == [1, 2, 3] and not (tmp_path / "a" / "checkpoint.pt").exists()

    def kill(step):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        R.finetune(tiny_gpt2(len(tok), seed=1), tok, batch, out_dir=tmp_path / "b", after_step=kill, **kw)
    assert (tmp_path / "b" / "checkpoint.pt").exists()
    resumed = tiny_gpt2(len(tok), seed=1)
    hist2 = R.finetune(resumed, tok, batch, out_dir=tmp_path / "b", **kw)
    assert [h["step"] for h in hist2] == [1, 2, 3] and hist2[-1]["loss"] == pytest.approx(hist[-1]["loss"])
    for a, b in zip(whole.parameters(), resumed.parameters(), strict=True):
        # the same three SGD steps from the same checkpoint on one machine: identical up to the order of float32
        # sums (a resumed run's state is reloaded, not recomputed); 1e-6 is ~8 eps of parameters of size < 1
        assert torch.allclose(a, b, atol=1e-6)


def test_perplexity_is_exp_of_the_lm_loss(lm):
    model, tok = lm
    text = "mary went to the store ."
    ids = [tok.bos_token_id, *tok(text, add_special_tokens=False)["input_ids"]]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits
    nll = lm_loss(logits, torch.tensor([ids]), torch.ones(1, len(ids), dtype=torch.long))
    # exp of a float32 mean of 6 log-probs: its relative error is the mean's absolute error (f32_sum_tol, over 6)
    assert perplexity(model, tok, [text]) == pytest.approx(
        math.exp(float(nll)), rel=f32_sum_tol(float(nll) * 7, 7) / 7
    )
