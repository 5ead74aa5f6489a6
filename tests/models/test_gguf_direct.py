"""A GGUF file loaded straight into int8 layers (:mod:`unstereo.models.gguf_direct`), against the road it replaces:
transformers' fp32 dequantisation of the same file (what the conversion saves) and the engine's int8 form of that."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F
from _scoring_models import tiny_qwen2_gguf, word_tokenizer
from test_llm_engine import PROMPTS, ids_of
from test_llm_engine import tok as tok  # noqa: F401  (the fixture: the word tokenizer, left padding)

from unstereo.engine.engine import EngineRequest, SamplingEngine
from unstereo.engine.kernels import int8, quantised
from unstereo.errors import UnstereoError
from unstereo.models import gguf_direct

pytestmark = pytest.mark.skipif(not int8.works(), reason="this PyTorch has no int8 dynamic linear")


@pytest.fixture(scope="module")
def gguf_file(tmp_path_factory):
    return tiny_qwen2_gguf(tmp_path_factory.mktemp("gguf"))


@pytest.fixture(scope="module")
def converted(gguf_file):
    """The conversion's road: transformers dequantises the whole file to fp32."""
    from transformers import AutoModelForCausalLM

    return AutoModelForCausalLM.from_pretrained(gguf_file.parent, gguf_file=gguf_file.name,
                                                dtype=torch.float32).eval()  # fmt: skip


@pytest.fixture(scope="module")
def direct(gguf_file):
    return gguf_direct.load_gguf(gguf_file.parent, gguf_file.name, "int8")


def _linears(model):
    return {n: m for n, m in model.named_modules() if type(m) is torch.nn.Linear}


def test_every_body_linear_is_int8_and_the_tied_head_is_the_fp32_embedding(direct, converted):
    cls = quantised.quantised_linear_class()
    body = {n for n, m in direct.named_modules() if isinstance(m, cls)}
    # the converted model's linears less its head: 7 per layer (q, k, v, o, gate, up, down) x 2 layers
    assert body == set(_linears(converted)) - {"lm_head"} and len(body) == 14
    assert direct.lm_head.weight is direct.model.embed_tokens.weight
    assert direct.lm_head.weight.dtype == torch.float32
    assert torch.equal(direct.lm_head.weight, converted.lm_head.weight)
    assert not any(p.device.type == "meta" for p in direct.parameters())
    assert quantised.is_quantised(direct) and not quantised.is_quantised(converted)


def test_the_int8_weights_are_those_the_engine_makes_from_the_converted_fp32(direct, converted):
    for name, layer in _linears(converted).items():
        if name == "lm_head":
            continue
        mine = direct.get_submodule(name).q
        theirs = int8.Int8Linear(layer.weight, layer.bias)
        qa, ba = torch.ops.quantized.linear_unpack(mine.packed)
        qb, bb = torch.ops.quantized.linear_unpack(theirs.packed)
        assert torch.equal(qa.int_repr(), qb.int_repr()) and torch.equal(mine.scale, theirs.scale)
        assert (ba is None and bb is None) or torch.equal(ba, bb)
        # rounding to the nearest of a per-row grid of step `scale`: at most half a step from the fp32 weight
        err = (qa.dequantize() - layer.weight).abs()
        assert bool((err <= mine.scale[:, None] / 2 * (1 + 1e-5)).all())


def test_direct_logits_equal_conversion_then_int8(direct, converted):
    ids = torch.tensor([[2, 4, 5, 6, 7, 8], [2, 9, 10, 11, 12, 13], [2, 14, 15, 16, 17, 18]])
    with torch.inference_mode():
        with int8.linears_through(int8.int8_layers(converted.model)):
            want = converted(input_ids=ids).logits
        got = direct(input_ids=ids).logits
        fp32 = converted(input_ids=ids).logits
    # the same int8 weights (above) and the same operations in the same order on the same input: equal up to
    # float32 rounding, a few units in the last place of the largest logit
    tol = 8 * torch.finfo(torch.float32).eps * float(want.abs().max())
    assert float((got - want).abs().max()) <= tol
    assert float((got - fp32).abs().max()) > tol  # and int8 really ran (fp32's logits differ)


def test_exact_products_quantise_each_row_on_its_own_whatever_the_batch(direct):
    layer = direct.model.layers[0].mlp.down_proj
    q, bias = torch.ops.quantized.linear_unpack(layer.q.packed)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(3, 128, generator=g)
    x[2, 5] = 80.0  # another row's outlier changes the per-tensor input scale of the int8 product
    with quantised.exact_products(direct) as n:
        assert n == 14
        batch, alone = layer(x), layer(x[:1])
    assert not layer.exact
    # each row quantised on its own: the first row's numbers whatever the batch, and each row's its own product
    assert torch.equal(batch[:1], alone)
    assert all(torch.equal(batch[i : i + 1], layer(x[i : i + 1])) for i in range(3))
    assert not torch.allclose(
        layer(x)[:1], layer(x[:1]), atol=1e-5
    )  # the batch's int8 product does depend on it
    # and the int8 weights times the input, up to the input's rounding to int8
    assert torch.allclose(batch, F.linear(x, q.dequantize(), bias), atol=0.05 * float(batch.abs().max()))


def test_the_engine_probe_passes_and_samples_in_int8(direct, tok):  # noqa: F811
    engine = SamplingEngine(direct, tok, slots=2, products="int8")
    assert engine.int8 and engine.check() is None
    reqs = [EngineRequest(ids_of(tok, p), max_tokens=5, temperature=0.0) for p in PROMPTS]
    outs = engine.generate(reqs)
    assert [len(o.tokens) for o in outs] and all(1 <= len(o.tokens) <= 5 for o in outs)
    assert engine._products_body == {}  # nothing left for the engine to quantise but the head


def test_an_untied_int8_model_holds_its_head_and_embedding_in_bf16_and_samples(tmp_path, tok):  # noqa: F811
    from unstereo.engine.kernels.bf16 import Bf16Linear

    file = tiny_qwen2_gguf(tmp_path, tie=False)
    model = gguf_direct.load_gguf(file.parent, file.name, "int8")
    head, embedding = model.lm_head, model.model.embed_tokens
    assert isinstance(head.q, Bf16Linear) and head.form == "bf16" and embedding.weight.dtype == torch.bfloat16
    assert model(input_ids=torch.tensor([[2, 4, 5]])).logits.dtype == torch.float32  # rows widened on lookup
    engine = SamplingEngine(model, tok, slots=2, products="int8")
    assert engine.int8 and engine.dtype == torch.float32 and engine.check() is None
    outs = engine.generate([EngineRequest(ids_of(tok, p), max_tokens=4, temperature=0.0) for p in PROMPTS])
    assert all(1 <= len(o.tokens) <= 4 for o in outs)
    # the engine's int8 head is made from the bf16 weight, a block at a time, without the outlier path
    assert engine._int8_head.int8 and not any(q.outliers for q in engine._int8_head.int8)


def test_local_backend_samples_from_the_gguf_without_converting_it(gguf_file, monkeypatch):
    from unstereo.llm.local import LocalBackend
    from unstereo.llm.types import ContinuationRequest
    from unstereo.models import load
    from unstereo.models.request import model_request

    def no_conversion(*a, **k):
        raise AssertionError("the int8 road must not convert the GGUF file")

    monkeypatch.setattr(load, "convert_gguf", no_conversion)  # the converted road of load()
    # the tiny file holds no tokenizer
    monkeypatch.setattr(gguf_direct, "read_gguf_tokenizer", lambda path, name: word_tokenizer())
    request = model_request({"model": str(gguf_file), "sampling_products": "int8", "batch_size": 2})
    backend = LocalBackend(request)
    out = backend.continue_batch([ContinuationRequest("she went", max_tokens=3, seed=1, temperature=0.0)])
    assert 1 <= out[0].completion_tokens <= 3 and quantised.is_quantised(backend.loaded()[0])


def test_a_file_missing_a_tensor_is_named(tmp_path):
    import gguf

    from unstereo.models.gguf_direct import load_gguf

    full = tiny_qwen2_gguf(tmp_path / "full")
    reader = gguf.GGUFReader(str(full))
    writer = gguf.GGUFWriter(str(tmp_path / "cut.gguf"), "qwen2")
    for field in reader.fields.values():
        if field.name.startswith("qwen2."):
            value = field.parts[field.data[0]]
            kind = field.types[0]
            writer.add_key_value(field.name, value.tolist()[0], kind)
    for t in reader.tensors:
        if t.name != "blk.1.ffn_down.weight":
            writer.add_tensor(t.name, t.data, raw_shape=t.data.shape, raw_dtype=t.tensor_type)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    want = r"cut\.gguf lacks tensors for \['model\.layers\.1\.mlp\.down_proj\.weight'\] \(1 in all\)"
    with pytest.raises(UnstereoError, match=want):
        load_gguf(tmp_path, "cut.gguf", "int8")


def test_the_float32_form_is_the_converted_model_without_the_folder(gguf_file, converted):
    model = gguf_direct.load_gguf(gguf_file.parent, gguf_file.name, "float32")
    assert not quantised.is_quantised(model)
    theirs = dict(converted.named_parameters())
    mine = dict(model.named_parameters())
    assert mine.keys() == theirs.keys()
    assert all(
        torch.equal(mine[n], theirs[n]) for n in mine
    )  # the same dequantised numbers, parameter by parameter
    with pytest.raises(ValueError, match="form"):
        gguf_direct.load_gguf(gguf_file.parent, gguf_file.name, "int4")


def test_fp32_sampling_of_an_unconverted_gguf_loads_it_directly(gguf_file, monkeypatch):
    # no converted folder beside the file: the model is read straight into fp32; with one (a job scored the
    # model), the folder is loaded (the ordinary road, seconds)
    from unstereo.llm.local import LocalBackend
    from unstereo.models import gguf_convert
    from unstereo.models.request import model_request

    request = model_request({"model": str(gguf_file)})
    backend = LocalBackend(request)
    assert backend.products == "float32" and backend._direct_form() == "float32"
    monkeypatch.setattr(gguf_convert, "is_current", lambda folder: True)
    assert backend._direct_form() is None
    q8 = LocalBackend(model_request({"model": str(gguf_file), "sampling_products": "int8"}))
    assert q8._direct_form() == "int8"
