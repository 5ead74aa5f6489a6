"""The fast scoring paths (prefix tree, padded with the LM head only on scored positions): the prefix tree and its
mask by hand, the blockwise head by hand and against log_softmax, the body/head split of tiny GPT-2, Llama,
Gemma3 (soft-capped), Granite and Cohere (scaled logits) models, and the scores against the full forward pass."""

from __future__ import annotations

import functools
import logging
import math

import pytest
import torch
from _float_tolerance import approx_scores, f32_sum_tol
from _scoring_models import tiny_gpt2, word_tokenizer
from test_scoring import SENTENCES, manual_logprob

from unstereo.engine.kernels.lm_head import LMHead, head_logprobs, split_causal_lm
from unstereo.engine.kernels.tree_attention import segment_layout
from unstereo.scoring import CausalScorer
from unstereo.scoring.batching import Batcher
from unstereo.scoring.causal import attention_span, probe_sequences
from unstereo.scoring.prefix_tree import ancestor_mask, pack_prefix_tree

# ------------------------------------------------------------------------------------------------ prefix tree


def test_prefix_tree_by_hand():
    # [2 4 5], [2 4 6 7], [2 5], [2], []: nodes are the distinct proper prefixes
    #   node 0 = (2)      depth 0, root           predicts 4 (seq 0), 4 (seq 1), 5 (seq 2)
    #   node 1 = (2 4)    depth 1, parent 0       predicts 5 (seq 0), 6 (seq 1)
    #   node 2 = (2 4 6)  depth 2, parent 1       predicts 7 (seq 1)
    # [2] and [] score nothing: no node, no query.
    tree = pack_prefix_tree([[2, 4, 5], [2, 4, 6, 7], [2, 5], [2], []])
    assert tree.tokens == [2, 4, 6]
    assert tree.positions == [0, 1, 2]
    assert tree.parents == [-1, 0, 1]
    assert tree.query_node == [0, 1, 0, 1, 2, 0]
    assert tree.query_token == [4, 5, 4, 6, 7, 5]
    assert tree.query_seq == [0, 0, 1, 1, 1, 2]
    assert len(tree) == 3


def test_prefix_tree_same_token_under_different_parents_is_two_nodes():
    # [1 3 3] and [1 2 3 4]: token 3 at depth 1 under (1) and token 3 at depth 2 under (1 2) are different prefixes.
    tree = pack_prefix_tree([[1, 3, 3], [1, 2, 3, 4]])
    assert tree.tokens == [1, 3, 2, 3]
    assert tree.parents == [-1, 0, 0, 2]
    assert tree.positions == [0, 1, 1, 2]


def test_ancestor_mask_by_hand():
    # 0 is the root; 1 and 2 are its children; 3 is a child of 1.
    m = ancestor_mask([-1, 0, 0, 1])
    assert m.tolist() == [
        [True, False, False, False],
        [True, True, False, False],
        [True, False, True, False],
        [True, True, False, True],
    ]
    with pytest.raises(ValueError, match="before their children"):
        ancestor_mask([-1, 2, 0])


def test_segment_layout_by_hand():
    # root 0 (BOS) with children 1 (subtree 1, 2, 3), 4 (subtree 4, 5) and 6 (a leaf); segments of at most 3 nodes:
    # the root's subtree (7 nodes) is too large, so 0 is shared and every segment takes it with its unit:
    #   [0 1 2 3] (a unit larger than the target goes whole), [0 4 5 pad], [0 6 pad pad]
    parents = [-1, 0, 1, 1, 0, 4, 0]
    layout = segment_layout(parents, ancestor_mask(parents), size=3)
    assert layout.gather.tolist() == [[0, 1, 2, 3], [0, 4, 5, 0], [0, 6, 0, 0]]
    # each node's output comes from its first slot (g * 4 + s); the root's from segment 0
    assert layout.take.tolist() == [0, 1, 2, 3, 5, 6, 9]
    T, F = True, False
    assert layout.allowed.tolist() == [
        [[T, F, F, F], [T, T, F, F], [T, T, T, F], [T, T, F, T]],
        [[T, F, F, F], [T, T, F, F], [T, T, T, F], [F, F, F, T]],  # a padding slot sees only itself
        [[T, F, F, F], [T, T, F, F], [F, F, T, F], [F, F, F, T]],
    ]
    # segments of 64: the whole tree is one unit, one segment, the dense mask
    layout = segment_layout(parents, ancestor_mask(parents), size=64)
    assert layout.gather.tolist() == [list(range(7))]
    assert layout.allowed[0].tolist() == ancestor_mask(parents).tolist()


def test_segment_layout_shared_chains_and_several_roots():
    # 0 -> 1 -> {2, 3}, size 1: 0 and 1 are shared (subtrees of 4 and 3 nodes), both go with each leaf
    parents = [-1, 0, 1, 1]
    layout = segment_layout(parents, ancestor_mask(parents), size=1)
    assert layout.gather.tolist() == [[0, 1, 2], [0, 1, 3]]
    assert layout.take.tolist() == [0, 1, 2, 5]
    # no prefix token: two roots, each with one child; size 2 -> one segment per root's subtree
    parents = [-1, 0, -1, 2]
    layout = segment_layout(parents, ancestor_mask(parents), size=2)
    assert layout.gather.tolist() == [[0, 1], [2, 3]]
    assert layout.allowed[1].tolist() == [[True, False], [True, True]]


# ------------------------------------------------------------------------------------------ blockwise LM head


@pytest.mark.parametrize("onednn", [False, True])
def test_head_logprobs_by_hand(onednn):
    # weight rows e1, e2, 0 and hidden (ln 2, ln 5): logits ln 2, ln 5, 0 -> p = 2/8, 5/8, 1/8.
    weight = torch.tensor([[1.0, 0.0], [0.0, 1.0], [0.0, 0.0]])
    hidden = torch.tensor([[math.log(2), math.log(5)]])
    nodes, tokens = torch.tensor([0, 0, 0]), torch.tensor([0, 1, 2])
    head = functools.partial(head_logprobs, onednn=onednn)  # products by oneDNN or by torch.mm
    lp = head(hidden, LMHead(weight), nodes, tokens)
    # float32 log-probs of size <= ln 30 = 3.4, by hand: float32's rounding of one term (tests/_float_tolerance.py)
    tol = f32_sum_tol(4.0)
    assert lp.tolist() == pytest.approx([math.log(2 / 8), math.log(5 / 8), math.log(1 / 8)], abs=tol)
    # scale 2: logits 2 ln 2, 2 ln 5, 0 -> 4/30, 25/30, 1/30
    lp = head(hidden, LMHead(weight, scale=2.0), nodes, tokens)
    assert lp.tolist() == pytest.approx([math.log(4 / 30), math.log(25 / 30), math.log(1 / 30)], abs=tol)
    # soft cap 1: logits tanh(ln 2) = 3/5, tanh(ln 5) = 12/13, 0
    lp = head(hidden, LMHead(weight, softcap=1.0), nodes, tokens)
    z = [3 / 5, 12 / 13, 0.0]
    norm = math.log(sum(math.exp(x) for x in z))
    assert lp.tolist() == pytest.approx([x - norm for x in z], abs=tol)
    # bias (0, 0, ln 3): logits ln 2, ln 5, ln 3 -> 2/10, 5/10, 3/10
    lp = head(hidden, LMHead(weight, bias=torch.tensor([0.0, 0.0, math.log(3)])), nodes, tokens)
    assert lp.tolist() == pytest.approx([math.log(0.2), math.log(0.5), math.log(0.3)], abs=tol)


@pytest.mark.parametrize("onednn", [False, True])
@pytest.mark.parametrize("chunk_cells", [5 * 256, 5 * 300, 10**9])
def test_head_logprobs_blocks_equal_log_softmax(chunk_cells, onednn):
    # 1,000-token vocabulary in blocks of 256 or 300 tokens (4 blocks, the last one short) or one block; targets in
    # every block; large logits so that the running max changes from block to block.
    g = torch.Generator().manual_seed(0)
    weight = torch.randn(1000, 8, generator=g)
    bias = torch.randn(1000, generator=g)
    hidden = 4 * torch.randn(5, 8, generator=g)
    nodes = torch.tensor([0, 1, 2, 3, 4, 4, 2, 0])
    tokens = torch.tensor([0, 255, 256, 599, 600, 999, 900, 3])
    for head in (LMHead(weight, bias), LMHead(weight, bias, scale=0.5, softcap=7.0)):
        logits = (hidden.double() @ weight.double().T + bias.double()) * (head.scale or 1)
        if head.softcap:
            logits = head.softcap * torch.tanh(logits / head.softcap)
        want = torch.log_softmax(logits, -1)[nodes, tokens]
        got = head_logprobs(hidden, head, nodes, tokens, chunk_cells=chunk_cells, onednn=onednn)
        assert got.dtype == torch.float32
        # single float32 log-probs over a vocabulary: float32's error for terms of the logits' size (< 10 here)
        assert got.double().tolist() == pytest.approx(want.tolist(), abs=f32_sum_tol(10.0))


# ------------------------------------------------------------------------------------- tiny transformers models

TINY = dict(
    vocab_size=40,
    hidden_size=16,
    intermediate_size=32,
    num_hidden_layers=2,
    num_attention_heads=2,
    num_key_value_heads=1,
    max_position_embeddings=64,
    initializer_range=0.3,
)


def tiny_model(kind: str, vocab_size: int, sliding_window: int = 6):
    """A randomly initialised 2-layer model of ``kind`` (fp32, eval mode)."""
    import transformers as tf

    torch.manual_seed(0)
    common = {**TINY, "vocab_size": vocab_size}
    if kind == "gpt2":
        return tiny_gpt2(vocab_size)
    if kind == "llama":
        return tf.LlamaForCausalLM(tf.LlamaConfig(**common)).eval()
    if kind == "gemma3":  # soft-capped logits; a sliding window of 6 shorter than the longer sentences
        config = tf.Gemma3TextConfig(
            **common,
            head_dim=8,
            final_logit_softcapping=3.0,
            sliding_window=sliding_window,
            layer_types=["sliding_attention", "full_attention"],
        )
        return tf.Gemma3ForCausalLM(config).eval()
    if kind == "granite":  # logits / logits_scaling
        return tf.GraniteForCausalLM(tf.GraniteConfig(**common, logits_scaling=4.0)).eval()
    if kind == "cohere":  # logits * logit_scale
        return tf.CohereForCausalLM(tf.CohereConfig(**common, logit_scale=0.5)).eval()
    raise ValueError(kind)


KINDS = ["gpt2", "llama", "gemma3", "granite", "cohere"]


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer()


def test_split_finds_body_and_head_transforms(tok):
    parts = {kind: split_causal_lm(tiny_model(kind, len(tok))) for kind in KINDS}
    assert type(parts["gpt2"][0]).__name__ == "GPT2Model"
    assert type(parts["llama"][0]).__name__ == "LlamaModel"
    assert type(parts["gemma3"][0]).__name__ == "Gemma3TextModel"  # its base_model_prefix names no attribute
    assert (parts["gemma3"][1].softcap, parts["gemma3"][1].scale) == (3.0, None)
    assert (parts["granite"][1].scale, parts["granite"][1].softcap) == (0.25, None)
    assert parts["cohere"][1].scale == 0.5
    assert parts["llama"][1].scale is None and parts["llama"][1].softcap is None
    assert split_causal_lm(torch.nn.Linear(3, 3)) is None  # no LM at all


def test_attention_span(tok):
    assert attention_span(tiny_model("gemma3", len(tok))) == 6
    assert attention_span(tiny_model("llama", len(tok))) == math.inf


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("path", ["tree", "padded"])
def test_fast_paths_equal_full_forward(tok, kind, path):
    # Every sentence, every batch size: the same scores and token counts as the full forward pass, which itself
    # matches an independent one-prefix-at-a-time computation (for the softcapped and scaled heads too).
    model = tiny_model(kind, len(tok))
    full = CausalScorer(model, tok, batch_size=3, path="full").score(SENTENCES)
    if kind in ("gemma3", "cohere"):  # the full forward pass against the plain definition, on one sentence
        want, n = manual_logprob(model, tok, SENTENCES[1])
        assert full[1][0] == pytest.approx(want, abs=f32_sum_tol(want, n))
    for batch_size in (1, 3, 7):
        scorer = CausalScorer(model, tok, batch_size=batch_size, path=path)
        got = scorer.score(SENTENCES)
        assert scorer.path == path and scorer.metadata()["scoring_path"] == path
        assert [n for _, n in got] == [n for _, n in full]
        assert [x for x, _ in got] == approx_scores(full), (kind, path, batch_size)


@pytest.mark.parametrize("kind", KINDS)
def test_segmented_tree_attention_equals_full_forward(tok, kind):
    # segments of 2 nodes: every sentence's subtree in segments of its own, with the shared prefixes repeated; the
    # model's attention implementation is switched only while the tree runs
    model = tiny_model(kind, len(tok))
    before = model.config._attn_implementation
    full = CausalScorer(model, tok, batch_size=7, path="full").score(SENTENCES)
    scorer = CausalScorer(model, tok, batch_size=7, path="tree")
    scorer.score(["she"])  # the path check
    assert scorer._segment > 0  # the check passed with segmented attention
    scorer._segment = 2
    got = scorer.score(SENTENCES)
    assert [x for x, _ in got] == approx_scores(full)
    assert model.config._attn_implementation == before


def test_segmented_attention_that_differs_falls_back_to_the_dense_tree(tok, monkeypatch, caplog):
    # a layout that takes each node's output from the wrong slot: the probe catches it, the tree runs dense
    import unstereo.scoring.causal as causal

    def shuffled(parents, ancestors, size):
        layout = segment_layout(parents, ancestors, size)
        return type(layout)(layout.gather, layout.allowed, layout.take[::-1].copy())

    monkeypatch.setattr(causal, "segment_layout", shuffled)
    model = tiny_model("llama", len(tok))
    with caplog.at_level(logging.INFO, logger="unstereo"):
        scorer = CausalScorer(model, tok, batch_size=7)
        got = scorer.score(SENTENCES)
    assert scorer.path == "tree" and scorer._segment == 0
    assert "segmented tree attention does not work" in caplog.text
    want = CausalScorer(model, tok, batch_size=7, path="full").score(SENTENCES)
    assert [x for x, _ in got] == approx_scores(want)


@pytest.mark.parametrize("kind", KINDS)
def test_auto_takes_the_tree(tok, kind):
    scorer = CausalScorer(tiny_model(kind, len(tok)), tok, batch_size=4)
    scorer.score(["she went"])
    assert scorer.path == "tree"


def record_input_shapes(module) -> list:
    """The shapes of the input ids each call of ``module`` gets (keyword or first positional argument)."""
    shapes: list = []

    def hook(mod, args, kwargs, out):
        shapes.append(tuple((kwargs["input_ids"] if "input_ids" in kwargs else args[0]).shape))

    module.register_forward_hook(hook, with_kwargs=True)
    return shapes


def test_tree_batch_runs_each_shared_prefix_once(tok):
    # "she went to the store ." and "she went to the city .": BOS + 6 tokens each; the nodes are the prefixes of
    # lengths 1..6 of each: BOS she went to the (shared, 5) + store + city = 7 positions in one row, not 12.
    model = tiny_model("gpt2", len(tok))
    shapes = record_input_shapes(model.transformer)
    scorer = CausalScorer(model, tok, batch_size=8, path="tree")
    scorer.score(["she"])  # the path check runs its probe here
    shapes.clear()
    scorer.score(["she went to the store .", "she went to the city ."])
    assert shapes == [(1, 7)]


def test_tree_falls_back_to_padded_beyond_a_sliding_window(tok):
    # the tiny Gemma3 has a window of 6: a batch with a 16-token sentence runs padded (rows, 2D mask)
    model = tiny_model("gemma3", len(tok))
    shapes = record_input_shapes(model.model)
    scorer = CausalScorer(model, tok, batch_size=8, path="tree")
    scorer.score(["she"])  # the path check runs its probe here
    shapes.clear()
    scorer.score(["she went", "he went"])  # 3 tokens each: one tree row, BOS she went he -> 4 nodes
    assert shapes == [(1, 3)]
    shapes.clear()
    scorer.score([SENTENCES[3], "he went"])  # 16 tokens: two padded rows of 15 positions
    assert shapes == [(2, 15)]


def test_window_shorter_than_the_probe_means_no_tree(tok, caplog):
    # the probe's longest input is 5 positions: a window of 3 cannot be checked, so auto takes the padded path
    model = tiny_model("gemma3", len(tok), sliding_window=3)
    with caplog.at_level(logging.WARNING, logger="unstereo"):
        scorer = CausalScorer(model, tok, batch_size=4)
        got = scorer.score(SENTENCES)
    assert scorer.path == "padded" and "sliding window of 3" in caplog.text
    want = CausalScorer(model, tok, batch_size=4, path="full").score(SENTENCES)
    assert [x for x, _ in got] == approx_scores(want)


@pytest.mark.parametrize("batch_size", [1, 2, 7])
@pytest.mark.parametrize("path", ["tree", "padded"])
def test_fast_paths_batch_independence(tok, path, batch_size):
    # the same sentence, alone or with batch mates (in any order, duplicated): the same score
    model = tiny_model("llama", len(tok))
    alone = [CausalScorer(model, tok, batch_size=1, path=path).score([s])[0] for s in SENTENCES]
    mixed = SENTENCES[::-1] + SENTENCES[:3]
    together = CausalScorer(model, tok, batch_size=batch_size, path=path).score(mixed)
    assert [x for x, _ in together] == approx_scores(alone[::-1] + alone[:3])


# ----------------------------------------------------------------------------------------------- fall-backs


class DoubledLogits(torch.nn.Module):
    """A GPT-2 whose forward pass doubles the logits: a transform after the head that the split does not know."""

    def __init__(self, inner):
        super().__init__()
        self.inner = inner
        self.config = inner.config

    def get_output_embeddings(self):
        return self.inner.get_output_embeddings()

    @property
    def base_model(self):
        return self.inner.transformer

    def forward(self, **kw):
        out = self.inner(**kw)
        out.logits = 2 * out.logits
        return out


def test_unknown_logit_transform_falls_back_to_full(tok, caplog):
    model = DoubledLogits(tiny_model("gpt2", len(tok)))
    with caplog.at_level(logging.WARNING, logger="unstereo"):
        scorer = CausalScorer(model, tok, batch_size=3)
        got = scorer.score(SENTENCES)
    assert scorer.path == "full" and "probe scores differ" in caplog.text
    assert not scorer.onednn and scorer.metadata()["matmul"] == "default"  # the model's own forward pass
    assert got == CausalScorer(model, tok, batch_size=3, path="full").score(SENTENCES)  # the same batches
    with pytest.raises(ValueError, match="scoring path 'tree' does not work"):
        CausalScorer(model, tok, path="tree").score(["she"])


def test_body_without_position_ids_falls_back_to_padded(tok, caplog):
    # a body that ignores position ids gets the tree's depths wrong: the check catches it, padded still works
    model = tiny_model("gpt2", len(tok))
    forward = model.transformer.forward
    model.transformer.forward = lambda *args, position_ids=None, **kw: forward(*args, **kw)
    with caplog.at_level(logging.WARNING, logger="unstereo"):
        scorer = CausalScorer(model, tok, batch_size=3)
        got = scorer.score(SENTENCES)
    assert scorer.path == "padded" and "'tree' does not work" in caplog.text
    want = CausalScorer(model, tok, batch_size=3, path="full").score(SENTENCES)
    assert [x for x, _ in got] == approx_scores(want)


def test_no_head_means_full_path():
    from _scoring_models import Bigram, bigram_tokenizer

    scorer = CausalScorer(Bigram(), bigram_tokenizer(), batch_size=2)
    scorer.score(["a b"])
    assert scorer.path == "full"


def test_auto_path_off_the_cpu_is_the_full_pass(tok):
    """On a GPU (a device string other than cpu) auto takes the model's own pass without probing the fast paths;
    on the CPU it probes them and takes the tree; an explicit path is kept wherever the model is."""
    model = tiny_gpt2(len(tok), seed=0)
    on_gpu = CausalScorer(model, tok, device="cuda:1")
    on_gpu._check = lambda path: pytest.fail(f"probed {path} on a GPU")
    assert on_gpu._resolve_path() == "full" and on_gpu.onednn is False
    assert CausalScorer(model, tok, device="cpu")._resolve_path() == "tree"
    assert CausalScorer(model, tok, device="cpu", path="padded")._resolve_path() == "padded"


def test_bad_path_name():
    from _scoring_models import Bigram, bigram_tokenizer

    with pytest.raises(ValueError, match="scoring path"):
        CausalScorer(Bigram(), bigram_tokenizer(), path="fast")


def test_probe_shares_prefixes_and_differs_in_length():
    probe = probe_sequences(1000, prefix=7)
    assert all(s[0] == 7 for s in probe)
    assert probe[0][:3] == probe[1][:3] and probe[2][:2] == probe[3][:2]
    assert len({len(s) for s in probe}) >= 3
    # nodes: p, p t0, p t0 t1, p t0 t1 t2 (sequences 0, 1, 3, 4) and p t5, ..., p t5 t6 t7 t8 (sequence 2):
    # 8 positions for 4 + 3 + 5 + 1 + 1 = 14 scored tokens
    assert len(pack_prefix_tree(probe)) == 8


# ---------------------------------------------------------------------------------------------- Batcher order


def test_batcher_runs_in_the_given_order():
    seen = []
    out = Batcher(2).run(
        [1, 1, 1, 1, 1], lambda idx: seen.append(list(idx)) or [i * 10 for i in idx], order=[3, 0, 4, 1, 2]
    )
    assert seen == [[3, 0], [4, 1], [2]]
    assert out == [0, 10, 20, 30, 40]
    with pytest.raises(ValueError, match="permutation"):
        Batcher(2).run([1, 1], lambda idx: idx, order=[0, 0])


def test_batcher_cells_bound_uses_the_longest_item_of_the_batch():
    # max_cells 12, run order lengths 2 6 2 2 2: a batch of 3 would be 3 x 6 = 18 > 12 -> [2 6] (2 x 6 = 12);
    # then [2 2 2] (3 x 2 = 6).
    sizes = []
    Batcher(3, max_cells=12).run(
        [2, 6, 2, 2, 2], lambda idx: sizes.append(len(idx)) or [0] * len(idx), order=[0, 1, 2, 3, 4]
    )
    assert sizes == [2, 3]


def test_tree_batches_keep_sentences_times_length_bounded(tok, monkeypatch):
    # 6 sentences of 3 tokens (BOS + 2 words), batch size 32, at most 7 cells per tree: 7 // 3 = 2 sentences per
    # tree -> 3 trees; a tree's nodes are the distinct prefixes of lengths 1 and 2.
    from unstereo.scoring import causal

    monkeypatch.setattr(causal, "TREE_MAX_CELLS", 7)
    model = tiny_model("gpt2", len(tok))
    shapes = record_input_shapes(model.transformer)
    scorer = CausalScorer(model, tok, batch_size=32, path="tree")
    scorer.score(["she"])  # the path check runs its probe here
    shapes.clear()
    scorer.score(["she went", "he went", "her dog", "his dog", "she asked", "he asked"])
    # token-id order (she 4, he 5, her 6, his 7): she went, she asked | he went, he asked | her dog, his dog
    # -> nodes BOS she | BOS he | BOS her his
    assert shapes == [(1, 2), (1, 2), (1, 3)]
