"""int8 products for sampling (:mod:`unstereo.engine.kernels.int8`, ``sampling_products: int8``): the product on a
hand-made input, the engine's use of it, and the setting's road from a config section to the LLM cache's key."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F
from test_llm_engine import PROMPTS, ids_of, tiny_lm
from test_llm_engine import tok as tok  # noqa: F401  (the fixture)

from unstereo.engine.engine import EngineRequest, SamplingEngine
from unstereo.engine.kernels import int8
from unstereo.errors import ConfigError
from unstereo.llm.local import PRODUCT_LABELS, LocalBackend
from unstereo.llm.types import ContinuationRequest
from unstereo.models.request import model_request

pytestmark = pytest.mark.skipif(not int8.works(), reason="this PyTorch has no int8 dynamic linear")

# Every weight row's entries are multiples of its largest / 127 (0.01 here): the int8 weights are exact. The input's
# ordinary columns lie on the grid its per-tensor quantisation picks (0 .. 1.27 in steps of 0.01), and column 3
# (100 > 6) is an outlier, kept in fp32.
W = torch.tensor([[1.27, -0.64, 0.0, 0.01], [0.0, 0.0, 1.27, 1.27]])
B = torch.tensor([0.5, -1.0])
X = torch.tensor([[1.27, 0.5, 0.02, 100.0]])


def test_int8_product_of_a_hand_made_input():
    # y0 = 1.27*1.27 + 0.5*(-0.64) + 0.02*0 + 100*0.01 + 0.5 = 1.6129 - 0.32 + 1 + 0.5 = 2.7929
    # y1 = 0.02*1.27 + 100*1.27 - 1 = 0.0254 + 127 - 1 = 126.0254
    got = int8.Int8Linear(W, B)(X)
    assert got.tolist()[0] == pytest.approx([2.7929, 126.0254], abs=2e-3)


def test_without_the_outlier_column_in_fp32_the_product_is_coarse():
    # one scale for 0..100 (100/127 per level): 1.27 becomes 2 levels, 0.5 one, 0.02 none; y0 is off by ~0.2
    got = int8.Int8Linear(W, B)(X, threshold=float("inf"))
    assert abs(float(got[0, 0]) - 2.7929) > 0.1


def test_int8_product_keeps_leading_dims_and_stays_near_fp32():
    g = torch.Generator().manual_seed(0)
    w, x = torch.randn(48, 40, generator=g), torch.randn(3, 5, 40, generator=g)
    x[0, 1, 7] = 40.0
    got, want = int8.Int8Linear(w)(x), F.linear(x, w)
    assert got.shape == (3, 5, 48)
    assert float((got - want).abs().max()) < 0.03 * float(want.abs().max())


def test_the_router_restores_the_forward_it_found():
    layer = torch.nn.Linear(4, 2)
    before = lambda x: x  # noqa: E731  (another router's forward, e.g. oneDNN's)
    layer.forward = before
    with int8.linears_through({layer: int8.Int8Linear(layer.weight, layer.bias)}) as n:
        assert n == 1 and isinstance(vars(layer)["forward"], int8.Int8Linear)
    assert vars(layer)["forward"] is before
    plain = torch.nn.Linear(4, 2)
    with pytest.raises(RuntimeError), int8.linears_through({plain: int8.Int8Linear(plain.weight)}):
        raise RuntimeError
    assert "forward" not in vars(plain)


@pytest.fixture(scope="module")
def qwen(tok):  # noqa: F811
    return tiny_lm("qwen2", tok)


def test_engine_samples_with_int8_products_and_probes_in_fp32(qwen, tok):  # noqa: F811
    fp32 = SamplingEngine(qwen, tok, slots=2)
    q8 = SamplingEngine(qwen, tok, slots=2, products="int8")
    assert q8.int8 and q8.check() is None  # the probe's fp32 log-probabilities equal the full pass's
    reqs = [EngineRequest(ids_of(tok, p), max_tokens=6, temperature=0.0) for p in PROMPTS]
    want = fp32.generate(reqs, logprobs=True)
    got = q8.generate(reqs, logprobs=True)
    # the first token of each row, drawn from the same prompt's distribution: int8 products ran (not fp32's
    # values) and stay near fp32's (a 32-wide random model: 7-bit inputs are coarse); later tokens may differ
    firsts = [
        abs(w.logprobs[0] - g.logprobs[0])
        for w, g in zip(want, got, strict=True)
        if w.tokens[0] == g.tokens[0]
    ]
    assert len(firsts) >= 3 and 0 < max(firsts) < 0.3
    assert not any("forward" in vars(m) for m in qwen.modules())  # the model is left as it was


def test_engine_rejects_unknown_products(qwen, tok):  # noqa: F811
    with pytest.raises(ValueError, match="products"):
        SamplingEngine(qwen, tok, products="int4")


def test_sampling_products_travels_from_the_section_to_the_cache_key(qwen, tok):  # noqa: F811
    request = model_request({"model": "some/folder", "sampling_products": "int8"}, key="generate.model")
    assert request.sampling_products == "int8" and request.dtype == "auto"
    assert model_request({"model": "some/folder"}).sampling_products == "float32"
    with pytest.raises(ConfigError, match="generate.sampling_products"):
        model_request({"model": "some/folder", "sampling_products": "int4"}, key="generate.model")
    q8 = LocalBackend.from_loaded(qwen, tok, "tiny", batch_size=2, sampling_products="int8")
    fp32 = LocalBackend.from_loaded(qwen, tok, "tiny", batch_size=2)
    assert q8.model == "tiny" + PRODUCT_LABELS["int8"] and fp32.model == "tiny"
    req = ContinuationRequest("he", max_tokens=3, seed=1)
    assert req.cache_key(q8.name, q8.model) != req.cache_key(fp32.name, fp32.model)
    assert q8.continue_batch([req])[0].completion_tokens == 3
    assert q8._engine.int8 and not fp32.continue_batch([req]) == [] and not fp32._engine.int8


def test_int8_is_for_the_cpu_only(qwen, tok, caplog):  # noqa: F811
    request = model_request({"model": "some/folder", "sampling_products": "int8", "device": "cuda"})
    backend = LocalBackend(request)
    assert backend.products == "float32" and backend.model == "some/folder"
    assert "int8 applies on the CPU only" in caplog.text


def test_generate_fallback_says_it_samples_in_fp32(qwen, tok, monkeypatch, caplog):  # noqa: F811
    monkeypatch.setattr(SamplingEngine, "check", lambda self: "no, not this one")
    backend = LocalBackend.from_loaded(qwen, tok, "tiny", batch_size=2, sampling_products="int8")
    with caplog.at_level(logging.WARNING, logger="unstereo"):
        assert (
            backend.continue_batch([ContinuationRequest("he", max_tokens=2, seed=0)])[0].completion_tokens
            == 2
        )
    assert backend._engine is False and "generate samples with fp32 products" in caplog.text
