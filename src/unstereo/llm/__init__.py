"""One chat-completion client for every LLM call of the project (benchmark generation and friends).

- :class:`ChatRequest` / :class:`ChatResult`: a request (messages + sampling parameters, including the ``seed`` that
  makes the n samples of a prompt at T > 0 n distinct calls) and its answer.
- Backends: :class:`~unstereo.llm.http.OpenAICompatBackend` (any OpenAI-compatible ``/chat/completions`` endpoint;
  the API key is read from an environment variable whose *name* is configured) and
  :class:`~unstereo.llm.local.LocalChatBackend` (transformers + the tokenizer's chat template, offline).
- :class:`~unstereo.llm.client.LLMClient`: on-disk SQLite cache (:class:`~unstereo.llm.cache.ChatCache`), concurrency
  limit, usage/cost log. A finished call is written to the cache as soon as it returns, so an interrupted or repeated
  run never pays for it twice.
"""

from __future__ import annotations

from .cache import ChatCache
from .client import LLMClient, make_client
from .types import ChatRequest, ChatResult, Usage

__all__ = ["ChatCache", "ChatRequest", "ChatResult", "LLMClient", "Usage", "make_client"]
