"""The client every LLM call goes through: cache first, then the backend under a concurrency limit.

Each finished call is written to the cache immediately (not at the end of a batch of work), so killing a run loses
at most the calls in flight. Identical requests in one :meth:`LLMClient.chat_many` are sent once.
"""

from __future__ import annotations

from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from ..io import write_json
from ..log import get_logger, progress
from .cache import ChatCache
from .types import ChatRequest, ChatResult, Usage

log = get_logger("llm")


class LLMClient:
    """Chat completions with caching, a concurrency limit and a usage log.

    ``backend`` is an object with ``name``, ``model``, ``batch_size`` and ``complete(requests) -> results``.
    """

    def __init__(
        self, backend: Any, cache: ChatCache | None = None, concurrency: int = 4, usage: Usage | None = None
    ):
        self.backend = backend
        self.cache = cache if cache is not None else ChatCache(None)
        self.concurrency = max(1, int(concurrency))
        self.usage = usage if usage is not None else Usage()

    @property
    def model_id(self) -> str:
        return f"{self.backend.name}:{self.backend.model}"

    def _key(self, req: ChatRequest) -> str:
        return req.cache_key(self.backend.name, self.backend.model)

    def _call(self, reqs: list[ChatRequest]) -> list[ChatResult]:
        tag = reqs[0].tag
        try:
            results = self.backend.complete(reqs, on_retry=lambda: self.usage.add(tag, retries=1))
        except Exception:
            self.usage.add(tag, errors=len(reqs))
            raise
        for req, res in zip(reqs, results, strict=True):
            self.cache.put(self._key(req), self.backend.name, self.backend.model, req, res)
            self.usage.add(
                req.tag, calls=1, prompt_tokens=res.prompt_tokens, completion_tokens=res.completion_tokens
            )
        return results

    def chat(self, req: ChatRequest) -> ChatResult:
        """One request (cached)."""
        return self.chat_many([req], show_progress=False)[0]

    def chat_many(
        self, reqs: Sequence[ChatRequest], desc: str = "llm", show_progress: bool = True
    ) -> list[ChatResult]:
        """Answer every request, in order. Cache hits cost nothing; misses run in parallel (HTTP) or in batches
        (local backend). An exception from a call propagates after the calls already running have finished and
        been cached."""
        keys = [self._key(r) for r in reqs]
        answers: dict[str, ChatResult] = {}
        todo: dict[str, ChatRequest] = {}
        for key, req in zip(keys, reqs, strict=True):
            if key in answers or key in todo:
                continue
            hit = self.cache.get(key)
            if hit is not None:
                answers[key] = hit
                self.usage.add(req.tag, cache_hits=1)
            else:
                todo[key] = req
        if todo:
            log.info("%s: %d request(s), %d cached, %d to call", desc, len(reqs), len(answers), len(todo))
            items = list(todo.items())
            batch = max(1, int(getattr(self.backend, "batch_size", 1)))
            if batch > 1:
                # Local models: batches run one after the other (the model uses all cores already).
                chunks = [items[i : i + batch] for i in range(0, len(items), batch)]
                bar = (
                    progress(chunks, desc=desc, total=len(chunks), unit="batch") if show_progress else chunks
                )
                for chunk in bar:
                    for (key, _), res in zip(chunk, self._call([r for _, r in chunk]), strict=True):
                        answers[key] = res
            else:
                with ThreadPoolExecutor(max_workers=self.concurrency) as pool:
                    futures = {key: pool.submit(self._call, [req]) for key, req in items}
                    it = futures.items()
                    bar = progress(it, desc=desc, total=len(futures), unit="call") if show_progress else it
                    try:
                        for key, fut in bar:
                            answers[key] = fut.result()[0]
                    except BaseException:
                        for fut in futures.values():
                            fut.cancel()  # not yet started: never sent; running ones finish and are cached
                        raise
        return [answers[k] for k in keys]

    def write_usage(self, path: str | Path, extra: dict[str, Any] | None = None) -> Path:
        """Write the usage log (calls, cache hits, retries, tokens, estimated cost) as JSON."""
        data = {"backend": self.backend.name, "model": self.backend.model, **self.usage.as_dict()}
        if self.cache.path is not None:
            data["cache"] = str(self.cache.path)
        if extra:
            data.update(extra)
        return write_json(path, data)

    def close(self) -> None:
        close = getattr(self.backend, "close", None)
        if close:
            close()
        self.cache.close()


def make_client(
    backend: str,
    model: str,
    *,
    base_url: str | None = None,
    api_key_env: str | None = "OPENAI_API_KEY",
    cache: str | Path | None = None,
    concurrency: int = 4,
    timeout: float = 60.0,
    max_retries: int = 6,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    send_seed: bool = True,
    device: str = "auto",
    dtype: str = "auto",
    batch_size: int = 8,
    price_prompt_per_1m: float | None = None,
    price_completion_per_1m: float | None = None,
) -> LLMClient:
    """Build a client for ``backend`` = ``openai`` (HTTP) or ``local`` (transformers)."""
    from ..errors import ConfigError

    if backend == "openai":
        from .http import OpenAICompatBackend

        be: Any = OpenAICompatBackend(
            base_url or "",
            model,
            api_key_env=api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            send_seed=send_seed,
        )
    elif backend == "local":
        from .local import LocalChatBackend

        be = LocalChatBackend(model, device=device, dtype=dtype, batch_size=batch_size)
    else:
        raise ConfigError(
            f"unknown LLM backend {backend!r} (use 'openai' or 'local')", key="generate.backend"
        )
    return LLMClient(
        be,
        cache=ChatCache(cache),
        concurrency=concurrency,
        usage=Usage(price_prompt_per_1m, price_completion_per_1m),
    )
