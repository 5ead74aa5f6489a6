"""BiasTestGPT's masked-LM score of a group term, as the authors' code computes it (Kocielnik et al. 2023).

A text to score carries its group term between ``⟦`` and ``⟧`` (:func:`mark`), e.g. ``"⟦She⟧ likes math."``. Every
marked span is replaced by ONE mask token, whatever the number of the term's sub-word tokens, and the sentence is
encoded with its special tokens; at the first mask position the score is the mean of the model's raw logits (before
the softmax) of the term's sub-word ids, the term encoded alone without special tokens:

    score = (1 / |ids(term)|) sum over v in ids(term) of logits[first mask][v]

This is ``getBERTProb`` of the authors' ``_4_ss_test_rule.py`` (Kaminari84/BiasTestGPT, also in their app's
``mgr_bias_scoring.py``): the template with ``[T]`` replaced by ``[MASK]``, ``tokenizer.encode(template)``, the
logits at ``ids.index(mask_token_id)``, ``np.mean`` of those at ``tokenizer.encode(term, add_special_tokens=False)``.
The term is the marked text of the first span. It is a logit, not a log-probability: the two sentences of a pair
share the softmax normaliser at their one [MASK] only when their contexts are equal.
"""

from __future__ import annotations

import re
from typing import Any

from unstereo.errors import InputError
from unstereo.scoring.causal import run_metadata
from unstereo.scoring.masked import MaskedScorer

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
    """Scores marked texts by the mean raw logit of the (first) marked term's sub-word ids at its one [MASK] (see
    the module doc); batching and checks as :class:`~unstereo.scoring.masked.MaskedScorer`. :meth:`score` returns
    (that mean, number of the term's sub-word ids)."""

    kind = "masked-biastestgpt"

    def encode(self, text: str) -> tuple[list[int], int, list[int]]:
        """(token ids with special tokens and one mask token per marked span, position of the first mask, the
        first marked term's sub-word ids)."""
        plain, spans = unmark(text)
        pieces, last = [], 0
        for start, end in spans:
            pieces += [plain[last:start], self.tokenizer.mask_token]
            last = end
        masked = "".join([*pieces, plain[last:]])
        ids = list(self.tokenizer(masked, add_special_tokens=True)["input_ids"])
        term = plain[spans[0][0] : spans[0][1]]
        target = list(self.tokenizer(term, add_special_tokens=False)["input_ids"])
        if not target:
            raise InputError(f"text {text!r}: the marked term {term!r} has no token")
        return ids, ids.index(self.tokenizer.mask_token_id), target

    def score(self, texts: list[str]) -> list[tuple[float, int]]:
        """(mean raw logit of the term's sub-word ids at the first mask, number of those ids) per text."""
        items = [self.encode(t) for t in texts]
        return self.batcher.run(
            [len(ids) for ids, _, _ in items], lambda idx: self._forward([items[i] for i in idx]), unit="text"
        )

    def _forward(self, rows: list[tuple[list[int], int, list[int]]]) -> list[tuple[float, int]]:
        import torch

        width = max(len(ids) for ids, _, _ in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        attn = torch.zeros((len(rows), width), dtype=torch.long)
        for r, (seq, _, _) in enumerate(rows):
            ids[r, : len(seq)] = torch.tensor(seq, dtype=torch.long)
            attn[r, : len(seq)] = 1
        with torch.inference_mode():
            logits = self.model(input_ids=ids.to(self.device), attention_mask=attn.to(self.device)).logits
        out = []
        for r, (_, pos, target) in enumerate(rows):
            picked = logits[r, pos].float()[torch.tensor(target, dtype=torch.long, device=logits.device)]
            out.append((float(picked.double().mean()), len(target)))
        return out

    def metadata(self) -> dict[str, Any]:
        return run_metadata(self, "none")
