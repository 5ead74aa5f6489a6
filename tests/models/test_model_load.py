"""The one load of a local model, :func:`unstereo.models.load.load`, and the device resolved once, in the request
(:attr:`unstereo.models.request.ModelRequest.resolved_device`): on fake transformers classes, whose calls are the
answer."""

from __future__ import annotations

import importlib
import sys

import pytest
import torch

import unstereo.models.load as model_load
import unstereo.models.request as model_request
from unstereo.errors import UnstereoError
from unstereo.models.load import load
from unstereo.models.request import ModelRequest
from unstereo.models.spec import ModelSpec


class FakeModel:
    def __init__(self, calls: list):
        self.calls = calls

    def to(self, device):
        self.calls.append(("to", device))
        return self

    def eval(self):
        self.calls.append(("eval",))
        return self


@pytest.fixture
def calls(monkeypatch):
    """Every call the fake auto classes and tokenizer loader see: (auto class, path, keyword arguments), then the
    model's ``to(device)`` and ``eval()``."""
    seen: list = []
    transformers = importlib.import_module(
        "transformers"
    )  # the module load() imports (a test may have reloaded it)
    for name in ("AutoModelForCausalLM", "AutoModelForMaskedLM", "AutoModelForSequenceClassification"):

        def from_pretrained(path, _name=name, **kwargs):
            seen.append((_name, path, kwargs))
            return FakeModel(seen)

        monkeypatch.setattr(
            transformers, name, type(name, (), {"from_pretrained": staticmethod(from_pretrained)})
        )
    monkeypatch.setattr(model_load, "load_tokenizer", lambda spec: f"tokenizer of {spec.path}")
    return seen


def test_resolved_device_is_resolved_once_per_request(monkeypatch):
    asked = []
    monkeypatch.setattr(model_request, "resolve_device", lambda device: asked.append(device) or "cuda")
    request = ModelRequest(ModelSpec(path="m"))  # device auto
    assert request.resolved_device == "cuda" and request.resolved_device == "cuda"
    assert asked == ["auto"]
    assert request.device == "auto" and request == ModelRequest(
        ModelSpec(path="m")
    )  # not a field: equality as before


def test_resolve_device_picks_cuda_before_the_cpu(monkeypatch):
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    assert ModelRequest(ModelSpec(path="m"), device="auto").resolved_device == "cuda"
    assert ModelRequest(ModelSpec(path="m"), device="cpu").resolved_device == "cpu"


def test_each_head_loads_its_class_on_the_requests_device(calls):
    spec = ModelSpec(path="some/folder", revision="r1")
    model, tok = load(
        ModelRequest(spec, scorer="pll", dtype="bfloat16", device="cpu")
    )  # masked scorer: masked head
    assert tok == "tokenizer of some/folder"
    assert calls == [
        ("AutoModelForMaskedLM", "some/folder", {"revision": "r1", "dtype": torch.bfloat16}),
        ("to", "cpu"),
        ("eval",),
    ]
    calls.clear()
    load(
        ModelRequest(spec, device="cpu")
    )  # the causal scorer's request: causal head, dtype auto = fp32 on the CPU
    assert calls[0] == ("AutoModelForCausalLM", "some/folder", {"revision": "r1", "dtype": torch.float32})
    calls.clear()
    load(ModelRequest(spec, dtype="bfloat16", device="cpu"), "classifier")  # transformers' default dtype
    assert calls[0] == ("AutoModelForSequenceClassification", "some/folder", {"revision": "r1"})


def test_load_refuses_what_it_cannot_load(calls, monkeypatch):
    with pytest.raises(UnstereoError, match="served by an endpoint"):
        load(ModelRequest(ModelSpec(endpoint="http://h/v1", name="m")))
    gguf = ModelSpec(path="folder", gguf_file="m.gguf")
    with pytest.raises(UnstereoError, match="GGUF files hold causal LMs; a masked LM needs"):
        load(ModelRequest(gguf, scorer="pll"))
    with pytest.raises(UnstereoError, match="a classifier needs"):
        load(ModelRequest(gguf), "classifier")
    assert calls == []

    def missing(path, **kwargs):
        raise OSError("no such folder")

    monkeypatch.setattr(
        sys.modules["transformers"].AutoModelForMaskedLM, "from_pretrained", staticmethod(missing)
    )
    with pytest.raises(UnstereoError, match="cannot load masked LM 'gone': no such folder"):
        load(ModelRequest(ModelSpec(path="gone"), scorer="aul", device="cpu"))


def test_a_direct_load_reads_the_gguf_file_only(calls, monkeypatch):
    import unstereo.models.gguf_direct as gguf_direct

    monkeypatch.setattr(
        gguf_direct, "load_gguf_with_tokenizer", lambda path, name, form: (f"{path}/{name}", form)
    )
    request = ModelRequest(ModelSpec(path="folder", gguf_file="m.gguf"), sampling_products="int8")
    assert load(request, direct="int8") == ("folder/m.gguf", "int8")
    assert calls == []  # no transformers class, no converted folder
    with pytest.raises(UnstereoError, match="a direct load \\(bfloat16\\) reads a GGUF file's causal LM"):
        load(ModelRequest(ModelSpec(path="folder")), direct="bfloat16")
