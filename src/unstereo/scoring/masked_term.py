"""The score of marked words at [MASK] under a masked LM (BiasTestGPT's masked-LM score, SPEC 5).

A text to score carries its target words between ``⟦`` and ``⟧`` (:func:`mark`), e.g. ``"⟦She⟧ likes math."``.
The score is sum over the target's tokens t_i of ln p(t_i | the sentence with every target token replaced by the
mask token): all target tokens are masked at once, the rest of the sentence is the context. For a one-token group
term this is ln p(term | "[MASK] likes math."), and comparing it between the two sentences of a pair compares the
logits at the one [MASK], as the release does; for a term of several tokens the release averages their raw logits
at one [MASK] instead (not a probability of the term; not reproduced). Special tokens stay unmasked and unscored.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from ..errors import InputError, UnstereoError
from ..log import get_logger
from ..model_spec import resolve_model
from ..models import ModelSpec, resolve_device, resolve_dtype
from .causal import run_metadata, token_logprobs
from .masked import MaskedScorer, load_masked_lm

log = get_logger("scoring")

OPEN, CLOSE = "⟦", "⟧"
_MARK = re.compile(f"{OPEN}(.*?){CLOSE}", re.DOTALL)


def mark(sentence: str, spans: list[tuple[int, int]]) -> str:
    """``sentence`` with each (start, end) span put between the markers."""
    out, last = [], 0
    for s, e in sorted(spans):
        out += [sentence[last:s], OPEN, sentence[s:e], CLOSE]
        last = e
    return "".join([*out, sentence[last:]])


def unmark(text: str) -> tuple[str, list[tuple[int, int]]]:
    """(plain sentence, spans of the marked words in it); an InputError when nothing is marked or markers nest."""
    plain, spans, last = [], [], 0
    pos = 0
    for m in _MARK.finditer(text):
        plain.append(text[last : m.start()])
        pos += m.start() - last
        spans.append((pos, pos + len(m.group(1))))
        plain.append(m.group(1))
        pos += len(m.group(1))
        last = m.end()
    plain.append(text[last:])
    out = "".join(plain)
    if not spans or OPEN in out or CLOSE in out:
        raise InputError(f"text {text!r}: needs words marked {OPEN}...{CLOSE} (not nested)")
    return out, spans


class MaskedTermScorer(MaskedScorer):
    """Scores marked texts by the log-probability of the marked words at their masks (see the module doc); batching
    and checks as :class:`~unstereo.scoring.masked.MaskedScorer`."""

    kind = "masked-term"

    def __init__(self, model: Any, tokenizer: Any, *args: Any, **kw: Any):
        if not getattr(tokenizer, "is_fast", False):
            raise UnstereoError("the masked-term score needs a fast tokenizer (character offsets)")
        super().__init__(model, tokenizer, *args, **kw)

    def encode(self, text: str) -> tuple[list[int], list[int]]:
        """(token ids with special tokens, positions of the tokens that overlap a marked span)."""
        plain, spans = unmark(text)
        enc = self.tokenizer(plain, add_special_tokens=True, return_offsets_mapping=True,
                             return_special_tokens_mask=True)  # fmt: skip
        targets = [
            i
            for i, ((s, e), special) in enumerate(
                zip(enc["offset_mapping"], enc["special_tokens_mask"], strict=True)
            )
            if not special and e > s and any(s < b and a < e for a, b in spans)
        ]
        if not targets:
            raise InputError(f"text {text!r}: the marked words have no token")
        return list(enc["input_ids"]), targets

    def score(self, texts: list[str]) -> list[tuple[float, int]]:
        """(sum of ln p(target token) at its mask, number of target tokens) per text, in input order."""
        items = [self.encode(t) for t in texts]
        return self.batcher.run([len(ids) for ids, _ in items], lambda idx: self._forward([items[i] for i in idx]),
                                unit="text")  # fmt: skip

    def _forward(self, rows: list[tuple[list[int], list[int]]]) -> list[tuple[float, int]]:
        import torch

        width = max(len(ids) for ids, _ in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(rows), width), dtype=torch.long)
        for r, (seq, targets) in enumerate(rows):
            ids[r, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            ids[r, targets] = self.tokenizer.mask_token_id
            attn[r, : len(seq)] = 1
        with torch.inference_mode():
            logits = self.model(input_ids=ids.to(self.device), attention_mask=attn.to(self.device)).logits
        out = []
        for r, (seq, targets) in enumerate(rows):
            pos = torch.tensor(targets, dtype=torch.long, device=logits.device)
            tgt = torch.tensor([seq[p] for p in targets], dtype=torch.long, device=logits.device)
            out.append((float(token_logprobs(logits[r, pos], tgt).double().sum()), len(targets)))
        return out

    def metadata(self) -> dict[str, Any]:
        return run_metadata(self, "none")


def masked_term_factory(
    model: str | ModelSpec, *, revision: str | None = None, batch_size: int | str = "auto",
    max_batch_size: int | None = None, dtype: str = "auto", device: str = "auto",
) -> tuple[dict[str, Any], Callable[[], MaskedTermScorer]]:  # fmt: skip
    """(run description, scorer factory) of a masked LM (hub id or folder), like
    :func:`unstereo.scoring.run.scorer_factory` does for the other scorers."""
    spec = resolve_model(model, revision=revision, key="MODEL")
    device = resolve_device(device)
    run = {
        "model_id": spec.path,
        "model_revision": spec.revision,
        "gguf_file": None,
        "scorer": MaskedTermScorer.kind,
        "dtype": str(resolve_dtype(dtype, device)).replace("torch.", ""),
    }

    def make() -> MaskedTermScorer:
        log.info("loading masked LM %s on %s", spec.path, device)
        m, tok = load_masked_lm(spec, dtype=dtype, device=device)
        return MaskedTermScorer(m, tok, device=device, batch_size=batch_size, max_batch_size=max_batch_size)

    return run, make
