"""bf16 products for sampling (:mod:`unstereo.engine.kernels.bf16`, ``sampling_products: bfloat16``): the product on
hand-made inputs, the CPU check, a GGUF loaded straight into bf16 (tied and untied heads) and the engine on it."""

from __future__ import annotations

import logging

import pytest
import torch
import torch.nn.functional as F
from _scoring_models import tiny_qwen2_gguf
from test_llm_engine import PROMPTS, ids_of
from test_llm_engine import tok as tok  # noqa: F401  (the fixture: the word tokenizer, left padding)

from unstereo.engine.engine import EngineRequest, SamplingEngine
from unstereo.engine.kernels import bf16, quantised
from unstereo.engine.kernels.bf16 import Bf16Linear
from unstereo.models import gguf_direct


def test_bf16_product_of_a_hand_made_input():
    # every number is a bf16 value, so rounding changes nothing: [2, 4] times [[1, 2], [0.5, -1]] is
    # [2 + 8, 1 - 4] = [10, -3], plus the bias [0.25, 0]
    layer = Bf16Linear(torch.tensor([[1.0, 2.0], [0.5, -1.0]]), torch.tensor([0.25, 0.0]))
    x = torch.tensor([[2.0, 4.0]])
    assert layer.product(x).tolist() == [[10.25, -3.0]] and layer.product(x).dtype == torch.float32
    assert layer.exact(x).tolist() == [[10.25, -3.0]]
    assert layer.widened(x).tolist() == [[10.25, -3.0]] and layer.widened(x).dtype == torch.float32
    assert layer.weight.dtype == torch.bfloat16 and layer.bias.dtype == torch.float32


def test_the_product_rounds_its_input_to_bf16_and_the_exact_and_widened_ones_do_not():
    # bf16 keeps 8 significant bits: 1 + 2**-10 rounds to 1, so the product gives 1 * 3 = 3; exact and widened
    # (the fp32 input times the weight 3, exact in bf16): 3 + 3 * 2**-10
    layer = Bf16Linear(torch.tensor([[3.0]]))
    x = torch.tensor([[1.0 + 2**-10]])
    assert layer.product(x).item() == 3.0
    assert layer.exact(x).item() == 3.0 + 3 * 2**-10
    assert layer.widened(x).item() == 3.0 + 3 * 2**-10


@pytest.mark.parametrize("native", [True, False])
def test_a_call_multiplies_natively_where_the_cpu_can_else_widens(monkeypatch, native):
    layer = Bf16Linear(torch.tensor([[3.0]]))
    x = torch.tensor([[1.0 + 2**-10]])
    monkeypatch.setattr(bf16, "native", lambda: native)
    assert layer(x).item() == (3.0 if native else 3.0 + 3 * 2**-10)
    assert bf16.label() == (" [bf16 products]" if native else " [bf16 weights]")


def test_widened_in_blocks_equals_exact(monkeypatch):
    # a weight of 37 rows in blocks of 5 (8 blocks, the last of 2), an input of 2 x 3 rows: each block's fp32
    # product of the same numbers as exact's, written to its own rows; within fp32 rounding (summation order)
    g = torch.Generator().manual_seed(2)
    layer = Bf16Linear(torch.randn(37, 16, generator=g), torch.randn(37, generator=g))
    x = torch.randn(2, 3, 16, generator=g)
    monkeypatch.setattr(bf16, "WIDEN_BLOCK_BYTES", 5 * 4 * 16)
    got = layer.widened(x)
    assert got.shape == (2, 3, 37) and got.is_contiguous()
    assert torch.allclose(got, layer.exact(x), rtol=1e-5, atol=1e-5)
    # the scratch buffer is shared and reused: a second, narrower layer gives its own numbers
    small = Bf16Linear(torch.tensor([[1.0, -1.0], [2.0, 0.5]]))
    assert small.widened(torch.tensor([[4.0, 2.0]])).tolist() == [[2.0, 9.0]]
    assert torch.equal(layer.widened(x), got)


def test_exact_in_blocks_equals_exact_at_once(monkeypatch):
    g = torch.Generator().manual_seed(0)
    layer = Bf16Linear(torch.randn(37, 16, generator=g), torch.randn(37, generator=g))
    x = torch.randn(2, 3, 16, generator=g)
    whole = layer.exact(x)
    monkeypatch.setattr(bf16, "EXACT_BLOCK_BYTES", 5 * 4 * 16)  # 5 rows a block: 8 blocks, the last of 2
    # the same fp32 products; a kernel may sum a narrower product in another order: within fp32 rounding
    assert torch.allclose(layer.exact(x), whole, rtol=1e-5, atol=1e-5) and whole.shape == (2, 3, 37)


def test_cpu_flags_are_read_from_cpuinfo(tmp_path):
    info = tmp_path / "cpuinfo"
    info.write_text(
        "processor\t: 0\nflags\t\t: fpu avx2 avx512f avx512_bf16\n\nprocessor\t: 1\nflags\t: fpu\n"
    )
    assert bf16.cpu_flags(info) == {"fpu", "avx2", "avx512f", "avx512_bf16"}  # the first processor's
    assert bf16.cpu_flags(tmp_path / "absent") == set()
    assert set(bf16.NATIVE_FLAGS) & bf16.cpu_flags(info)


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("gguf")
    return tiny_qwen2_gguf(folder, "tied.gguf"), tiny_qwen2_gguf(folder, "untied.gguf", seed=1, tie=False)


def _converted(path):
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(path.parent, gguf_file=path.name, dtype=torch.float32).eval()


def _rounded(model):
    """``model`` with its linear weights (head included) and its embedding rounded to bf16, computing in fp32."""
    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.Linear | torch.nn.Embedding):
                m.weight.copy_(m.weight.to(torch.bfloat16).float())
    return model


def test_the_tied_head_stays_the_fp32_embedding(files):
    direct = gguf_direct.load_gguf(files[0].parent, files[0].name, "bfloat16")
    converted = _converted(files[0])
    cls = quantised.quantised_linear_class()
    body = {n: m for n, m in direct.named_modules() if isinstance(m, cls)}
    assert len(body) == 14 and {m.form for m in body.values()} == {"bf16"}  # 7 linears x 2 layers
    for name, layer in body.items():
        want = converted.get_submodule(name).weight.to(torch.bfloat16)
        assert torch.equal(layer.q.weight, want)
    assert direct.lm_head.weight is direct.model.embed_tokens.weight
    assert torch.equal(direct.lm_head.weight, converted.lm_head.weight)  # fp32, as read


def test_an_untied_head_and_the_embedding_are_held_in_bf16(files):
    direct = gguf_direct.load_gguf(files[1].parent, files[1].name, "bfloat16")
    converted = _converted(files[1])
    cls = quantised.quantised_linear_class()
    assert isinstance(direct.lm_head, cls) and direct.lm_head.q.weight.dtype == torch.bfloat16
    assert direct.model.embed_tokens.weight.dtype == torch.bfloat16
    ids = torch.tensor([[3, 5, 7, 2]])
    assert direct.model.embed_tokens(ids).dtype == torch.float32  # its rows go on in fp32
    with torch.inference_mode():
        got = direct(input_ids=ids).logits
        with quantised.exact_products(direct):
            exact = direct(input_ids=ids).logits
        want = _rounded(converted)(input_ids=ids).logits
    # exact products: the bf16-held weights times fp32 inputs, the fp32 model of those weights up to summation order
    assert float((exact - want).abs().max()) < 1e-4
    # the products with bf16 inputs stay near them (inputs rounded to 8 significant bits)
    assert float((got - want).abs().max()) < 0.05 * float(want.abs().max())


@pytest.mark.parametrize("native", [True, False])
def test_the_engine_probe_passes_and_samples_with_a_bf16_head(files, tok, monkeypatch, native):  # noqa: F811
    # native bf16 products work on any CPU (slowly without native bf16); widened ones are the other CPUs' form
    monkeypatch.setattr(bf16, "native", lambda: native)
    direct = gguf_direct.load_gguf(files[1].parent, files[1].name, "bfloat16")
    engine = SamplingEngine(direct, tok, slots=2, products="bfloat16")
    assert engine.bf16 and engine.dtype == torch.float32 and engine._bf16_head is not None
    assert engine.check() is None  # the probe's exact products equal the full pass's log-probabilities
    reqs = [
        EngineRequest(ids_of(tok, p), max_tokens=3, temperature=0.7, seed=i) for i, p in enumerate(PROMPTS)
    ]
    outs = engine.generate(reqs, logprobs=True)
    assert [len(o.tokens) for o in outs] == [3] * len(PROMPTS) or all(1 <= len(o.tokens) <= 3 for o in outs)
    assert all(lp <= 0 for o in outs for lp in o.logprobs)


@pytest.mark.parametrize("native", [True, False])
def test_the_engine_makes_bf16_forms_of_an_fp32_model_only_while_it_samples(files, tok, monkeypatch, native):  # noqa: F811
    monkeypatch.setattr(bf16, "native", lambda: native)
    model = _converted(files[0])
    before = {n: m.weight.clone() for n, m in model.named_modules() if type(m) is torch.nn.Linear}
    engine = SamplingEngine(model, tok, slots=2, products="bfloat16")
    out = engine.generate([EngineRequest(ids_of(tok, PROMPTS[0]), max_tokens=2, temperature=0.0)])
    assert len(out[0].tokens) == 2 and engine.dtype == torch.float32
    assert engine._products_body and all(isinstance(q, Bf16Linear) for q in engine._products_body.values())
    for n, m in model.named_modules():  # the model itself is never changed
        if type(m) is torch.nn.Linear:
            assert torch.equal(m.weight, before[n]) and "forward" not in vars(m)


def test_bfloat16_without_native_bf16_holds_bf16_weights_keyed_apart(monkeypatch, caplog):
    from unstereo.llm.local import LocalBackend
    from unstereo.models.request import model_request

    monkeypatch.setattr(bf16, "native", lambda: False)
    request = model_request({"model": "some/folder", "sampling_products": "bfloat16", "device": "cpu"})
    with caplog.at_level(logging.INFO, logger="unstereo"):
        backend = LocalBackend(request)
    assert backend.products == "bfloat16" and backend.model == "some/folder [bf16 weights]"
    assert "no native bf16 products" in caplog.text and "widened" in caplog.text
    monkeypatch.setattr(bf16, "native", lambda: True)
    backend = LocalBackend(request)
    assert backend.products == "bfloat16" and backend.model == "some/folder [bf16 products]"


def test_a_bf16_form_product_matches_the_rounded_weights_times_the_rounded_input():
    g = torch.Generator().manual_seed(1)
    w, x = torch.randn(24, 40, generator=g), torch.randn(5, 40, generator=g)
    got = Bf16Linear(w).product(x)
    want = F.linear(x.to(torch.bfloat16).float(), w.to(torch.bfloat16).float())
    # fp32 accumulation of exact bf16 x bf16 products; the result is rounded to bf16 (8 significant bits)
    assert float(((got - want).abs() / want.abs().clamp_min(1e-3)).max()) <= 2**-8


def test_free_memory_goes_back_where_the_c_library_can(monkeypatch):
    from unstereo.engine import memory

    # glibc (the CI and the dev machines) has malloc_trim; without it the call is a no-op that says so
    assert memory.give_back_free_memory() is (memory._trim() is not None)
    monkeypatch.setattr(memory, "_trim", lambda: None)
    assert memory.give_back_free_memory() is False
