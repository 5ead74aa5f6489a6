"""One LLM client for every LLM call of the project (benchmark generation, sampling stages and friends).

- :class:`ChatRequest` / :class:`ContinuationRequest` / :class:`ChatResult`: a chat request (messages) or a plain
  text continuation (prompt, stop strings) with sampling parameters, including the ``seed`` that makes the n samples
  of a prompt at T > 0 n distinct calls; and the answer to either.
- Backends, chosen by the model spec (:mod:`unstereo.models.spec`): :class:`~unstereo.llm.http.OpenAICompatBackend`
  (any OpenAI-compatible server: ``/chat/completions`` and ``/completions``; the API key is read from an environment
  variable whose *name* is configured) and :class:`~unstereo.llm.local.LocalBackend` (transformers, offline: chat
  through the tokenizer's chat template, continuation for any causal LM).
- :mod:`unstereo.llm.sample`: n continuations per prompt of a prompt table, resumable by chunks.
- :class:`~unstereo.llm.client.LLMClient`: on-disk SQLite cache (:class:`~unstereo.llm.cache.ChatCache`), concurrency
  limit, usage/cost log. A finished call is written to the cache as soon as it returns, so an interrupted or repeated
  run never pays for it twice.
"""

from __future__ import annotations

from unstereo.llm.cache import ChatCache
from unstereo.llm.client import LLMClient, make_client
from unstereo.llm.types import ChatRequest, ChatResult, ContinuationRequest, Usage

__all__ = [
    "ChatCache",
    "ChatRequest",
    "ChatResult",
    "ContinuationRequest",
    "LLMClient",
    "Usage",
    "make_client",
]
