"""The Llama-family decode step (unstereo.engine.decode_step): the same tokens and log-probabilities as the body's own
forward, bit for bit; which bodies it takes; the fused products only where exact; the engine's slot moves."""

from __future__ import annotations

import pytest
import torch
from test_llm_engine import PROMPTS, ids_of, tiny_lm, tok  # noqa: F401  (tok: a fixture)

import unstereo.engine.decode_step as decode_step
import unstereo.engine.engine as engine_module
from unstereo.engine.engine import EngineRequest, SamplingEngine, SlotCache, _fill_gaps
from unstereo.engine.kernels.onednn import packing_works


@pytest.fixture(scope="module")
def models(tok):  # noqa: F811
    return {kind: tiny_lm(kind, tok) for kind in ("llama", "qwen2", "gpt2", "gemma3")}


def requests(tok):  # noqa: F811
    """Sampled and greedy rows of several prompts, more than the slots: rows start and end at different steps."""
    reqs = [EngineRequest(ids_of(tok, p), max_tokens=9, temperature=1.0, top_p=0.9, seed=s)
            for s, p in enumerate(PROMPTS * 2)]  # fmt: skip
    reqs.append(EngineRequest(ids_of(tok, PROMPTS[3]), max_tokens=7, temperature=0.0))
    return reqs


def run(engine, reqs):
    return [(o.tokens, o.logprobs, o.finish) for o in engine.generate(reqs, logprobs=True)]


@pytest.mark.parametrize("kind", ["llama", "qwen2"])
@pytest.mark.parametrize("pack", [True, False])
def test_the_step_gives_the_bodys_numbers_bit_for_bit(models, tok, kind, pack, monkeypatch):  # noqa: F811
    monkeypatch.setattr(engine_module, "PACK_WEIGHTS", pack)
    reqs = requests(tok)
    engine = SamplingEngine(models[kind], tok, slots=3)
    assert engine.decode_step is not None and engine.check() is None
    fast = run(engine, reqs)
    if pack:  # q, k, v and gate, up as one packed product each where the probes find that exact on this CPU
        first = engine.decode_step.layers[0]

        def exact(parts):
            return all(packing_works(m.weight) for m in parts) and decode_step.fusing_works(list(parts))

        qkv, gate_up = exact((first.q, first.k, first.v)), exact((first.gate, first.up))
        assert all(
            (f.qkv is not None) == qkv and (f.gate_up is not None) == gate_up
            for f in engine.decode_step.fused
        )
    body = SamplingEngine(models[kind], tok, slots=3)
    body.decode_step = None  # the body's own forward (transformers' modules)
    assert run(body, reqs) == fast
    assert len({tuple(t) for t, _, _ in fast}) > 3  # the rows do differ
    # and with int8 products: the step calls each projection's own (int8) forward, never the fused fp32 copies
    int8 = SamplingEngine(models[kind], tok, slots=3, products="int8")
    int8_body = SamplingEngine(models[kind], tok, slots=3, products="int8")
    int8_body.decode_step = None
    assert run(int8, reqs) == run(int8_body, reqs)


def test_fused_products_only_where_the_probe_finds_them_exact(models, tok, monkeypatch):  # noqa: F811
    reqs = requests(tok)
    want = run(SamplingEngine(models["qwen2"], tok, slots=3), reqs)
    monkeypatch.setattr(decode_step, "fusing_works", lambda layers: False)
    engine = SamplingEngine(models["qwen2"], tok, slots=3)
    assert run(engine, reqs) == want
    assert all(f.qkv is None and f.gate_up is None for f in engine.decode_step.fused)
    linears = {m for m in engine.body.modules() if type(m) is torch.nn.Linear}
    assert set(engine._packed) == {m for m in linears if packing_works(m.weight)}  # every separate copy kept


def test_fusing_works_compares_with_the_separate_products(monkeypatch):
    import unstereo.engine.kernels.onednn as onednn

    layers = [torch.nn.Linear(8, n) for n in (4, 2, 2)]

    def exact(x, w, b=None):  # each output the same reduction over the same inputs, whatever the width
        return (x[:, None, :] * w[None]).sum(-1) + (0 if b is None else b)

    monkeypatch.setattr(onednn, "pack", lambda w: w)
    monkeypatch.setattr(onednn, "linear", exact)
    assert decode_step.fusing_works(layers)
    # products whose columns change with the weight's width: the concatenation is not the separate products
    monkeypatch.setattr(
        onednn, "linear", lambda x, w, b=None: exact(x, w, b) + (1e-3 if w.shape[0] > 4 else 0)
    )
    assert not decode_step.fusing_works(layers)
    # a layer of another input width cannot be concatenated
    assert not decode_step.fusing_works([layers[0], torch.nn.Linear(7, 4)])


def test_build_takes_llama_and_qwen2_bodies_only(models):
    built = {k: SamplingEngine(m, None).decode_step is not None for k, m in models.items()}
    assert built == {"llama": True, "qwen2": True, "gpt2": False, "gemma3": False}
    model = models["llama"]
    body, config = model.model, model.config
    norm = body.layers[1].post_attention_layernorm
    norm.forward = lambda x: x  # a norm some kernel replaced computes other numbers
    try:
        assert decode_step.LlamaDecodeStep.build(body, config) is None
    finally:
        del norm.forward
    hook = body.layers[0].mlp.register_forward_hook(lambda *a: None)  # hooks run through module calls only
    try:
        assert decode_step.LlamaDecodeStep.build(body, config) is None
    finally:
        hook.remove()
    assert decode_step.LlamaDecodeStep.build(body, config) is not None


def test_rotation_by_roll_is_transformers_rotate_half():
    from transformers.models.llama.modeling_llama import apply_rotary_pos_emb

    # by hand: rotate_half([1, 2, 3, 4]) = [-3, -4, 1, 2]; with cos 2 and sin 10: [2 - 30, 4 - 40, 6 + 10, 8 + 20]
    x = torch.tensor([1.0, 2, 3, 4]).view(1, 1, 1, 4)
    cos, sin = torch.full((1, 1, 1, 4), 2.0), torch.full((1, 1, 1, 4), 10.0)
    assert decode_step._rotate(x, cos, decode_step._signed_sin(sin)).flatten().tolist() == [-28, -36, 16, 28]
    g = torch.Generator().manual_seed(0)
    q, k = torch.randn(5, 4, 1, 64, generator=g), torch.randn(5, 2, 1, 64, generator=g)
    cos, sin = torch.randn(5, 1, 64, generator=g), torch.randn(5, 1, 64, generator=g)
    want_q, want_k = apply_rotary_pos_emb(q, k, cos, sin)
    signed = decode_step._signed_sin(sin[:, :, None])
    assert torch.equal(decode_step._rotate(q, cos[:, :, None], signed), want_q)
    assert torch.equal(decode_step._rotate(k, cos[:, :, None], signed), want_k)


class _R:
    def __init__(self, name, position):
        self.name, self.position = name, position


def test_ended_rows_leave_their_slots_to_the_last_live_rows():
    cache = SlotCache(layers=2, slots=5, length=4)
    for layer in range(2):
        cache._alloc(layer, torch.zeros(1, 1, 1, 2))
        for row in range(5):  # row r holds r + 1 (values: minus) in every position it has
            cache.keys[layer][row] = row + 1
            cache.values[layer][row] = -(row + 1)
    rows = [_R(n, 3) for n in "abcde"]
    _fill_gaps(cache, rows, [1, 3])  # b and d end: e moves into b's slot, a and c stay
    assert [r.name for r in rows] == ["a", "e", "c"]
    for layer in range(2):
        assert cache.keys[layer][:3, 0, :3, 0].tolist() == [[1] * 3, [5] * 3, [3] * 3]
        assert cache.values[layer][1, 0, :3, 0].tolist() == [-5] * 3
    rows = [_R(n, 3) for n in "xyz"]
    _fill_gaps(cache, rows, [2])  # the last row ends: nothing moves
    assert [r.name for r in rows] == ["x", "y"]
    assert cache.keys[0][:3, 0, 0, 0].tolist() == [1, 5, 3]
