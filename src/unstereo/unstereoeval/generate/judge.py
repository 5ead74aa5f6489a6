"""The judge of sense: an instruction model asked, through its own chat template, whether a sentence is natural,
sensible English, scored by the probability of its answer token (it drops the generated sentences that make no
sense).

For each sentence the chat ``[system?] user: QUESTION.format(sentence=...)`` is rendered by the tokenizer's chat
template with the generation prompt (the assistant turn opened), and the model's next-token logits ``l`` there give

    P(Yes) = sum_{y in yes} e^{l_y} / (sum_{y in yes} e^{l_y} + sum_{n in no} e^{l_n})
           = sigmoid(logsumexp(l_yes) - logsumexp(l_no)),

the probability of "Yes" renormalised over the two answers (``yes``/``no``: one-token answer words, "Yes" and "No"
by default; the rest of the vocabulary drops out). No text is generated or parsed. A sentence passes when
P(Yes) >= ``threshold``.

Speed: the sentence ends the user turn, so every prompt starts with the same tokens (system turn, question); that
common prefix is run once and its KV cache reused by every batch, which then runs only the sentence and the
chat template's closing tokens (about 15 of 70 tokens with Qwen2.5's template). Rows of a batch are left-padded
(padding masked; positions continue the prefix) and only the last position's logits are computed. A model whose
forward takes no cache (``share_prefix=False``) runs the whole prompts instead; both give the same scores up to
float rounding (tests/unstereoeval/generate/test_generate_judge.py).
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from unstereo.errors import UnstereoError
from unstereo.log import get_logger

log = get_logger("unstereoeval.generate.judge")

#: The question; ``{sentence}`` comes last so that every prompt shares the tokens before it. Chosen on 20 hand-made
#: sentences (10 natural, 10 nonsense such as "He was bald tomorrow.", "He bowed bowing to the sun.") under
#: Qwen2.5-Coder-1.5B-Instruct (fp32); asking only "natural, sensible English?" put 7 of the 10 nonsense above 0.5.
#: Kept after calibration on the labelled set of :mod:`unstereo.unstereoeval.generate.judge_set`: two
#: other wordings tried on its calibration part did no better (balanced accuracy 0.864 / 0.861 vs 0.864);
#: docs/methods.md#judge-of-sense-generation.
QUESTION = (
    "Does the following sentence make sense? A sentence that is grammatical but describes something impossible, "
    "contradictory or absurd does not make sense. Answer with Yes or No only.\n\nSentence: {sentence}"
)
#: The P(Yes) threshold of best balanced accuracy (mean of the recalls of natural and unnatural) on the calibration
#: part of that set (0.4128, rounded; the same decisions on both parts); held-out (249 sentences): natural precision
#: 0.84, recall 0.89; unnatural precision 0.88, recall 0.82 (docs/methods.md#judge-of-sense-generation).
DEFAULT_THRESHOLD = 0.413
# A shared prefix shorter than this is not worth a cache copy per batch.
MIN_SHARED_PREFIX = 4


@dataclass(frozen=True)
class JudgeSettings:
    """What the judge asks and how it decides: ``question`` (with ``{sentence}``), an optional ``system`` turn (None:
    the chat template's own default), the one-token answer words, the P(Yes) ``threshold`` and the sentences per
    forward pass."""

    question: str = QUESTION
    system: str | None = None
    yes: tuple[str, ...] = ("Yes",)
    no: tuple[str, ...] = ("No",)
    threshold: float = DEFAULT_THRESHOLD
    batch_size: int = 16

    def __post_init__(self) -> None:
        if "{sentence}" not in self.question:
            raise UnstereoError("the judge's question needs a {sentence} field")
        if not 0.0 <= self.threshold <= 1.0:
            raise UnstereoError(f"the judge's threshold is a probability in [0, 1], got {self.threshold}")
        if self.batch_size < 1:
            raise UnstereoError(f"the judge's batch size must be >= 1, got {self.batch_size}")
        if not self.yes or not self.no or set(self.yes) & set(self.no):
            raise UnstereoError(
                f"the judge needs disjoint, non-empty yes/no answers, got {self.yes} / {self.no}"
            )


def common_prefix(rows: Sequence[Sequence[int]]) -> int:
    """Length of the longest common prefix of ``rows``, short of each row's last token (every row keeps at least
    one token of its own to run)."""
    if not rows:
        return 0
    n = min(len(r) for r in rows) - 1
    first = rows[0]
    for i in range(max(n, 0)):
        t = first[i]
        if any(r[i] != t for r in rows):
            return i
    return max(n, 0)


class SenseJudge:
    """P(Yes) of an instruction model ``model`` (a transformers causal LM) with its ``tokenizer`` (which must have a
    chat template) for sentences; see the module docstring."""

    def __init__(
        self, model: Any, tokenizer: Any, settings: JudgeSettings | None = None, share_prefix: bool = True
    ):
        self.model = model
        self.tok = tokenizer
        self.settings = settings or JudgeSettings()
        self.share_prefix = share_prefix
        if getattr(tokenizer, "chat_template", None) is None:
            raise UnstereoError(
                "the judge needs an instruction model with a chat template (the tokenizer has none)"
            )
        self.yes_ids = self._answer_ids(self.settings.yes)
        self.no_ids = self._answer_ids(self.settings.no)
        if set(self.yes_ids) & set(self.no_ids):
            raise UnstereoError(
                f"the yes and no answers share a token: {self.settings.yes} / {self.settings.no}"
            )
        pad = tokenizer.pad_token_id
        self.pad_id = (
            pad if pad is not None else (tokenizer.eos_token_id if tokenizer.eos_token_id is not None else 0)
        )

    def _answer_ids(self, words: tuple[str, ...]) -> list[int]:
        ids = []
        for word in words:
            got = self.tok(word, add_special_tokens=False)["input_ids"]
            if len(got) != 1:
                raise UnstereoError(
                    f"the judge's answer {word!r} is {len(got)} tokens for this tokenizer ({got}); it reads one "
                    "next token, so each answer must be a single token"
                )
            if got[0] not in ids:
                ids.append(got[0])
        return ids

    # ------------------------------------------------------------------------------------------------ prompts
    def messages(self, sentence: str) -> list[dict[str, str]]:
        """The chat asked about ``sentence``."""
        user = {"role": "user", "content": self.settings.question.format(sentence=sentence.strip())}
        return ([{"role": "system", "content": self.settings.system}] if self.settings.system else []) + [
            user
        ]

    def prompt(self, sentence: str) -> str:
        """The chat template's text for ``sentence``, up to the opened assistant turn."""
        return self.tok.apply_chat_template(
            self.messages(sentence), tokenize=False, add_generation_prompt=True
        )

    def prompt_ids(self, sentence: str) -> list[int]:
        """Token ids of :meth:`prompt` (the template writes the special tokens itself)."""
        return list(self.tok(self.prompt(sentence), add_special_tokens=False)["input_ids"])

    # ------------------------------------------------------------------------------------------------ scores
    def p_yes(self, sentences: Sequence[str]) -> list[float]:
        """P(Yes) renormalised over {yes, no} for each sentence, in order."""
        import torch

        if not sentences:
            return []
        rows = [self.prompt_ids(s) for s in sentences]
        shared = common_prefix(rows) if self.share_prefix else 0
        prefix_cache = None
        with torch.inference_mode():
            if shared >= MIN_SHARED_PREFIX:
                prefix = torch.tensor([rows[0][:shared]], dtype=torch.long, device=self.model.device)
                prefix_cache = self.model(input_ids=prefix, use_cache=True).past_key_values
            else:
                shared = 0
            # longest first, so the batches hold rows of similar length (less padding); scores go back in order
            order = sorted(range(len(rows)), key=lambda i: -len(rows[i]))
            out = [0.0] * len(rows)
            bs = self.settings.batch_size
            for start in range(0, len(order), bs):
                idx = order[start : start + bs]
                diffs = self._batch([rows[i][shared:] for i in idx], shared, prefix_cache)
                for i, d in zip(idx, diffs, strict=True):
                    out[i] = 1.0 / (1.0 + math.exp(-d))
        return out

    def _batch(self, suffixes: list[list[int]], shared: int, prefix_cache: Any) -> list[float]:
        """logsumexp(l_yes) - logsumexp(l_no) at the last token of each row (rows after ``shared`` cached tokens)."""
        import torch

        width = max(len(r) for r in suffixes)
        n = len(suffixes)
        device = self.model.device
        ids = torch.full((n, width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((n, shared + width), dtype=torch.long)
        mask[:, :shared] = 1
        positions = torch.zeros((n, width), dtype=torch.long)
        for j, row in enumerate(suffixes):
            pad = width - len(row)
            ids[j, pad:] = torch.tensor(row, dtype=torch.long)
            mask[j, shared + pad :] = 1
            positions[j, pad:] = torch.arange(shared, shared + len(row))
        kwargs: dict[str, Any] = {
            "input_ids": ids.to(device),
            "attention_mask": mask.to(device),
            "position_ids": positions.to(device),
            "logits_to_keep": 1,
        }
        if prefix_cache is not None:
            cache = copy.deepcopy(prefix_cache)
            if n > 1:
                cache.batch_repeat_interleave(n)
            kwargs["past_key_values"] = cache
            kwargs["use_cache"] = True
            kwargs["cache_position"] = torch.arange(shared, shared + width, device=device)
        else:
            kwargs["use_cache"] = False
        logits = self.model(**kwargs).logits[:, -1, :].double()
        yes = torch.logsumexp(logits[:, self.yes_ids], dim=-1)
        no = torch.logsumexp(logits[:, self.no_ids], dim=-1)
        return (yes - no).tolist()

    def judge(self, sentences: Sequence[str]) -> list[tuple[float, bool]]:
        """(P(Yes), passes) per sentence: passes when P(Yes) >= the threshold."""
        t = self.settings.threshold
        return [(p, p >= t) for p in self.p_yes(sentences)]


def load_judge(request: Any, settings: JudgeSettings | None = None) -> SenseJudge:
    """A :class:`SenseJudge` of ``request`` (a :class:`unstereo.models.request.ModelRequest`: its resolved spec,
    dtype and device; or a model spec, :func:`unstereo.models.request.as_request`). GGUF files are converted once
    per machine, see :mod:`unstereo.models.load`."""
    from unstereo.models.load import load
    from unstereo.models.request import as_request

    lm, tok = load(as_request(request), "causal")
    return SenseJudge(lm, tok, settings)
