"""The client every LLM call goes through: cache first, then the backend under a concurrency limit.

Two kinds of call: chat completions (:meth:`LLMClient.chat_many`) and plain text continuations
(:meth:`LLMClient.continue_many`, base models included). Each finished call is written to the cache immediately (not
at the end of a batch of work), so killing a run loses at most the calls in flight. Identical requests in one call
of either method are sent once.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import TYPE_CHECKING, Any

from unstereo.io import write_json
from unstereo.llm.cache import ChatCache
from unstereo.llm.types import ChatRequest, ChatResult, ContinuationRequest, LLMRequest, Usage
from unstereo.log import get_logger, progress
from unstereo.models.spec import ModelSpec

if TYPE_CHECKING:
    from unstereo.models.request import ModelRequest

log = get_logger("llm")


class LLMClient:
    """Chat completions and text continuations with caching, a concurrency limit and a usage log.

    ``backend`` is an object with ``name``, ``model``, ``batch_size`` (optionally ``call_size``: requests per
    call), ``complete(chat_requests, on_retry)`` and ``continue_batch(continuation_requests, on_retry)``, each
    returning one :class:`ChatResult` per request.
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

    def _key(self, req: LLMRequest) -> str:
        return req.cache_key(self.backend.name, self.backend.model, getattr(self.backend, "sampler", None))

    def _call(self, reqs: list[LLMRequest]) -> list[ChatResult]:
        tag = reqs[0].tag
        call = (
            self.backend.continue_batch if isinstance(reqs[0], ContinuationRequest) else self.backend.complete
        )
        try:
            results = call(reqs, on_retry=lambda: self.usage.add(tag, retries=1))
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
        return self._answer(reqs, desc, show_progress)

    def continue_one(self, req: ContinuationRequest) -> ChatResult:
        """One text continuation (cached)."""
        return self.continue_many([req], show_progress=False)[0]

    def continue_many(
        self, reqs: Sequence[ContinuationRequest], desc: str = "continue", show_progress: bool = True
    ) -> list[ChatResult]:
        """Continue every prompt, in order, with the same cache, batching, retries and usage log as
        :meth:`chat_many`. n samples of a prompt are n requests that differ in ``seed``."""
        return self._answer(reqs, desc, show_progress)

    def _answer(self, reqs: Sequence[LLMRequest], desc: str, show_progress: bool) -> list[ChatResult]:
        kinds = {type(r) for r in reqs}
        if len(kinds) > 1:
            raise TypeError("chat and continuation requests cannot be mixed in one call")
        keys = [self._key(r) for r in reqs]
        answers: dict[str, ChatResult] = {}
        todo: dict[str, LLMRequest] = {}
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
                # Local models: calls run one after the other (the model uses all cores already); a backend
                # may take more requests per call than it runs at once (``call_size``: the local engine refills
                # a finished row's slot with a waiting request). Each call's answers are cached as it ends.
                call = max(batch, int(getattr(self.backend, "call_size", batch)))
                chunks = [items[i : i + call] for i in range(0, len(items), call)]
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
    model: ModelRequest | ModelSpec | str | Mapping[str, Any],
    *,
    external_dir: str | Path | None = None,
    cache: str | Path | None = None,
    concurrency: int = 4,
    timeout: float = 60.0,
    max_retries: int = 6,
    backoff_base: float = 1.0,
    backoff_max: float = 60.0,
    send_seed: bool = True,
    price_prompt_per_1m: float | None = None,
    price_completion_per_1m: float | None = None,
) -> LLMClient:
    """A client for ``model``: an endpoint spec gets the OpenAI-compatible HTTP backend, anything else the local
    transformers backend (:class:`~unstereo.llm.local.LocalBackend`), which takes the request whole.

    ``model`` is a :class:`~unstereo.models.request.ModelRequest` (from
    :func:`~unstereo.models.request.model_request`: the spec resolved once, with the local backend's device, dtype
    and batch size), or a model spec with the request's defaults: a resolved
    :class:`~unstereo.models.spec.ModelSpec` (taken as is), or its string/mapping form (see
    :mod:`unstereo.models.spec`), resolved here, once, against ``external_dir``. The other arguments configure
    the client and the HTTP backend."""
    from unstereo.models.request import as_request

    request = as_request(model, external_dir=external_dir)
    spec = request.spec
    if spec.is_remote:
        from unstereo.llm.http import OpenAICompatBackend

        be: Any = OpenAICompatBackend(
            str(spec.endpoint),
            str(spec.name),
            api_key_env=spec.api_key_env,
            timeout=timeout,
            max_retries=max_retries,
            backoff_base=backoff_base,
            backoff_max=backoff_max,
            send_seed=send_seed,
        )
    else:
        from unstereo.llm.local import LocalBackend

        be = LocalBackend(request)
    return LLMClient(
        be,
        cache=ChatCache(cache),
        concurrency=concurrency,
        usage=Usage(price_prompt_per_1m, price_completion_per_1m),
    )
