"""Request, result and usage records shared by the client, the cache and the backends."""

from __future__ import annotations

import hashlib
import json
import threading
from dataclasses import dataclass, field
from typing import Any


@dataclass(frozen=True)
class ChatRequest:
    """One chat completion: ``messages`` as ((role, content), ...) plus sampling parameters.

    ``seed`` identifies the sample: two requests that differ only in ``seed`` are two calls (and two cache entries),
    which is how n samples of one prompt at T > 0 are drawn reproducibly. ``tag`` (what the call is for) is only for
    the usage log and is not part of the cache key.
    """

    messages: tuple[tuple[str, str], ...]
    temperature: float = 0.0
    max_tokens: int = 256
    top_p: float = 1.0
    seed: int = 0
    tag: str = field(default="chat", compare=False)

    @classmethod
    def user(cls, content: str, **kw: Any) -> ChatRequest:
        """A request with a single user message."""
        return cls(messages=(("user", content),), **kw)

    def message_dicts(self) -> list[dict[str, str]]:
        return [{"role": r, "content": c} for r, c in self.messages]

    def params(self) -> dict[str, Any]:
        return {
            "temperature": float(self.temperature),
            "max_tokens": int(self.max_tokens),
            "top_p": float(self.top_p),
            "seed": int(self.seed),
        }

    def payload(self) -> dict[str, Any]:
        """What is sent besides the parameters (also stored in the cache row)."""
        return {"messages": self.message_dicts()}

    def cache_key(self, backend: str, model: str, sampler: str | None = None) -> str:
        """sha256 of (backend, model, messages, sampling parameters incl. seed), canonical JSON; with the backend's
        uniform stream (``sampler``, :func:`sampler_key`) when it samples (T > 0)."""
        return _sha256({"backend": backend, "model": model, **self.payload(), "params": self.params(),
                        **sampler_key(sampler, self.temperature)})  # fmt: skip


@dataclass(frozen=True)
class ContinuationRequest:
    """One plain text continuation of ``prompt`` (no chat template; base models included).

    ``seed`` identifies the sample exactly as for :class:`ChatRequest`: the n samples of a prompt are n requests with
    n seeds, n calls and n cache entries. ``stop``: the text is cut before the first occurrence of any of these
    strings (and generation stops there). ``tag`` is only for the usage log.
    """

    prompt: str
    temperature: float = 1.0
    max_tokens: int = 64
    top_p: float = 1.0
    stop: tuple[str, ...] = ()
    seed: int = 0
    tag: str = field(default="continuation", compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop", tuple(self.stop))  # a list given by the caller stays hashable

    def params(self) -> dict[str, Any]:
        return {
            "temperature": float(self.temperature),
            "max_tokens": int(self.max_tokens),
            "top_p": float(self.top_p),
            "stop": list(self.stop),
            "seed": int(self.seed),
        }

    def payload(self) -> dict[str, Any]:
        """What is sent besides the parameters; ``kind`` keeps continuation keys apart from chat keys."""
        return {"kind": "continuation", "prompt": self.prompt}

    def cache_key(self, backend: str, model: str, sampler: str | None = None) -> str:
        """sha256 of (kind, backend, model, prompt, sampling parameters incl. stop strings and seed), with the
        backend's uniform stream when it samples (:func:`sampler_key`)."""
        return _sha256({"backend": backend, "model": model, **self.payload(), "params": self.params(),
                        **sampler_key(sampler, self.temperature)})  # fmt: skip


def sampler_key(sampler: str | None, temperature: float) -> dict[str, str]:
    """``{"sampler": sampler}`` where a backend names the stream its rows draw from (the local backend:
    :data:`unstereo.engine.sampler.STREAM`) and the request samples (T > 0), else nothing: greedy answers and
    endpoints' answers keep their keys, and a change of the local stream never mixes old samples with new ones."""
    return {"sampler": sampler} if sampler is not None and temperature > 0 else {}


def _sha256(payload: dict[str, Any]) -> str:
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class ChatResult:
    """The answer to a :class:`ChatRequest` or a :class:`ContinuationRequest`; ``cached`` says it came from the
    cache (no call made). ``finish_reason``: ``stop`` (end of sequence or a stop string) or ``length``."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str | None = None
    cached: bool = False

    def to_json(self) -> str:
        return json.dumps(
            {
                "text": self.text,
                "prompt_tokens": self.prompt_tokens,
                "completion_tokens": self.completion_tokens,
                "finish_reason": self.finish_reason,
            },
            ensure_ascii=False,
        )

    @classmethod
    def from_json(cls, text: str, cached: bool = True) -> ChatResult:
        d = json.loads(text)
        return cls(
            d["text"],
            d.get("prompt_tokens", 0),
            d.get("completion_tokens", 0),
            d.get("finish_reason"),
            cached,
        )


#: Either kind of request the client accepts.
LLMRequest = ChatRequest | ContinuationRequest


class Usage:
    """Thread-safe per-run counters: calls made, cache hits, retries, tokens, estimated cost (per tag and total)."""

    FIELDS = ("calls", "cache_hits", "retries", "errors", "prompt_tokens", "completion_tokens")

    def __init__(
        self, price_prompt_per_1m: float | None = None, price_completion_per_1m: float | None = None
    ):
        self._lock = threading.Lock()
        self.price_prompt = price_prompt_per_1m
        self.price_completion = price_completion_per_1m
        self.by_tag: dict[str, dict[str, int]] = {}

    def add(self, tag: str, **counts: int) -> None:
        with self._lock:
            row = self.by_tag.setdefault(tag, dict.fromkeys(self.FIELDS, 0))
            for k, v in counts.items():
                row[k] += int(v)

    def total(self) -> dict[str, int]:
        with self._lock:
            out = dict.fromkeys(self.FIELDS, 0)
            for row in self.by_tag.values():
                for k in self.FIELDS:
                    out[k] += row[k]
            return out

    def cost(self, row: dict[str, int]) -> float | None:
        """Estimated cost of the calls made (cache hits are free); None when no prices are configured."""
        if self.price_prompt is None and self.price_completion is None:
            return None
        return (
            row["prompt_tokens"] * (self.price_prompt or 0.0)
            + row["completion_tokens"] * (self.price_completion or 0.0)
        ) / 1e6

    def as_dict(self) -> dict[str, Any]:
        total = self.total()
        with self._lock:
            tags = {t: dict(r, estimated_cost=self.cost(r)) for t, r in sorted(self.by_tag.items())}
        return {
            "total": dict(total, estimated_cost=self.cost(total)),
            "by_tag": tags,
            "prices_per_1m_tokens": {"prompt": self.price_prompt, "completion": self.price_completion},
        }
