"""Backend for any OpenAI-compatible endpoint (OpenAI, vLLM, llama.cpp server, Ollama, ...): chat completions
and legacy text completions.

The API key is read from the environment variable whose *name* is configured (``api_key_env``); it is sent only in
the ``Authorization`` header and is scrubbed from every error message. 429, 5xx, timeouts and connection errors are
retried with exponential backoff and full jitter (``Retry-After`` honoured up to ``backoff_max``).
"""

from __future__ import annotations

import os
import random
import time
from typing import Any

import httpx

from unstereo.errors import ConfigError, UnstereoError
from unstereo.llm.types import ChatRequest, ChatResult, ContinuationRequest
from unstereo.log import get_logger

log = get_logger("llm.http")

RETRY_STATUS = frozenset({408, 409, 425, 429}) | frozenset(range(500, 600))


class LLMCallError(UnstereoError):
    """A call failed for good (non-retryable status, or retries exhausted)."""


class OpenAICompatBackend:
    """POST ``{base_url}/chat/completions`` (chat) or ``{base_url}/completions`` (text continuation); one request
    per call (the client runs calls in parallel threads)."""

    name = "openai"
    batch_size = 1

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 60.0,
        max_retries: int = 6,
        backoff_base: float = 1.0,
        backoff_max: float = 60.0,
        send_seed: bool = True,
        rng_seed: int | None = None,
    ):
        if not base_url:
            raise ConfigError("an OpenAI-compatible backend needs a base_url", key="generate.base_url")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff_base = backoff_base
        self.backoff_max = backoff_max
        self.send_seed = send_seed
        self._rng = random.Random(rng_seed)
        # The key is kept in a private attribute, never in repr(), logs, the cache or outputs.
        self.__key = os.environ.get(api_key_env, "") if api_key_env else ""
        if api_key_env and not self.__key:
            log.warning(
                "environment variable %s is not set; calling %s without an API key", api_key_env, base_url
            )
        headers = {"Content-Type": "application/json"}
        if self.__key:
            headers["Authorization"] = f"Bearer {self.__key}"
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout)

    def __repr__(self) -> str:
        return f"OpenAICompatBackend(base_url={self.base_url!r}, model={self.model!r})"

    def _scrub(self, text: str) -> str:
        return text.replace(self.__key, "***") if self.__key else text

    def _body(self, req: ChatRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "messages": req.message_dicts(),
            "temperature": req.temperature,
            "max_tokens": req.max_tokens,
            "top_p": req.top_p,
            "n": 1,
        }
        if self.send_seed:
            body["seed"] = req.seed
        return body

    def _continuation_body(self, req: ContinuationRequest) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            "prompt": req.prompt,
            "temperature": req.temperature,
            "max_tokens": req.max_tokens,
            "top_p": req.top_p,
            "n": 1,
        }
        if req.stop:
            body["stop"] = list(req.stop)
        if self.send_seed:
            body["seed"] = req.seed
        return body

    def _sleep_for(self, attempt: int, retry_after: str | None) -> float:
        delay = min(self.backoff_max, self.backoff_base * 2**attempt) * self._rng.random()  # full jitter
        if retry_after:
            try:
                delay = max(delay, min(float(retry_after), self.backoff_max))
            except ValueError:
                pass
        return delay

    def complete(self, requests: list[ChatRequest], on_retry=None) -> list[ChatResult]:
        """Chat completions: POST ``{base_url}/chat/completions``, one request each."""
        return [self._post("/chat/completions", self._body(r), _chat_text, on_retry) for r in requests]

    def continue_batch(self, requests: list[ContinuationRequest], on_retry=None) -> list[ChatResult]:
        """Text continuations: POST ``{base_url}/completions`` (the legacy completions format), one request each."""
        return [
            self._post("/completions", self._continuation_body(r), _completion_text, on_retry)
            for r in requests
        ]

    def _post(self, path: str, body: dict[str, Any], text_of, on_retry=None) -> ChatResult:
        last = ""
        for attempt in range(self.max_retries + 1):
            retry_after = None
            try:
                resp = self._client.post(path, json=body)
            except (httpx.TimeoutException, httpx.TransportError) as exc:
                last = f"{type(exc).__name__}: {self._scrub(str(exc))}"
            else:
                if resp.status_code == 200:
                    return self._parse(resp, path, text_of)
                last = f"HTTP {resp.status_code}: {self._scrub(resp.text[:300])}"
                if resp.status_code not in RETRY_STATUS:
                    raise LLMCallError(f"{self.base_url}{path} failed: {last}")
                retry_after = resp.headers.get("retry-after")
            if attempt == self.max_retries:
                break
            delay = self._sleep_for(attempt, retry_after)
            log.info("retrying (%d/%d) in %.2fs after %s", attempt + 1, self.max_retries, delay, last)
            if on_retry is not None:
                on_retry()
            time.sleep(delay)
        raise LLMCallError(f"{self.base_url}{path} failed after {self.max_retries} retries: {last}")

    def _parse(self, resp: httpx.Response, path: str, text_of) -> ChatResult:
        try:
            data = resp.json()
            choice = data["choices"][0]
            text = text_of(choice) or ""
        except (ValueError, KeyError, IndexError, TypeError) as exc:
            raise LLMCallError(
                f"{self.base_url}{path}: malformed response: {self._scrub(resp.text[:300])}"
            ) from exc
        usage = data.get("usage") or {}
        return ChatResult(
            text=text,
            prompt_tokens=int(usage.get("prompt_tokens") or 0),
            completion_tokens=int(usage.get("completion_tokens") or 0),
            finish_reason=choice.get("finish_reason"),
        )

    def close(self) -> None:
        self._client.close()


def _chat_text(choice: dict[str, Any]) -> str:
    return choice["message"]["content"]


def _completion_text(choice: dict[str, Any]) -> str:
    return choice["text"]
