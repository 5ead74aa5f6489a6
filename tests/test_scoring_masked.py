"""The four masked-LM scores (pll, crows-pairs, aul, biastestgpt) on a tiny random BERT with a WordPiece vocabulary
built here, against values worked out by looping over the model's raw logits by hand."""

from __future__ import annotations

import pytest
import torch

from unstereo.errors import InputError
from unstereo.scoring.masked import AulScorer, MaskedScorer
from unstereo.scoring.masked_crows import CrowsPairsScorer, shared_positions, with_partner
from unstereo.scoring.masked_scorers import MASKED_SCORERS, REDUCE
from unstereo.scoring.masked_term import MaskedTermScorer

VOCAB = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "nurse", "engine", "##er", "likes", "math", ".",
         "he", "she", "said", "male", "fe", "##male", "student", "got", "his", "prize", "[", "]", "r"]  # fmt: skip
V = {w: i for i, w in enumerate(VOCAB)}
CLS, SEP, MASK = V["[CLS]"], V["[SEP]"], V["[MASK]"]


@pytest.fixture(scope="module")
def bert(tmp_path_factory):
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    path = tmp_path_factory.mktemp("bert") / "vocab.txt"
    path.write_text("\n".join(VOCAB) + "\n")
    tok = BertTokenizerFast(vocab_file=str(path), do_lower_case=True)
    torch.manual_seed(3)
    config = BertConfig(vocab_size=len(VOCAB), hidden_size=16, num_hidden_layers=2, num_attention_heads=2,
                        intermediate_size=32, max_position_embeddings=64, initializer_range=0.5)  # fmt: skip
    return BertForMaskedLM(config).eval(), tok


def ids(*words):
    return [CLS, *(V[w] for w in words), SEP]


def logits(model, seq):
    with torch.no_grad():
        return model(input_ids=torch.tensor([seq])).logits[0].double()


def masked_lp(model, seq, p):
    """ln p(seq[p] | seq with position p masked), from the raw logits."""
    m = list(seq)
    m[p] = MASK
    row = logits(model, m)[p]
    return float(row[seq[p]] - torch.logsumexp(row, 0))


def test_the_vocabulary_splits_as_the_hand_ids_assume(bert):
    _, tok = bert
    assert tok("the engineer likes math .")["input_ids"] == ids("the", "engine", "##er", "likes", "math", ".")
    assert tok("The female student got [R] prize.")["input_ids"] == ids(
        "the", "fe", "##male", "student", "got", "[", "r", "]", "prize", "."
    )


def test_pll_every_token_masked_in_turn(bert):
    model, tok = bert
    seq = ids("the", "engine", "##er", "likes", "math", ".")
    want = sum(masked_lp(model, seq, p) for p in range(1, len(seq) - 1))  # 6 masked copies
    got = MaskedScorer(model, tok, batch_size=4).score(["the engineer likes math ."])[0]
    assert got[0] == pytest.approx(want, abs=1e-5) and got[1] == 6
    assert REDUCE["pll"] == "sum"  # the sentence score is the value itself


def test_aul_mean_log_prob_with_nothing_masked(bert):
    model, tok = bert
    seq = ids("the", "nurse", "likes", "math", ".")
    row = logits(model, seq)
    lps = [float(row[p, seq[p]] - torch.logsumexp(row[p], 0)) for p in range(1, len(seq) - 1)]
    got = AulScorer(model, tok, batch_size=2).score(["the nurse likes math .", "he said"])[0]
    assert got[0] == pytest.approx(sum(lps), abs=1e-5) and got[1] == 5
    assert REDUCE["aul"] == "mean" and got[0] / got[1] == pytest.approx(sum(lps) / 5, abs=1e-6)


def test_crows_pairs_shared_tokens_given_the_modified_ones(bert):
    """S1 = the nurse likes math . ; S2 = the engineer likes math . (engineer = engine ##er).
    Token ids with specials: S1 [CLS] the nurse likes math . [SEP]; S2 [CLS] the engine ##er likes math . [SEP].
    Shared (difflib equal blocks): [CLS] the | likes math . [SEP]; scored, specials left out:
    S1 positions 1 (the), 3 (likes), 4 (math), 5 (.); S2 positions 1, 4, 5, 6. nurse / engine ##er never scored."""
    model, tok = bert
    s1, s2 = ids("the", "nurse", "likes", "math", "."), ids("the", "engine", "##er", "likes", "math", ".")
    assert shared_positions(s1, s2) == [0, 1, 3, 4, 5, 6] and shared_positions(s2, s1) == [0, 1, 4, 5, 6, 7]
    want1 = sum(masked_lp(model, s1, p) for p in (1, 3, 4, 5))
    want2 = sum(masked_lp(model, s2, p) for p in (1, 4, 5, 6))
    a, b = "the nurse likes math .", "the engineer likes math ."
    got = CrowsPairsScorer(model, tok, batch_size=3).score([with_partner(a, b), with_partner(b, a)])
    assert got[0][0] == pytest.approx(want1, abs=1e-5) and got[0][1] == 4
    assert got[1][0] == pytest.approx(want2, abs=1e-5) and got[1][1] == 4
    # differs from PLL on the same sentence (PLL also scores "nurse")
    assert got[0][0] != pytest.approx(MaskedScorer(model, tok).score([a])[0][0], abs=1e-3)
    with pytest.raises(InputError, match="partner"):
        CrowsPairsScorer(model, tok).score([a])


def test_biastestgpt_one_mask_per_term_mean_raw_logit(bert):
    """The authors' getBERTProb: the term's place holds ONE [MASK]; the score is the mean of the raw logits of the
    term's sub-word ids at that mask: engineer -> (logit[engine] + logit[##er]) / 2 at position 1 of
    [CLS] [MASK] likes math . [SEP]."""
    model, tok = bert
    scorer = MaskedTermScorer(model, tok, batch_size=2)
    row = logits(model, [CLS, MASK, V["likes"], V["math"], V["."], SEP])[1]
    got = scorer.score(["⟦engineer⟧ likes math .", "⟦nurse⟧ likes math ."])
    assert (
        got[0][0] == pytest.approx(float(row[V["engine"]] + row[V["##er"]]) / 2, abs=1e-5) and got[0][1] == 2
    )
    assert got[1][0] == pytest.approx(float(row[V["nurse"]]), abs=1e-5) and got[1][1] == 1
    assert REDUCE["biastestgpt"] == "sum"
    # the authors' texts: [R] left literal ("[", "r", "]" tokens), the term masked, its logit at the mask
    seq = [CLS, V["the"], MASK, V["student"], V["got"], V["["], V["r"], V["]"], V["prize"], V["."], SEP]
    row = logits(model, seq)[2]
    got = scorer.score(["The ⟦female⟧ student got [R] prize."])[0]
    assert got[0] == pytest.approx(float(row[V["fe"]] + row[V["##male"]]) / 2, abs=1e-5)
    # a term twice: both places masked, the score read at the first mask
    seq = [CLS, MASK, V["said"], MASK, SEP]
    got = scorer.score(["⟦he⟧ said ⟦he⟧"])[0]
    assert got == (pytest.approx(float(logits(model, seq)[1, V["he"]]), abs=1e-5), 1)
    with pytest.raises(InputError, match="marked"):
        scorer.score(["nothing marked"])


def test_scorer_names_and_factory():
    assert list(MASKED_SCORERS) == ["pll", "crows-pairs", "aul", "biastestgpt"]
    assert [c.kind for c in MASKED_SCORERS.values()] == [
        "masked-pll", "masked-crows-pairs", "masked-aul", "masked-biastestgpt"
    ]  # fmt: skip
    from unstereo.errors import ConfigError
    from unstereo.model_request import ModelRequest
    from unstereo.model_spec import ModelSpec
    from unstereo.scoring.registry import scorer_for

    with pytest.raises(ConfigError, match="unknown scorer 'lm-eval'"):
        scorer_for(ModelRequest(ModelSpec(path="some/bert"), scorer="lm-eval"))
