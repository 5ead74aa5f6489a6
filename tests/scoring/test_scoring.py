"""Unit tests of the scorers: definition on a hand-made bigram model, BOS policy, batch independence, OOM halving,
agreement with a plain per-token computation on a tiny random GPT-2, masked PLL on a tiny random BERT."""

from __future__ import annotations

import logging
import math

import pytest
import torch
from _float_tolerance import approx_scores, f32_sum_tol
from _scoring_models import Bigram, bigram_tokenizer, tiny_bert, tiny_gpt2, word_tokenizer

from unstereo.scoring import CausalScorer, MaskedScorer, resolve_prefix
from unstereo.scoring.batching import Batcher, OutOfMemory
from unstereo.scoring.causal import token_logprobs

# ------------------------------------------------------------------------------------------- definition, by hand


def test_bigram_hand_example():
    # Bigram rows (see _scoring_models.Bigram): p(b|<s>) = 3/9, p(a|b) = 3/8  ->  "b a": ln(3/9 * 3/8) = ln(1/8)
    # p(a|<s>) = 2/9, p(a|a) = 1/7, p(b|a) = 2/7  ->  "a a b": ln(2/9 * 1/7 * 2/7) = ln(4/441)
    # The BOS token <s> is prepended and not scored: 2 and 3 scored tokens.
    scorer = CausalScorer(Bigram(), bigram_tokenizer(), batch_size=4)
    (lp1, n1), (lp2, n2) = scorer.score(["b a", "a a b"])
    assert (n1, n2) == (2, 3)
    # float32 log-softmax of the hand table: tolerance from float32's rounding of 2 and 3 terms (tests/_float_tolerance.py)
    assert lp1 == pytest.approx(math.log(1 / 8), abs=f32_sum_tol(math.log(1 / 8), 2))
    assert lp2 == pytest.approx(math.log(4 / 441), abs=f32_sum_tol(math.log(4 / 441), 3))


def test_token_logprobs_is_gather_minus_logsumexp():
    # logits ln(1), ln(2), ln(5): p = 1/8, 2/8, 5/8; target 2 -> ln(5/8)
    logits = torch.tensor([[0.0, math.log(2), math.log(5)]])
    assert token_logprobs(logits, torch.tensor([2])).item() == pytest.approx(
        math.log(5 / 8), abs=f32_sum_tol(1.0)
    )


# ------------------------------------------------------------------------------------------------- BOS policy


def test_bos_policy_eos_fallback(caplog):
    # No BOS: the EOS token </s> (id 3) is the prefix. Bigram row of </s> is uniform over 6 tokens, so
    # "b a" = ln p(b|</s>) + ln p(a|b) = ln(1/6) + ln(3/8); 2 tokens scored.
    tok = bigram_tokenizer(bos=None)
    with caplog.at_level(logging.WARNING, logger="unstereo"):
        scorer = CausalScorer(Bigram(), tok, batch_size=2)
    assert scorer.prefix.policy == "eos" and scorer.prefix.token_id == 3
    assert "no BOS" in caplog.text
    [(lp, n)] = scorer.score(["b a"])
    want = math.log(1 / 6) + math.log(3 / 8)
    assert n == 2 and lp == pytest.approx(want, abs=f32_sum_tol(want, 2))
    assert scorer.metadata()["bos_policy"] == "eos:</s>"


def test_bos_policy_none_scores_from_second_token(caplog):
    # Neither BOS nor EOS: "b a" has only ln p(a|b) = ln(3/8); 1 scored token.
    tok = bigram_tokenizer(bos=None, eos=None)
    with caplog.at_level(logging.WARNING, logger="unstereo"):
        scorer = CausalScorer(Bigram(), tok, batch_size=2)
    assert scorer.prefix.policy == "none" and "not scored" in caplog.text
    [(lp, n), (lp1, n1)] = scorer.score(["b a", "a"])
    assert (n, n1) == (1, 0)
    assert lp == pytest.approx(math.log(3 / 8), abs=f32_sum_tol(1.0)) and lp1 == 0.0
    assert scorer.metadata()["bos_policy"] == "none"


def test_bos_policy_explicit_and_errors():
    tok = bigram_tokenizer()
    assert resolve_prefix(tok, "eos").token_id == 3
    assert resolve_prefix(tok, "none").token_id is None
    with pytest.raises(ValueError, match="no BOS"):
        resolve_prefix(bigram_tokenizer(bos=None), "bos")
    with pytest.raises(ValueError, match="policy"):
        resolve_prefix(tok, "first")


def test_no_double_bos_when_tokenizer_adds_its_own():
    # A Llama/Gemma-style tokenizer adds <s> itself; the scorer must prepend exactly one.
    tok = word_tokenizer(add_bos_template=True)
    assert tok("she went")["input_ids"][0] == tok.bos_token_id  # the tokenizer does add it
    scorer = CausalScorer(tiny_gpt2(len(tok)), tok, batch_size=2)
    [ids] = scorer.encode(["she went"])
    assert ids == [tok.bos_token_id, tok.convert_tokens_to_ids("she"), tok.convert_tokens_to_ids("went")]


# ------------------------------------------------------------------------------ tiny GPT-2 vs. a plain loop

SENTENCES = [
    "She went to the store.",
    "I gave him the book yesterday because he asked.",
    "His dog barked.",
    "Nobody expected her to win the long race against the champion of the city.",
    "He said hi.",
    "Mary gave her a dog, because she asked.",
    "She",
]


def manual_logprob(model, tok, sentence: str) -> tuple[float, int]:
    """Independent computation: one forward pass per prefix, fp64 log_softmax of the last position."""
    ids = [tok.bos_token_id, *tok(sentence, add_special_tokens=False)["input_ids"]]
    total = 0.0
    with torch.no_grad():
        for t in range(1, len(ids)):
            logits = model(input_ids=torch.tensor([ids[:t]])).logits[0, -1].double()
            total += torch.log_softmax(logits, -1)[ids[t]].item()
    return total, len(ids) - 1


@pytest.fixture(scope="module")
def gpt2():
    tok = word_tokenizer()
    return tiny_gpt2(len(tok)), tok


@pytest.mark.parametrize("path", ["auto", "full"])
def test_tiny_gpt2_matches_manual_loop(gpt2, path):
    model, tok = gpt2
    got = CausalScorer(model, tok, batch_size=3, path=path).score(SENTENCES)
    for s, (lp, n) in zip(SENTENCES, got, strict=True):
        want, n_want = manual_logprob(model, tok, s)
        assert n == n_want
        assert lp == pytest.approx(want, abs=f32_sum_tol(want, n)), s  # float32 sums of n log-probs
    # the random model is far from uniform, so the check is not vacuous: scores differ from n * ln(1/V)
    assert abs(got[0][0] - got[0][1] * math.log(1 / len(tok))) > 0.5


@pytest.mark.parametrize("path", ["auto", "tree", "padded", "full"])
@pytest.mark.parametrize("batch_size", [1, 2, 3, 7, "auto"])
def test_batch_independence(gpt2, batch_size, path):
    # The score of a sentence must not depend on its batch mates (lengths 2..16 tokens padded together, or sharing
    # a prefix tree), whichever scoring path runs the batches.
    model, tok = gpt2
    alone = [CausalScorer(model, tok, batch_size=1, path=path).score([s])[0] for s in SENTENCES]
    together = CausalScorer(model, tok, batch_size=batch_size, path=path).score(SENTENCES)
    for (a, na), (b, nb) in zip(alone, together, strict=True):
        assert na == nb
        assert a == pytest.approx(b, abs=f32_sum_tol(a, na))  # equal up to float32 rounding of na terms
    # and in reverse order with duplicates
    again = CausalScorer(model, tok, batch_size=batch_size, path=path).score(SENTENCES[::-1] + SENTENCES[:2])
    assert [x for x, _ in again[: len(SENTENCES)]] == approx_scores(alone[::-1])


def test_batches_are_sorted_by_length():
    # Lengths (with BOS): "a" 2, "a a a a" 5, "a a" 3, "b b b" 4 -> batches of 2 longest first: [5, 4], [3, 2]
    model = Bigram()
    scorer = CausalScorer(model, bigram_tokenizer(), batch_size=2)
    scorer.score(["a", "a a a a", "a a", "b b b"])
    assert model.batch_sizes == [2, 2]
    assert scorer.batcher.n_batches == 2


# ---------------------------------------------------------------------------------------------- OOM halving


def test_oom_halves_batch_size(caplog):
    sentences = ["a b", "b", "a a b", "b a", "a", "b b", "a b a b", "b a a"]
    want = CausalScorer(Bigram(), bigram_tokenizer(), batch_size=8).score(sentences)
    model = Bigram(oom_above=2)  # a fake out-of-memory error for batches of more than 2 rows
    scorer = CausalScorer(model, bigram_tokenizer(), batch_size=8)
    with caplog.at_level(logging.WARNING, logger="unstereo"):
        got = scorer.score(sentences)
    assert [x for x, _ in got] == approx_scores(want)
    assert [n for _, n in got] == [n for _, n in want]
    # 8 fails -> 4 fails -> 2 works for the remaining 4 batches
    assert scorer.batcher.n_oom == 2 and scorer.batcher.batch_size == 2
    assert model.batch_sizes == [2, 2, 2, 2]
    assert scorer.metadata()["batch_size"] == 2
    assert "halving to 4" in caplog.text and "halving to 2" in caplog.text


def test_oom_at_batch_size_one_is_an_error():
    scorer = CausalScorer(Bigram(oom_above=0), bigram_tokenizer(), batch_size=4)
    with pytest.raises(OutOfMemory, match="batch size 1"):
        scorer.score(["a", "b"])


def test_other_errors_are_not_swallowed():
    def boom(idx):
        raise ValueError("not a memory problem")

    with pytest.raises(ValueError, match="not a memory"):
        Batcher(4).run([1, 2, 3], boom)


def test_cpu_allocator_message_counts_as_oom():
    from unstereo.scoring.batching import is_oom

    assert is_oom(
        RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory")
    )
    assert not is_oom(RuntimeError("shape mismatch"))


def test_auto_batch_bounds_logits_memory():
    # max_cells = 10 (items x longest length per batch). Sorted lengths: 5 5 5 2 2 2 2 2.
    # Batch 1 starts at length 5 -> 10 // 5 = 2 items [5 5]; batch 2 starts at 5 -> 2 items [5 2];
    # batch 3 starts at 2 -> up to 5 items, 4 left [2 2 2 2].
    b = Batcher(100, max_cells=10)
    sizes = []
    b.run([2, 5, 2, 5, 2, 5, 2, 2], lambda idx: sizes.append(len(idx)) or [0] * len(idx))
    assert sizes == [2, 2, 4]


def test_scorer_batcher_by_device_and_request():
    from types import SimpleNamespace

    from unstereo.scoring.batching import scorer_batcher, vocab_size

    model = SimpleNamespace(config=SimpleNamespace(vocab_size=1000))
    start = {"cuda": 128, "cpu": 32}
    b = scorer_batcher(model, None, "cpu", "auto", None, start)
    assert (b.batch_size, b.max_cells) == (32, 2**28 // 1000)  # 268,435 cells
    b = scorer_batcher(model, None, "cuda:1", "auto", None, start)
    assert (b.batch_size, b.max_cells) == (128, 2**30 // 1000)
    b = scorer_batcher(
        model, None, "xpu", "auto", 5, start
    )  # an unlisted device: the CPU's budget; the cap wins
    assert (b.batch_size, b.max_cells) == (5, 2**28 // 1000)
    b = scorer_batcher(model, None, "cuda", 7, None, start)  # a fixed size: no cell bound
    assert (b.batch_size, b.max_cells) == (7, None)
    assert vocab_size(SimpleNamespace(), ["a", "b", "c"]) == 3  # no config: the tokenizer's length


# --------------------------------------------------------------------------------------------- masked PLL


def manual_pll(model, tok, sentence: str) -> tuple[float, int]:
    """Independent PLL: mask each word token in turn, one forward pass per copy, fp64 log_softmax."""
    enc = tok(sentence, return_special_tokens_mask=True)
    ids, special = enc["input_ids"], enc["special_tokens_mask"]
    total, n = 0.0, 0
    with torch.no_grad():
        for p, is_special in enumerate(special):
            if is_special:
                continue
            masked = list(ids)
            masked[p] = tok.mask_token_id
            logits = model(input_ids=torch.tensor([masked])).logits[0, p].double()
            total += torch.log_softmax(logits, -1)[ids[p]].item()
            n += 1
    return total, n


def test_masked_pll_matches_manual_and_is_batch_independent(tmp_path):
    model, tok = tiny_bert(tmp_path)
    got = MaskedScorer(model, tok, batch_size=5).score(SENTENCES)
    alone = [MaskedScorer(model, tok, batch_size=1).score([s])[0] for s in SENTENCES]
    for s, (lp, n), (lp1, n1) in zip(SENTENCES, got, alone, strict=True):
        want, n_want = manual_pll(model, tok, s)
        assert n == n1 == n_want == len(tok(s, add_special_tokens=False)["input_ids"])
        assert lp == pytest.approx(want, abs=f32_sum_tol(want, n)), s  # float32 sums of n masked log-probs
        assert lp == pytest.approx(lp1, abs=f32_sum_tol(lp1, n)), s
    assert MaskedScorer(model, tok).metadata()["bos_policy"] == "pll"


class UnigramMLM(torch.nn.Module):
    """Masked 'LM' predicting a fixed unigram distribution; checks that each row has exactly one [MASK]."""

    def __init__(self, vocab_size: int, mask_id: int, probs: dict[int, float]):
        super().__init__()
        p = torch.full((vocab_size,), (1 - sum(probs.values())) / (vocab_size - len(probs)))
        for i, v in probs.items():
            p[i] = v
        self.logits = torch.nn.Parameter(p.log(), requires_grad=False)
        self.mask_id = mask_id

    def forward(self, input_ids, attention_mask=None, **kw):
        assert ((input_ids == self.mask_id).sum(-1) == 1).all()
        from types import SimpleNamespace

        return SimpleNamespace(logits=self.logits.expand(*input_ids.shape, -1))


def test_masked_pll_hand_example(tmp_path):
    # p(she) = 1/2, p(went) = 1/4 under a context-free 'model': PLL("she went") = ln(1/2) + ln(1/4) = ln(1/8);
    # [CLS] and [SEP] are neither masked nor scored: 2 tokens.
    _, tok = tiny_bert(tmp_path)
    she, went = tok.convert_tokens_to_ids(["she", "went"])
    model = UnigramMLM(len(tok), tok.mask_token_id, {she: 0.5, went: 0.25})
    [(lp, n)] = MaskedScorer(model, tok, batch_size=3).score(["She went"])
    assert n == 2 and lp == pytest.approx(math.log(1 / 8), abs=f32_sum_tol(math.log(1 / 8), 2))
