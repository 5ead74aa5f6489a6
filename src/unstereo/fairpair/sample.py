"""Sampling for FairPair: n continuations of x and of p(x) per prompt through the project's LLM client, and p applied
to the continuations of x (the SAMPLES table, ``continuation_mapped``).

Both sides of a prompt go through :func:`unstereo.llm.sample.sample_continuations` in one prompt table (resumable by
chunks, every call cached); sample j of x and sample j of p(x) use the same seed, so the two sides share their
random draws.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from unstereo.fairpair.llm_perturb import jaccard_dissimilarity
from unstereo.fairpair.perturb import RulePerturbation
from unstereo.fairpair.schemas import PERTURBATIONS, PROMPTS, SAMPLES
from unstereo.llm.sample import SampleSettings, sample_continuations
from unstereo.tables import validate

SIDES = ("original", "perturbed")


def side_prompts(prompts: pd.DataFrame) -> tuple[pd.DataFrame, dict[str, tuple[str, str]]]:
    """The PROMPTS table of both sides (ids ``<n>:o`` / ``<n>:p`` for the n-th prompt) and id -> (prompt_id, side)."""
    ids, texts, where = [], [], {}
    for i, (pid, x, px) in enumerate(
        zip(prompts["prompt_id"], prompts["prompt"], prompts["perturbed_prompt"], strict=True)
    ):
        for side, text in zip(SIDES, (x, px), strict=True):
            key = f"{i}:{side[0]}"
            ids.append(key)
            texts.append(text)
            where[key] = (pid, side)
    return pd.DataFrame({"prompt_id": ids, "prompt": texts}), where


def to_samples(
    prompts: pd.DataFrame, continuations: pd.DataFrame, where: dict[str, tuple[str, str]]
) -> pd.DataFrame:
    """The SAMPLES table without ``continuation_mapped`` (set by :func:`map_rules` or the LLM perturbation)."""
    info = prompts.set_index("prompt_id")
    pid_side = [where[k] for k in continuations["prompt_id"]]
    pids = [p for p, _ in pid_side]
    sides = [s for _, s in pid_side]
    text = [info.at[p, "prompt" if s == "original" else "perturbed_prompt"] for p, s in pid_side]
    df = pd.DataFrame(
        {
            "prompt_id": pids,
            "side": sides,
            "sample": continuations["sample"].astype(int).to_numpy(),
            "prompt": text,
            "continuation": continuations["continuation"].astype(str).to_numpy(),
            "continuation_mapped": continuations["continuation"].astype(object).to_numpy(),
            "seed": continuations["seed"].astype(int).to_numpy(),
            "tokens": continuations["tokens"].astype(int).to_numpy(),
        },
        columns=SAMPLES.names,
    )
    order = {p: i for i, p in enumerate(prompts["prompt_id"])}
    df = df.assign(_o=df["prompt_id"].map(order)).sort_values(["_o", "side", "sample"], kind="stable")
    return df.drop(columns="_o").reset_index(drop=True)


def map_rules(samples: pd.DataFrame, perturbation: RulePerturbation) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Apply the rule-based p to every original-side continuation: (SAMPLES with ``continuation_mapped``,
    PERTURBATIONS with one accepted row per original-side sample)."""
    samples = samples.copy()
    orig = samples["side"] == "original"
    mapped = [perturbation(t) for t in samples.loc[orig, "continuation"]]
    samples.loc[orig, "continuation_mapped"] = mapped
    src = samples.loc[orig]
    table = pd.DataFrame(
        {
            "prompt_id": src["prompt_id"].to_numpy(),
            "sample": src["sample"].to_numpy(),
            "method": "rules",
            "input": src["continuation"].to_numpy(),
            "output": mapped,
            "accepted": True,
            "reason": "ok",
            "dissimilarity": [
                jaccard_dissimilarity(a, b) for a, b in zip(src["continuation"], mapped, strict=True)
            ],
        },
        columns=PERTURBATIONS.names,
    )
    return validate(samples, SAMPLES), validate(table, PERTURBATIONS)


def map_llm(
    samples: pd.DataFrame, prompts: pd.DataFrame, client, settings
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Apply the LLM perturbation (:mod:`unstereo.fairpair.llm_perturb`) to every original-side continuation; a
    rejected one leaves ``continuation_mapped`` null."""
    from unstereo.fairpair.llm_perturb import perturb_with_llm

    samples = samples.copy()
    orig = samples["side"] == "original"
    table, mapped = perturb_with_llm(client, samples.loc[orig], prompts, settings)
    samples["continuation_mapped"] = samples["continuation_mapped"].astype(object)
    samples.loc[orig, "continuation_mapped"] = pd.Series(mapped, index=samples.index[orig], dtype=object)
    return validate(samples, SAMPLES), table


def sample_fairpairs(
    client,
    prompts: pd.DataFrame,
    out: str | Path,
    settings: SampleSettings,
    *,
    chunk_size: int = 64,
    source: str | Path | None = None,
    after_chunk=None,
) -> pd.DataFrame:
    """Sample ``settings.n`` continuations of x and of p(x) for every prompt; the raw CONTINUATIONS go to ``out``
    (resumable). Returns the SAMPLES table with ``continuation_mapped`` equal to the continuation (p not applied)."""
    validate(prompts, PROMPTS, source=source)
    table, where = side_prompts(prompts)
    cont = sample_continuations(
        client, table, out, settings, chunk_size=chunk_size, tag="fairpair", after_chunk=after_chunk
    )
    return to_samples(prompts, cont, where)


def sides(samples: pd.DataFrame, prompt_id: str) -> tuple[list[str], list[str]]:
    """(pg texts, gp texts) of one prompt: the mapped original-side continuations that exist, and the perturbed-side
    continuations, each in sample order."""
    one = samples[samples["prompt_id"] == prompt_id].sort_values("sample", kind="stable")
    pg = one.loc[one["side"] == "original", "continuation_mapped"]
    gp = one.loc[one["side"] == "perturbed", "continuation"]
    return [t for t in pg if isinstance(t, str)], list(gp)
