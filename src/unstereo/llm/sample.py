"""Sampling n text continuations per prompt, resumably: the API the sampling stages (FairPair, counterfactual
sentiment, construction robustness, BiasTestGPT) and ``unstereo llm continue`` share.

:func:`sample_continuations` maps a PROMPTS table (``prompt_id``, ``prompt``) to a CONTINUATIONS table (one row per
prompt and sample) through :func:`unstereo.chunked_map.chunked_map`: chunks of prompts are written beside the output
as they finish, so a killed run redoes only the unfinished chunks; inside a chunk every finished call is in the LLM
cache as well. Sample ``j`` of every prompt uses seed ``seed + j``: the same seeds give the same texts whatever the
batch or chunk a prompt lands in, and the prompts of a pair (e.g. a he/she counterfactual) share their random draws.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.llm.types import ContinuationRequest
from unstereo.tables import TableSchema, columns, validate

PROMPTS = TableSchema(
    "prompts",
    "one row per prompt to continue",
    columns("""
        prompt_id  str  unique id of the prompt
        prompt     str  the text to continue (no chat template is applied)
    """),
    unique=("prompt_id",),
)

CONTINUATIONS = TableSchema(
    "continuations",
    "one row per (prompt, sample): a sampled text continuation",
    columns("""
        prompt_id      str   the prompt's id
        sample         int   sample index 0..n-1
        seed           int   the sample's seed (base seed + sample)
        continuation   str   the generated text (cut before the first stop string)
        finish_reason  str?  `stop` (end of sequence or a stop string) or `length`
        tokens         int   tokens generated (as reported by the backend)
    """),
    unique=("prompt_id", "sample"),
)


@dataclass(frozen=True)
class SampleSettings:
    """How to sample: ``n`` continuations per prompt at ``temperature`` with nucleus mass ``top_p``, at most
    ``max_new_tokens`` each, cut at ``stop`` strings; sample j uses seed ``seed + j``."""

    n: int = 1
    temperature: float = 1.0
    top_p: float = 1.0
    max_new_tokens: int = 64
    stop: tuple[str, ...] = ()
    seed: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "stop", tuple(self.stop))
        if self.n < 1:
            raise ValueError(f"n must be >= 1, got {self.n}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.temperature < 0 or self.max_new_tokens < 1:
            raise ValueError("temperature must be >= 0 and max_new_tokens >= 1")

    def request(self, prompt: str, sample: int, tag: str = "continuation") -> ContinuationRequest:
        return ContinuationRequest(
            prompt,
            temperature=self.temperature,
            max_tokens=self.max_new_tokens,
            top_p=self.top_p,
            stop=self.stop,
            seed=self.seed + sample,
            tag=tag,
        )


def read_prompts(path: str | Path) -> pd.DataFrame:
    """A PROMPTS table from .parquet/.csv/.jsonl (``prompt_id`` read as text)."""
    from unstereo.tables import read_table

    df = read_table(path)
    if "prompt_id" in df.columns:
        df = df.assign(prompt_id=df["prompt_id"].map(lambda v: v if pd.isna(v) else str(v)))
    return validate(df, PROMPTS, source=path)


def continue_prompts(client: Any, prompts: pd.DataFrame, settings: SampleSettings, tag: str = "continuation"):
    """The CONTINUATIONS rows of ``prompts`` (no chunk files; :func:`sample_continuations` adds them)."""
    rows = [
        (pid, j, settings.request(text, j, tag))
        for pid, text in zip(prompts["prompt_id"], prompts["prompt"], strict=True)
        for j in range(settings.n)
    ]
    results = client.continue_many([r for _, _, r in rows], desc=tag, show_progress=False)
    return pd.DataFrame(
        {
            "prompt_id": [pid for pid, _, _ in rows],
            "sample": [j for _, j, _ in rows],
            "seed": [r.seed for _, _, r in rows],
            "continuation": [res.text for res in results],
            "finish_reason": [res.finish_reason for res in results],
            "tokens": [int(res.completion_tokens) for res in results],
        },
        columns=CONTINUATIONS.names,
    )


def sample_continuations(
    client: Any,
    prompts: pd.DataFrame,
    out: str | Path,
    settings: SampleSettings | None = None,
    *,
    chunk_size: int = 64,
    tag: str = "continuation",
    after_chunk=None,
    source: str | Path | None = None,
) -> pd.DataFrame:
    """Sample ``settings.n`` continuations of every prompt with ``client`` (an :class:`~unstereo.llm.LLMClient`)
    and write the CONTINUATIONS table to ``out`` (.parquet or .csv); return it.

    Resumable: ``chunk_size`` prompts per chunk file (``<out>.chunks/``); a rerun after a kill computes only the
    chunks not yet written. ``after_chunk(k, n_chunks)`` runs after each written chunk (a test hook).
    """
    settings = settings or SampleSettings()
    from unstereo.chunked_map import chunked_map

    validate(prompts, PROMPTS, source=source)
    from unstereo.llm.types import sampler_key

    fingerprint = {
        "backend": client.backend.name,
        "model": client.backend.model,
        "settings": asdict(settings),
        # the local backend's uniform stream, for T > 0: chunks sampled with another stream are sampled again
        **sampler_key(getattr(client.backend, "sampler", None), settings.temperature),
    }
    return chunked_map(
        prompts[PROMPTS.names],
        lambda chunk: continue_prompts(client, chunk, settings, tag),
        out,
        fingerprint=fingerprint,
        chunk_size=chunk_size,
        key="prompt_id",
        schema=CONTINUATIONS,
        columns=CONTINUATIONS.names,
        desc=tag,
        past="sampled",
        after_chunk=after_chunk,
        source=source,
    )
