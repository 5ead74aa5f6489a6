"""Text continuation: the vectorised sampler, a tiny random GPT-2 base model through the local backend and through a
loopback OpenAI-compatible ``/v1/completions`` server, the cache, stop strings, resuming, and ``unstereo llm continue``.
"""

from __future__ import annotations

import json
import math

import pandas as pd
import pytest
import torch
from _scoring_models import word_tokenizer
from click.testing import CliRunner
from llm_test_server import Reply, ScriptedServer

from unstereo.engine.sampler import sample_rows
from unstereo.llm import ChatCache, ChatRequest, ContinuationRequest, LLMClient, make_client
from unstereo.llm.local import LocalBackend, cut_at_stop
from unstereo.llm.sample import SampleSettings, continue_prompts, sample_continuations
from unstereo.models.request import ModelRequest
from unstereo.models.spec import ModelSpec

PROMPTS = pd.DataFrame(
    {
        "prompt_id": [f"p{i}" for i in range(10)],
        "prompt": [
            "she went to the store",
            "he",
            "the dog barked because",
            "mary said hi to the champion of the city , and",
            "i gave her a book yesterday",
            "nobody expected",
            "his long race",
            "a",
            "he asked",
            "she",
        ],
    }
)


@pytest.fixture(scope="module")
def tiny_dir(tmp_path_factory):
    """A randomly initialised 2-layer GPT-2 base model (fp32, no chat template) saved as a Hugging Face folder."""
    from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel

    tok = word_tokenizer()
    torch.manual_seed(0)
    config = GPT2Config(
        vocab_size=len(tok), n_positions=128, n_embd=32, n_layer=2, n_head=2, initializer_range=0.2,
        bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    model = GPT2LMHeadModel(config).eval()
    model.generation_config = GenerationConfig.from_model_config(config)
    path = tmp_path_factory.mktemp("tiny-gpt2")
    model.save_pretrained(path)
    tok.save_pretrained(path)
    return path


@pytest.fixture(scope="module")
def loaded(tiny_dir):
    from unstereo.models.load import load_causal_lm

    return load_causal_lm(str(tiny_dir), dtype="float32", device="cpu")


def local_client(loaded, batch_size, cache=None):
    return LLMClient(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=batch_size), ChatCache(cache))


# ---- the sampler on a hand-made distribution -------------------------------------------------------------------


def _logits(probs):
    return torch.tensor([[math.log(p) for p in probs]])


P = [0.15, 0.5, 0.05, 0.3]  # ids 0..3; sorted: id1 0.5, id3 0.3, id0 0.15, id2 0.05


@pytest.mark.parametrize(
    "top_p, u, token",
    [
        # nucleus 0.75 = {id1, id3} (id0 starts at mass 0.8): renormalised 0.625 / 0.375, cdf 0.5 / 0.8 of 0.8
        (0.75, 0.0, 1),
        (0.75, 0.62, 1),  # target 0.496 < 0.5
        (0.75, 0.63, 3),  # target 0.504 >= 0.5
        (0.75, 0.9999, 3),
        (0.45, 0.99, 1),  # only the top token
        (0.81, 0.9, 0),  # 0.8 < 0.81: id0 joins; mass 0.95, target 0.855 > 0.8
        # top_p = 1: inverse CDF over the ids in order, cdf 0.15 0.65 0.70 1.0
        (1.0, 0.1, 0),
        (1.0, 0.5, 1),
        (1.0, 0.68, 2),
        (1.0, 0.9, 3),
    ],
)
def test_inverse_cdf_picks_the_hand_computed_token(top_p, u, token):
    tok = sample_rows(_logits(P), torch.tensor([1.0]), torch.tensor([top_p]), torch.tensor([u]))
    assert tok.tolist() == [token]


def test_tokens_outside_the_nucleus_are_never_drawn_and_rows_are_independent():
    us = torch.linspace(0, 0.999999, 2001)
    n = len(us)
    logits = _logits(P).repeat(n, 1)
    toks = sample_rows(logits, torch.ones(n), torch.full((n,), 0.75), us)
    assert set(toks.tolist()) == {1, 3}
    assert abs((toks == 1).float().mean().item() - 0.625) < 0.01  # the renormalised nucleus probabilities
    # a mixed batch (greedy, nucleus, full) gives each row what it gets alone
    temps, tops, u = torch.tensor([0.0, 1.0, 1.0, 2.0]), torch.tensor([1.0, 0.75, 1.0, 0.9]), torch.tensor([0.3, 0.7, 0.68, 0.4])  # fmt: skip
    batch = sample_rows(_logits(P).repeat(4, 1), temps, tops, u).tolist()
    alone = [
        sample_rows(_logits(P), temps[i : i + 1], tops[i : i + 1], u[i : i + 1]).item() for i in range(4)
    ]
    assert batch == alone and batch[:3] == [1, 3, 2]


def test_temperature_flattens_the_distribution():
    # T = 2: p ~ sqrt(P) = 0.3873 0.7071 0.2236 0.5477 (sum 1.8657) -> cdf 0.2076 0.5866 0.7064 1; T = 1: 0.15 0.65 0.7 1
    assert sample_rows(_logits(P), torch.tensor([2.0]), torch.tensor([1.0]), torch.tensor([0.6])).item() == 2
    assert sample_rows(_logits(P), torch.tensor([1.0]), torch.tensor([1.0]), torch.tensor([0.6])).item() == 1
    assert sample_rows(_logits(P), torch.tensor([2.0]), torch.tensor([1.0]), torch.tensor([0.2])).item() == 0
    assert sample_rows(_logits(P), torch.tensor([1.0]), torch.tensor([1.0]), torch.tensor([0.2])).item() == 1


def test_cut_at_stop():
    assert cut_at_stop("a b. c\nd", (".", "\n")) == ("a b", True)
    assert cut_at_stop("a b c", ("x",)) == ("a b c", False)
    assert cut_at_stop("abc", ()) == ("abc", False)


# ---- requests and the cache --------------------------------------------------------------------------------------


def test_continuation_key_never_collides_with_chat_and_covers_stop_and_seed():
    c = ContinuationRequest("hi", temperature=0.0, max_tokens=256, top_p=1.0, seed=0)
    chat = ChatRequest.user("hi", temperature=0.0, max_tokens=256, top_p=1.0, seed=0)
    assert c.cache_key("openai", "m") != chat.cache_key("openai", "m")
    assert c.cache_key("openai", "m") != ContinuationRequest("hi", temperature=0.0, max_tokens=256, stop=["."]).cache_key("openai", "m")  # fmt: skip
    assert c.cache_key("openai", "m") != ContinuationRequest("hi", temperature=0.0, max_tokens=256, seed=1).cache_key("openai", "m")  # fmt: skip
    assert ContinuationRequest("hi", stop=["."]) == ContinuationRequest("hi", stop=(".",))


# ---- the tiny GPT-2 through the local backend ----------------------------------------------------------------------


def _texts(client, settings, prompts=PROMPTS):
    return continue_prompts(client, prompts, settings)


def test_local_samples_do_not_depend_on_the_batch(loaded):
    s = SampleSettings(n=3, temperature=1.0, top_p=0.9, max_new_tokens=12, seed=7)
    one = _texts(local_client(loaded, 1), s)
    eight = _texts(local_client(loaded, 8), s)
    pd.testing.assert_frame_equal(one, eight)
    assert len(one) == 30 and one["seed"].tolist()[:3] == [7, 8, 9]
    assert one.groupby("prompt_id")["continuation"].nunique().max() > 1  # the seeds do differ
    assert (one["tokens"] <= 12).all() and set(one["finish_reason"]) <= {"stop", "length"}
    # a prompt's samples do not depend on the other prompts either
    alone = _texts(local_client(loaded, 8), s, PROMPTS.iloc[[3]])
    pd.testing.assert_frame_equal(alone.reset_index(drop=True), one[one["prompt_id"] == "p3"].reset_index(drop=True))  # fmt: skip


def test_greedy_continuation_matches_transformers_greedy(loaded):
    model, tok = loaded
    s = SampleSettings(n=1, temperature=0.0, max_new_tokens=8)
    got = _texts(local_client(loaded, 4), s, PROMPTS.iloc[:4])
    for prompt, text in zip(PROMPTS["prompt"][:4], got["continuation"], strict=True):
        ids = tok(prompt, return_tensors="pt", return_token_type_ids=False)  # GPT-2 would embed token types
        out = model.generate(**ids, do_sample=False, max_new_tokens=8, pad_token_id=tok.pad_token_id)
        assert text == tok.decode(out[0, ids["input_ids"].shape[1] :], skip_special_tokens=True)


def test_stop_strings_cut_the_text_and_stop_early(loaded):
    client = local_client(loaded, 4)
    free = _texts(client, SampleSettings(n=2, max_new_tokens=16, seed=3))
    row = free[free["continuation"].str.split().str.len() >= 4].iloc[0]
    words = row["continuation"].split()
    stop = words[2]
    cut = row["continuation"][: row["continuation"].find(stop)]
    got = _texts(client, SampleSettings(n=2, max_new_tokens=16, seed=3, stop=(stop, "zzz")))
    g = got[(got["prompt_id"] == row["prompt_id"]) & (got["sample"] == row["sample"])].iloc[0]
    assert g["continuation"] == cut and g["finish_reason"] == "stop"
    assert g["tokens"] < row["tokens"] or row["finish_reason"] == "stop"
    assert not got["continuation"].str.contains(stop, regex=False).any()


def test_base_model_has_no_chat_but_continues(loaded):
    from unstereo.errors import UnstereoError

    client = local_client(loaded, 2)
    with pytest.raises(UnstereoError, match="no chat template"):
        client.chat(ChatRequest.user("hi"))
    assert client.continue_one(ContinuationRequest("she went", max_tokens=3, seed=1)).completion_tokens >= 1


def test_local_backend_loads_a_spec_and_caches(tiny_dir, tmp_path):
    request = ModelRequest(spec=ModelSpec(path=str(tiny_dir)), device="cpu", batch_size=4)
    client = make_client(request, cache=tmp_path / "c.sqlite")
    assert client.backend.request is request and client.backend.batch_size == 4
    reqs = [ContinuationRequest(p, max_tokens=5, seed=s) for p in PROMPTS["prompt"][:3] for s in (0, 1)]
    first = client.continue_many(reqs, show_progress=False)
    again = client.continue_many(reqs, show_progress=False)
    assert [r.text for r in first] == [r.text for r in again] and all(r.cached for r in again)
    assert client.usage.total()["calls"] == 6 and client.usage.total()["cache_hits"] == 6
    client.close()


def test_a_passed_engine_probe_is_remembered_per_machine(tiny_dir, tmp_path, monkeypatch):
    from unstereo.engine.engine import SamplingEngine

    monkeypatch.setenv("UNSTEREO_CACHE_DIR", str(tmp_path / "machine"))
    probes = []
    check = SamplingEngine.check
    monkeypatch.setattr(SamplingEngine, "check", lambda self: probes.append(1) or check(self))
    req = ContinuationRequest("she went", max_tokens=3, seed=1)

    def run(**options):
        backend = LocalBackend(ModelRequest(spec=ModelSpec(path=str(tiny_dir)), device="cpu", **options))
        return backend, backend.continue_batch([req])[0].text

    first, text = run()
    assert first._engine  # the engine served it
    stamps = list((tmp_path / "machine" / "probes" / "engine").iterdir())
    assert probes == [1] and [p.name for p in stamps] == [first._engine.probe_key() + ".json"]
    assert run(batch_size=2)[1] == text and probes == [1]  # another process, the same model: no probe
    # new code or versions: probed again
    monkeypatch.setattr(SamplingEngine, "probe_key", lambda self: "other")
    assert run()[1] == text and probes == [1, 1]
    monkeypatch.setattr(SamplingEngine, "check", lambda self: probes.append(1) or "broken")
    monkeypatch.setattr(SamplingEngine, "probe_key", lambda self: "broken")
    broken, _ = run()
    assert broken._engine is False
    assert not (tmp_path / "machine" / "probes" / "engine" / "broken.json").exists()
    # a model handed over (tests, benchmarks) is probed every time
    LocalBackend.from_loaded(first._lm, first._tok, "tiny").continue_batch([req])
    assert probes == [1, 1, 1, 1]


# ---- the same model behind a loopback /v1/completions server --------------------------------------------------------


def serving(loaded, fail_first: int = 0):
    """A responder that answers /v1/completions with the tiny model (after ``fail_first`` 500s)."""
    backend = LocalBackend.from_loaded(*loaded, label="tiny", batch_size=1)

    def respond(body, index):
        if index < fail_first:
            return Reply("busy", status=500)
        req = ContinuationRequest(
            body["prompt"], temperature=body["temperature"], max_tokens=body["max_tokens"],
            top_p=body["top_p"], stop=body.get("stop", ()), seed=body["seed"],
        )  # fmt: skip
        res = backend.continue_batch([req])[0]
        return Reply(res.text, finish_reason=res.finish_reason)

    return respond


def http(server, cache=None, **kw):
    spec = ModelSpec(endpoint=server.base_url, name="tiny")
    return make_client(
        spec, cache=cache, max_retries=2, backoff_base=0.01, backoff_max=0.02, timeout=30, **kw
    )


def test_http_continuations_equal_local_ones_and_are_cached(loaded, tmp_path):
    s = SampleSettings(n=2, temperature=0.8, top_p=0.95, max_new_tokens=10, stop=("\n",), seed=5)
    local = _texts(local_client(loaded, 8), s)
    with ScriptedServer(serving(loaded, fail_first=1)) as srv:
        client = http(srv, cache=tmp_path / "c.sqlite", concurrency=4)
        got = _texts(client, s)
        calls = len(srv.log)
        again = _texts(client, s)
        usage = client.usage.total()
        client.close()
    pd.testing.assert_frame_equal(got.drop(columns="tokens"), local.drop(columns="tokens"))
    assert (
        got.equals(again) and calls == 21 and len(srv.log) == 21
    )  # 20 samples + one 500 retried; rerun cached
    assert usage["retries"] == 1 and usage["calls"] == 20 and usage["cache_hits"] == 20
    body = next(e["body"] for e in srv.log if e["status"] == 200)
    assert srv.log[0]["path"] == "/v1/completions"
    assert body["n"] == 1 and body["stop"] == ["\n"] and body["model"] == "tiny" and body["top_p"] == 0.95
    assert sorted({e["body"]["seed"] for e in srv.log}) == [5, 6]


def test_http_continuation_gives_up_after_retries(tmp_path):
    from unstereo.llm.http import LLMCallError

    with ScriptedServer(lambda body, i: Reply("down", status=503)) as srv:
        client = http(srv)
        with pytest.raises(LLMCallError, match="/completions failed after 2 retries"):
            client.continue_one(ContinuationRequest("x"))
    assert len(srv.log) == 3 and client.usage.total()["errors"] == 1


# ---- resuming ----------------------------------------------------------------------------------------------------


class Counting:
    """A backend wrapper that counts the continuations it computes."""

    def __init__(self, inner):
        self.inner, self.calls = inner, 0
        self.name, self.model, self.batch_size = inner.name, inner.model, inner.batch_size
        self.sampler = getattr(inner, "sampler", None)

    def continue_batch(self, reqs, on_retry=None):
        self.calls += len(reqs)
        return self.inner.continue_batch(reqs, on_retry)


def test_a_killed_run_redoes_only_unfinished_chunks(loaded, tmp_path):
    s = SampleSettings(n=2, max_new_tokens=6, seed=1)
    out = tmp_path / "samples.parquet"

    def kill_after_two(k, n_chunks):
        if k == 1:
            raise KeyboardInterrupt("killed")

    first = Counting(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=4))
    with pytest.raises(KeyboardInterrupt):
        sample_continuations(LLMClient(first), PROMPTS, out, s, chunk_size=3, after_chunk=kill_after_two)
    assert first.calls == 12 and not out.exists()  # chunks 0 and 1: 6 prompts x 2 samples
    # a fresh client with an empty cache: only the chunk files can spare the work
    second = Counting(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=4))
    df = sample_continuations(LLMClient(second), PROMPTS, out, s, chunk_size=3)
    assert second.calls == 8  # 4 prompts left x 2 samples
    whole = continue_prompts(local_client(loaded, 4), PROMPTS, s)
    pd.testing.assert_frame_equal(df, whole)
    assert pd.read_parquet(out).equals(df) and not (tmp_path / "samples.chunks").exists()


def test_samples_of_another_uniform_stream_are_never_reused(loaded, tmp_path, monkeypatch):
    """The local backend's LLM-cache keys and sampling fingerprints name its stream for T > 0: a change of stream
    samples again (the old entries stay in the file, unread); greedy answers and endpoints' keys are unchanged."""
    from unstereo.engine.sampler import STREAM

    cache = tmp_path / "c.sqlite"
    reqs = [
        ContinuationRequest("he", max_tokens=4, seed=1),
        ContinuationRequest("he", temperature=0.0, max_tokens=4),
    ]
    first = Counting(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=4))
    assert first.sampler == STREAM
    LLMClient(first, ChatCache(cache)).continue_many(reqs, show_progress=False)
    again = Counting(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=4))
    LLMClient(again, ChatCache(cache)).continue_many(reqs, show_progress=False)
    assert first.calls == 2 and again.calls == 0  # same stream: both cached
    other = Counting(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=4))
    other.sampler = "another stream"
    LLMClient(other, ChatCache(cache)).continue_many(reqs, show_progress=False)
    assert other.calls == 1 and len(ChatCache(cache)) == 3  # the sampled request again, the greedy one cached
    # an endpoint's key (no stream) is what it was: the stream enters only where one is named and T > 0
    assert reqs[0].cache_key("openai", "m") == reqs[0].cache_key("openai", "m", None)
    assert reqs[1].cache_key("local", "m", STREAM) == reqs[1].cache_key("local", "m")
    assert reqs[0].cache_key("local", "m", STREAM) != reqs[0].cache_key("local", "m")
    # the chunked sampling output: a killed run's chunk of another stream is sampled again, not resumed
    s = SampleSettings(n=1, max_new_tokens=4, seed=1)
    out = tmp_path / "samples.parquet"

    def kill(k, n_chunks):
        raise KeyboardInterrupt("killed")

    killed = Counting(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=4))
    with pytest.raises(KeyboardInterrupt):
        sample_continuations(LLMClient(killed), PROMPTS.iloc[:3], out, s, chunk_size=2, after_chunk=kill)
    assert killed.calls == 2  # chunk 0 (2 prompts) written
    other = Counting(LocalBackend.from_loaded(*loaded, label="tiny", batch_size=4))
    other.sampler = "another stream"
    sample_continuations(LLMClient(other), PROMPTS.iloc[:3], out, s, chunk_size=2)
    assert other.calls == 3  # all 3 prompts again (with the same stream: 1, test_a_killed_run_redoes_...)


# ---- the command line ----------------------------------------------------------------------------------------------


def test_cli_continue(tiny_dir, tmp_path):
    from unstereo.cli import cli

    PROMPTS.iloc[:4].to_csv(tmp_path / "prompts.csv", index=False)
    out = tmp_path / "out.csv"
    args = ["llm", "continue", str(tiny_dir), str(tmp_path / "prompts.csv"), "-o", str(out), "--n", "3",
            "--top-p", "0.9", "--max-new-tokens", "5", "--stop", ".", "--seed", "4", "--device", "cpu",
            "--cache", str(tmp_path / "c.sqlite"), "--usage", str(tmp_path / "u.json")]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    df = pd.read_csv(out, keep_default_na=False)
    assert list(df.columns) == ["prompt_id", "sample", "seed", "continuation", "finish_reason", "tokens"]
    assert len(df) == 12 and df["seed"].tolist()[:3] == [4, 5, 6]
    assert not df["continuation"].str.contains(".", regex=False).any()
    assert json.loads((tmp_path / "u.json").read_text())["total"]["calls"] == 12
    r2 = CliRunner().invoke(cli, args)
    assert r2.exit_code == 0 and pd.read_csv(out, keep_default_na=False).equals(df)
    assert json.loads((tmp_path / "u.json").read_text())["total"]["cache_hits"] == 12
    bad = CliRunner().invoke(cli, ["llm", "continue", "endpoint:http://h/v1", str(tmp_path / "prompts.csv"), "-o", str(out)])  # fmt: skip
    assert bad.exit_code != 0 and "endpoint:URL#MODEL_NAME" in bad.output
    help_text = CliRunner().invoke(cli, ["llm", "continue", "--help"]).output
    assert "resource:NAME/FILE.gguf" in help_text and "--top-p" in help_text
