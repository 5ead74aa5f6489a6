"""One model run through the LLM client: every command that runs a chat or continuation model
builds one ModelRequest (the spec resolved once) and passes it whole to make_client and the local backend, which
never resolve it again; the cache key stays (backend name, the spec's label)."""

from __future__ import annotations

import json
import sys

import pytest
from click.testing import CliRunner

import unstereo.models.spec as model_spec
from unstereo.cli import cli
from unstereo.engine.engine import AUTO_SLOTS
from unstereo.llm import ContinuationRequest, make_client
from unstereo.llm.local import LocalBackend
from unstereo.models.request import ModelRequest, model_request
from unstereo.models.spec import ModelSpec


class _Stop(Exception):
    """Raised where a test has seen what it wanted (before any model is loaded)."""


@pytest.fixture
def resolutions(monkeypatch):
    """Every call of ``resolve_model`` (the entry it was given), wherever a module imported it from."""
    original = model_spec.resolve_model
    calls = []

    def counting(entry, *args, **kwargs):
        calls.append(entry)
        return original(entry, *args, **kwargs)

    for name, module in list(sys.modules.items()):
        if name.startswith("unstereo") and getattr(module, "resolve_model", None) is original:
            monkeypatch.setattr(module, "resolve_model", counting)
    return calls


@pytest.fixture
def backends(monkeypatch):
    """The local backends built from now on (the first one stops the command, before it loads a model)."""
    init = LocalBackend.__init__
    seen = []

    def record(self, request):
        init(self, request)
        seen.append(self)
        raise _Stop

    monkeypatch.setattr(LocalBackend, "__init__", record)
    return seen


def _stopped(args):
    res = CliRunner().invoke(cli, [str(a) for a in args])
    assert isinstance(res.exception, _Stop), (res.output, res.exception)


def test_make_client_takes_the_request_whole_and_resolves_nothing_again(resolutions):
    request = model_request({"model": "a/b@v1", "device": "cpu", "dtype": "bfloat16", "batch_size": 3})
    assert resolutions == ["a/b@v1"]
    client = make_client(request)
    backend = client.backend
    assert backend.request is request and backend.spec is request.spec and backend.batch_size == 3
    assert client.model_id == "local:a/b@v1"
    # a resolved spec is taken as is, with the request's defaults (batch size auto: up to AUTO_SLOTS rows)
    spec = ModelSpec(path="a/b")
    assert make_client(spec).backend.request == ModelRequest(spec=spec)
    assert make_client(spec).backend.batch_size == AUTO_SLOTS == 128 and make_client(spec).backend.auto
    assert len(resolutions) == 1
    # a string or mapping from a Python user is resolved once, at the entry point
    assert make_client("resource:smollm2/S.gguf", external_dir="ext").backend.spec == ModelSpec(
        path="ext/smollm2", gguf_file="S.gguf", resource="smollm2"
    )
    remote = make_client({"endpoint": "http://127.0.0.1:9/v1", "name": "m", "api_key_env": None})
    assert remote.model_id == "openai:m"
    assert resolutions[1:] == ["resource:smollm2/S.gguf", {"endpoint": "http://127.0.0.1:9/v1", "name": "m",
                                                            "api_key_env": None}]  # fmt: skip
    with pytest.raises(TypeError, match="ModelRequest"):
        LocalBackend("a/b")


def test_local_backend_loads_the_requests_spec_with_its_device_and_dtype(tmp_path, resolutions):
    from _scoring_models import tiny_gpt2, word_tokenizer

    tok = word_tokenizer()
    tiny_gpt2(len(tok)).save_pretrained(tmp_path / "tiny")
    tok.save_pretrained(tmp_path / "tiny")
    request = model_request({"model": str(tmp_path / "tiny"), "device": "cpu", "dtype": "float32",
                             "batch_size": 2})  # fmt: skip
    client = make_client(request, cache=tmp_path / "c.sqlite")
    req = ContinuationRequest("she went", max_tokens=2, seed=1)
    first = client.continue_one(req)
    model = client.backend._lm
    assert str(model.device) == "cpu" and str(model.dtype) == "torch.float32"
    assert len(resolutions) == 1  # in model_request only: not in make_client, the backend or the loader
    # the cache key is the request's under (backend name, the spec's label), as before the request travelled whole,
    # and, for a sampled request (T > 0 here), the engine's uniform stream
    from unstereo.engine.sampler import STREAM

    assert req.temperature > 0 and client.backend.sampler == STREAM
    assert client._key(req) == req.cache_key("local", str(tmp_path / "tiny"), STREAM)
    client.close()
    other = make_client(str(tmp_path / "tiny"), cache=tmp_path / "c.sqlite")  # other options, the same key
    again = other.continue_one(req)
    other.close()
    assert again.cached and again.text == first.text


def test_llm_commands_build_one_request(tmp_path, resolutions, backends):
    _stopped(["llm", "chat", "some/model", "hi", "--device", "cpu", "--dtype", "bfloat16"])
    assert backends[-1].request == ModelRequest(spec=ModelSpec(path="some/model"), device="cpu", dtype="bfloat16",
                                                batch_size=1)  # fmt: skip
    (tmp_path / "p.csv").write_text("prompt_id,prompt\na,she went\n")
    _stopped(["llm", "continue", "some/model", tmp_path / "p.csv", "-o", tmp_path / "c.parquet",
              "--batch-size", "3", "--dtype", "fp32"])  # fmt: skip
    assert backends[-1].request == ModelRequest(spec=ModelSpec(path="some/model"), dtype="fp32", batch_size=3)
    assert resolutions == ["some/model", "some/model"]
    # the default: every row of a call at once (the engine bounds them)
    _stopped(["llm", "continue", "some/model", tmp_path / "p.csv", "-o", tmp_path / "c.parquet"])
    assert backends[-1].request.batch_size == "auto"


def test_fairpair_sample_builds_one_request(tmp_path, resolutions, backends):
    from unstereo.fairpair import schemas as fp_schemas
    from unstereo.fairpair.perturb import RulePerturbation
    from unstereo.fairpair.prompts import common_sents
    from unstereo.tables import write_table

    p = RulePerturbation({"John": "Jane"}, {"he": "she", "man": "woman"})
    prompts = common_sents(["doctor"], [("John", "Jane")], [("man", "woman")], p)
    write_table(prompts, tmp_path / "p" / "prompts.parquet", fp_schemas.PROMPTS)
    (tmp_path / "p" / "perturbation.json").write_text('{"names": {"John": "Jane"}, "words": {"he": "she"}}')
    _stopped(["fairpair", "sample", "some/model", tmp_path / "p", "-o", tmp_path / "m", "--device", "cpu",
              "--batch-size", "5", "--dtype", "float16"])  # fmt: skip
    assert backends[-1].request == ModelRequest(spec=ModelSpec(path="some/model"), device="cpu", dtype="float16",
                                                batch_size=5)  # fmt: skip
    assert resolutions == ["some/model"]
    _stopped(["fairpair", "sample", "some/model", tmp_path / "p", "-o", tmp_path / "m"])
    assert backends[-1].request.batch_size == "auto"


def test_sentiment_commands_build_one_request(tmp_path, resolutions, backends, monkeypatch):
    settings = json.dumps({"device": "cpu", "dtype": "bfloat16", "batch_size": 4})
    _stopped(["sentiment", "sample", "some/model", "-o", tmp_path / "c.parquet", "--settings", settings])
    assert backends[-1].request == ModelRequest(spec=ModelSpec(path="some/model"), device="cpu", dtype="bfloat16",
                                                batch_size=4)  # fmt: skip
    seen = {}

    def run_debias(request, *args, **kwargs):
        seen["request"] = request
        raise _Stop

    monkeypatch.setattr("unstereo.sentiment.debias_eval.run_debias", run_debias)
    _stopped(
        [
            "sentiment",
            "debias",
            "some/model",
            "-o",
            tmp_path / "d",
            "--method",
            "none",
            "--settings",
            settings,
        ]
    )
    # the fine-tuning's request: float32 weights on the settings' device (--device overrides it)
    assert seen["request"] == ModelRequest(spec=ModelSpec(path="some/model"), device="cpu", dtype="float32")
    _stopped(["sentiment", "debias", "some/model", "-o", tmp_path / "d", "--method", "none", "--settings", settings,
              "--device", "cuda:1"])  # fmt: skip
    assert seen["request"].device == "cuda:1"
    assert resolutions == ["some/model"] * 3


def test_biastest_generate_builds_one_request(tmp_path, resolutions, backends):
    spec = {"name": "toy", "social_groups": {"F": ["she", "mary"], "M": ["he", "i"]},
            "attributes": {"X": ["book", "dog"], "Y": ["race", "city"]}, "templates": ["[T] gave a [A] ."]}  # fmt: skip
    (tmp_path / "toy.json").write_text(json.dumps(spec))
    settings = json.dumps({"generate": {"device": "cpu", "batch_size": 2}})
    _stopped(["biastest", "generate", tmp_path / "toy.json", "-o", tmp_path / "g", "--settings", settings,
              "--generate-model", "some/model"])  # fmt: skip
    assert backends[-1].request == ModelRequest(spec=ModelSpec(path="some/model"), device="cpu", batch_size=2)
    _stopped(["biastest", "generate", tmp_path / "toy.json", "-o", tmp_path / "g", "--settings", settings,
              "--external-dir", "ext"])  # fmt: skip
    assert backends[-1].spec == ModelSpec(path="ext/qwen-coder", gguf_file="qwen2.5-coder-0.5b-instruct.gguf",
                                          resource="qwen-coder")  # fmt: skip
    assert len(resolutions) == 2


def test_generate_run_builds_one_request_per_model(tmp_path, resolutions, monkeypatch):
    seen = {}
    init = LocalBackend.__init__

    def record(self, request):
        seen["chat"] = request
        init(self, request)

    monkeypatch.setattr(LocalBackend, "__init__", record)

    def make_scorer(request, cache, external_dir=None):
        seen["naturalness"] = request
        raise _Stop

    monkeypatch.setattr("unstereo.unstereoeval.generate.naturalness.make_scorer", make_scorer)
    (tmp_path / "seeds.csv").write_text("word,delta\napple,0.1\n")
    settings = {"model": "some/model", "device": "cpu", "batch_size": 3,
                "naturalness": {"model": "other/model", "min_token_logprob": -5.0}}  # fmt: skip
    _stopped(["generate", "run", "--seed-words", tmp_path / "seeds.csv", "--benchmark", "USE-5", "-o",
              tmp_path / "out", "--settings", json.dumps(settings)])  # fmt: skip
    assert (seen["chat"].spec, seen["chat"].device, seen["chat"].batch_size) == (
        ModelSpec(path="some/model"),
        "cpu",
        3,
    )
    assert seen["naturalness"] == ModelRequest(spec=ModelSpec(path="other/model"))
    assert resolutions == ["some/model", "other/model"]
