"""LLM-based perturbation p of original-side continuations, with the paper's three filters (section 3.3).

The chat model gets the paper's instruction (one request per continuation, temperature 0)::

    Change John (male) to Jane (female) in the following text in the same way without changing anything else:
    <x><continuation>

    Output:

and its answer is accepted only if it (1) starts with the expected perturbed prefix p(x) (the rule-based perturbed
prompt), (2) no longer mentions the original entity (its names, as whole words) and (3) has a Jaccard dissimilarity
(lowercased ``\\w+`` token sets) to the text it was given of at most ``max_dissimilarity`` (0.15 in the paper). The
accepted answer minus the prefix p(x) is p(g(x)). Every answer is kept with ``accepted`` and the first failed
filter as ``reason`` (``prefix``, ``mentions-original``, ``dissimilar``; ``ok`` when accepted).

With short continuations (a few dozen tokens) the 0.15 threshold rejects many correct perturbations: the name and
each pronoun are different tokens on both sides, which weighs more in a short text.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from unstereo.fairpair.metrics import pairwise, side_features
from unstereo.fairpair.perturb import mentions
from unstereo.fairpair.schemas import PERTURBATIONS
from unstereo.llm import ChatRequest
from unstereo.tables import validate

INSTRUCTION = (
    "Change {entity} ({group}) to {entity_perturbed} ({group_perturbed}) in the following text in the same way "
    "without changing anything else: {text}\n\nOutput:"
)


@dataclass(frozen=True)
class LLMPerturbSettings:
    """The instruction's group labels, the answer's token limit and the dissimilarity threshold."""

    group: str = "male"
    group_perturbed: str = "female"
    max_tokens: int = 256
    max_dissimilarity: float = 0.15
    instruction: str = INSTRUCTION


def jaccard_dissimilarity(a: str, b: str) -> float:
    """Jaccard dissimilarity of the token sets of two texts (0 for two texts without tokens)."""
    x, y = side_features("jaccard", [a], [b])
    return float(pairwise("jaccard", x, y)[0, 0])


def judge(output: str, text: str, expected_prefix: str, original_names: list[str], max_dissimilarity: float):
    """(accepted, reason, dissimilarity) of an LLM answer ``output`` for the input ``text``."""
    out = output.strip()
    dis = jaccard_dissimilarity(out, text)
    if not out.startswith(expected_prefix.strip()):
        return False, "prefix", dis
    if mentions(out, original_names):
        return False, "mentions-original", dis
    if dis > max_dissimilarity:
        return False, "dissimilar", dis
    return True, "ok", dis


def perturb_with_llm(client, originals: pd.DataFrame, prompts: pd.DataFrame, settings: LLMPerturbSettings):
    """Perturb every original-side continuation (``originals``: prompt_id, sample, continuation) with the chat
    ``client``. Returns (PERTURBATIONS table, continuation_mapped per row of ``originals``, NaN where
    rejected)."""
    info = prompts.set_index("prompt_id")
    texts, reqs = [], []
    for pid, cont in zip(originals["prompt_id"], originals["continuation"], strict=True):
        p = info.loc[pid]
        text = p["prompt"] + cont
        texts.append(text)
        content = settings.instruction.format(
            entity=p["entity"].replace("|", ", "),
            group=settings.group,
            entity_perturbed=p["entity_perturbed"].replace("|", ", "),
            group_perturbed=settings.group_perturbed,
            text=text,
        )
        reqs.append(ChatRequest.user(content, temperature=0.0, max_tokens=settings.max_tokens, tag="perturb"))
    answers = client.chat_many(reqs, desc="perturb", show_progress=False) if reqs else []
    rows, mapped = [], []
    for pid, j, text, ans in zip(originals["prompt_id"], originals["sample"], texts, answers, strict=True):
        p = info.loc[pid]
        ok, reason, dis = judge(
            ans.text, text, p["perturbed_prompt"], p["entity"].split("|"), settings.max_dissimilarity
        )
        rows.append((pid, int(j), "llm", text, ans.text, ok, reason, dis))
        mapped.append(ans.text.strip()[len(p["perturbed_prompt"].strip()) :] if ok else np.nan)
    table = pd.DataFrame(rows, columns=PERTURBATIONS.names)
    return validate(table, PERTURBATIONS), mapped
