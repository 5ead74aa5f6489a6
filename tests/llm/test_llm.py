"""unstereo.llm against a real OpenAI-compatible HTTP server on 127.0.0.1 (tests/llm_test_server.py)."""

from __future__ import annotations

import json
import logging

import pytest
from click.testing import CliRunner
from llm_test_server import Reply, ScriptedServer

from unstereo.llm import ChatCache, ChatRequest, LLMClient, Usage, make_client
from unstereo.llm.http import LLMCallError

KEY = "sk-test-SECRET-0123456789"


def http_client(server, tmp_path=None, **kw):
    opts = dict(
        api_key_env="UNSTEREO_TEST_KEY", timeout=2.0, max_retries=3, backoff_base=0.01, backoff_max=0.05
    )
    opts.update(kw)
    cache = kw.pop("cache", None) if "cache" in kw else (tmp_path / "cache.sqlite" if tmp_path else None)
    opts.pop("cache", None)
    spec = {"endpoint": server.base_url, "name": "test-model", "api_key_env": opts.pop("api_key_env")}
    return make_client(spec, cache=cache, **opts)


@pytest.fixture(autouse=True)
def _key(monkeypatch):
    monkeypatch.setenv("UNSTEREO_TEST_KEY", KEY)


def test_cache_key_covers_seed_params_and_model_not_tag():
    a = ChatRequest.user("hi", temperature=0.7, seed=0, tag="generation")
    assert a.cache_key("openai", "m") == ChatRequest.user(
        "hi", temperature=0.7, seed=0, tag="other"
    ).cache_key("openai", "m")
    assert a.cache_key("openai", "m") != ChatRequest.user("hi", temperature=0.7, seed=1).cache_key(
        "openai", "m"
    )
    assert a.cache_key("openai", "m") != ChatRequest.user("hi", temperature=0.0, seed=0).cache_key(
        "openai", "m"
    )
    assert a.cache_key("openai", "m") != a.cache_key("openai", "m2")
    assert a.cache_key("openai", "m") != a.cache_key("local", "m")


def test_usage_cost_by_hand():
    # 1000 prompt tokens at 1.0/1M + 500 completion tokens at 2.0/1M = 0.001 + 0.001 = 0.002
    u = Usage(1.0, 2.0)
    u.add("a", calls=1, prompt_tokens=600, completion_tokens=200)
    u.add("b", calls=1, prompt_tokens=400, completion_tokens=300, cache_hits=2)
    d = u.as_dict()
    assert d["total"]["calls"] == 2 and d["total"]["cache_hits"] == 2
    assert d["total"]["estimated_cost"] == pytest.approx(0.002)
    assert Usage().as_dict()["total"]["estimated_cost"] is None


def test_request_body_auth_and_result():
    with ScriptedServer(lambda body, i: Reply("hello there")) as srv:
        client = http_client(srv)
        res = client.chat(ChatRequest.user("hi", temperature=0.7, max_tokens=12, seed=3))
    assert (
        res.text == "hello there"
        and res.prompt_tokens == 10
        and res.completion_tokens == 5
        and not res.cached
    )
    (entry,) = srv.log
    assert entry["path"] == "/v1/chat/completions"
    assert entry["auth"] == f"Bearer {KEY}"
    body = entry["body"]
    assert body["model"] == "test-model" and body["messages"] == [{"role": "user", "content": "hi"}]
    assert body["temperature"] == 0.7 and body["max_tokens"] == 12 and body["seed"] == 3


@pytest.mark.parametrize("status", [429, 500, 503])
def test_retries_on_429_and_5xx(status):
    script = {
        0: Reply("busy", status=status),
        1: Reply("busy", status=status, headers={"Retry-After": "0.01"}),
    }
    with ScriptedServer(lambda body, i: script.get(i, Reply("ok"))) as srv:
        client = http_client(srv)
        assert client.chat(ChatRequest.user("x")).text == "ok"
    assert [e["status"] for e in srv.log] == [status, status, 200]
    assert client.usage.total()["retries"] == 2 and client.usage.total()["calls"] == 1


def test_slow_response_past_timeout_is_retried():
    with ScriptedServer(lambda body, i: Reply("late", delay=1.5) if i == 0 else Reply("fast")) as srv:
        client = http_client(srv, timeout=0.3)
        assert client.chat(ChatRequest.user("x")).text == "fast"
    assert len(srv.log) == 2 and client.usage.total()["retries"] == 1


def test_non_retryable_error_and_exhausted_retries():
    with ScriptedServer(lambda body, i: Reply("bad request", status=400)) as srv:
        with pytest.raises(LLMCallError, match="HTTP 400"):
            http_client(srv).chat(ChatRequest.user("x"))
    assert len(srv.log) == 1  # 400 is not retried
    with ScriptedServer(lambda body, i: Reply("down", status=502)) as srv:
        with pytest.raises(LLMCallError, match="after 3 retries"):
            http_client(srv).chat(ChatRequest.user("x"))
    assert len(srv.log) == 4  # 1 + 3 retries


def test_malformed_json_response_is_an_error():
    with ScriptedServer(lambda body, i: Reply(raw='{"choices": []}')) as srv:
        with pytest.raises(LLMCallError, match="malformed"):
            http_client(srv).chat(ChatRequest.user("x"))


def test_cache_persists_and_prevents_repeated_calls(tmp_path):
    with ScriptedServer(lambda body, i: Reply(f"answer {i}")) as srv:
        c1 = http_client(srv, tmp_path)
        r1 = c1.chat(ChatRequest.user("q", seed=0))
        c1.close()
        c2 = http_client(srv, tmp_path)  # a new run on the same cache file
        r2 = c2.chat(ChatRequest.user("q", seed=0))
        r3 = c2.chat(ChatRequest.user("q", seed=1))  # another sample index: a new call
    assert r1.text == r2.text == "answer 0" and r2.cached and not r3.cached and r3.text == "answer 1"
    assert len(srv.log) == 2
    assert c2.usage.total()["cache_hits"] == 1 and c2.usage.total()["calls"] == 1


def test_chat_many_dedupes_keeps_order_and_limits_concurrency():
    with ScriptedServer(lambda body, i: Reply(body["messages"][0]["content"].upper(), delay=0.05)) as srv:
        client = http_client(srv, concurrency=3)
        reqs = [ChatRequest.user(f"m{i % 10}") for i in range(20)]
        out = client.chat_many(reqs, show_progress=False)
    assert [r.text for r in out] == [f"M{i % 10}" for i in range(20)]
    assert len(srv.log) == 10  # duplicates sent once
    assert 2 <= srv.max_in_flight <= 3


def test_api_key_never_in_logs_cache_usage_or_errors(tmp_path, caplog):
    def responder(body, i):
        # A hostile server that echoes the credentials back in error bodies.
        if i == 0:
            return Reply(f"overloaded, your key is {KEY}", status=500)
        if body["messages"][0]["content"] == "fail":
            return Reply(f"unauthorized key {KEY}", status=401)
        return Reply("fine")

    caplog.set_level(logging.DEBUG)
    with ScriptedServer(responder) as srv:
        client = http_client(srv, tmp_path)
        assert client.chat(ChatRequest.user("q")).text == "fine"
        with pytest.raises(LLMCallError) as exc:
            client.chat(ChatRequest.user("fail"))
        client.write_usage(tmp_path / "usage.json")
        client.close()
    assert all(e["auth"] == f"Bearer {KEY}" for e in srv.log)  # the key was used ...
    assert KEY not in str(exc.value) and "***" in str(exc.value)  # ... but never shown
    assert KEY not in caplog.text and KEY not in repr(client.backend)
    for path in tmp_path.iterdir():
        assert KEY.encode() not in path.read_bytes(), path


def test_cli_chat_uses_cache(tmp_path):
    from unstereo.cli import cli

    with ScriptedServer(lambda body, i: Reply("pong")) as srv:
        args = ["llm", "chat", f"endpoint:{srv.base_url}#m", "ping",
                "--api-key-env", "UNSTEREO_TEST_KEY", "--cache", str(tmp_path / "c.sqlite"), "--json"]  # fmt: skip
        r1 = CliRunner().invoke(cli, args)
        r2 = CliRunner().invoke(cli, args + ["--usage", str(tmp_path / "u.json")])
    assert r1.exit_code == 0, r1.output
    assert json.loads(r1.output.strip().splitlines()[-1])["text"] == "pong"
    assert json.loads(r2.output.strip().splitlines()[-1])["cached"] is True
    assert len(srv.log) == 1
    assert json.loads((tmp_path / "u.json").read_text())["total"]["cache_hits"] == 1


def test_cache_is_shared_by_threads(tmp_path):
    cache = ChatCache(tmp_path / "c.sqlite")

    class Echo:
        name, model, batch_size = "echo", "e", 1

        def complete(self, reqs, on_retry=None):
            from unstereo.llm import ChatResult

            return [ChatResult(r.messages[0][1][::-1]) for r in reqs]

    client = LLMClient(Echo(), cache=cache, concurrency=8)
    out = client.chat_many([ChatRequest.user(f"abc{i}") for i in range(50)], show_progress=False)
    assert [r.text for r in out] == [f"abc{i}"[::-1] for i in range(50)]
    assert len(cache) == 50


@pytest.mark.models
@pytest.mark.slow
def test_local_backend_seeded_sampling_is_batch_independent(resource):
    from unstereo.llm.local import LocalChatBackend
    from unstereo.models.request import model_request

    d = resource("smollm2")
    be = LocalChatBackend(
        model_request({"model": str(d / "SmolLM2-135M-Instruct.Q4_1.gguf"), "batch_size": 4})
    )
    a = ChatRequest.user("Name a fruit.", temperature=0.9, max_tokens=6, seed=11)
    b = ChatRequest.user(
        "Write a long sentence about the sea and the sky.", temperature=0.9, max_tokens=6, seed=5
    )
    g = ChatRequest.user("Name a fruit.", temperature=0.0, max_tokens=6, seed=0)
    alone = be.complete([a])[0]
    batched = be.complete([b, a, g])
    assert batched[1].text == alone.text  # same seed, same answer, whatever shares the batch
    assert batched[2].text == be.complete([g])[0].text  # greedy
    assert all(r.completion_tokens <= 6 for r in batched)
    client = LLMClient(be)
    assert client.chat(a).text == alone.text and client.chat(a).cached
