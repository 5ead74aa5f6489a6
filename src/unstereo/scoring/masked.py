"""Sentence scores under a masked language model: pseudo-log-likelihood (Salazar et al. 2020) and All Unmasked
Likelihood (Kaneko and Bollegala 2022). The other masked-LM scores: :mod:`.masked_crows` (CrowS-Pairs) and
:mod:`.masked_term` (BiasTestGPT's term logit); :mod:`.masked_scorers` names them all.

PLL(s) = sum over the sentence's tokens t_i of ln p(t_i | s with t_i replaced by the mask token). The tokenizer's
special tokens ([CLS], [SEP], ...) are kept around the sentence and never masked or scored. Each masked copy is one
row of a batch; rows are right-padded with an attention mask, so a score does not depend on the other rows.

AUL(s) = (1 / |s|) sum over the sentence's tokens t_i of ln p(t_i | s), one forward pass of the unmasked sentence
(Kaneko and Bollegala 2022); :class:`AulScorer` returns the sum and |s|, the caller divides.
"""

from __future__ import annotations

from typing import Any

from unstereo.errors import UnstereoError
from unstereo.scoring.batching import scorer_batcher
from unstereo.scoring.causal import run_metadata, token_logprobs

AUTO_BATCH_SIZE = {"cuda": 256, "mps": 128, "cpu": 64}


class MaskedScorer:
    """Scores sentences by PLL: :meth:`score` returns (PLL(s), number of scored tokens) per sentence."""

    kind = "masked-pll"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        device: str = "cpu",
        batch_size: int | str = "auto",
        max_batch_size: int | None = None,
    ):
        if tokenizer.mask_token_id is None:
            raise UnstereoError("the tokenizer has no mask token: not a masked LM")
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.batcher = scorer_batcher(model, tokenizer, device, batch_size, max_batch_size, AUTO_BATCH_SIZE)
        self.batch_size_requested = str(batch_size)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def score(self, sentences: list[str]) -> list[tuple[float, int]]:
        """(PLL(s), number of scored tokens) for each sentence, in input order."""
        enc = self.tokenizer(list(sentences), add_special_tokens=True, return_special_tokens_mask=True)
        positions = [
            [p for p, is_special in enumerate(special) if not is_special]
            for special in enc["special_tokens_mask"]
        ]
        return self.masked_sums(enc["input_ids"], positions)

    def masked_sums(self, seqs: list[list[int]], positions: list[list[int]]) -> list[tuple[float, int]]:
        """Per sequence: (sum over its ``positions`` p of ln p(token at p | the sequence with p masked), number of
        positions); one masked copy per position."""
        items = [(k, p) for k, ps in enumerate(positions) for p in ps]  # (sequence, position to mask)
        lps = self.batcher.run(
            [len(seqs[k]) for k, _ in items],
            lambda idx: self._forward([(seqs[items[i][0]], items[i][1]) for i in idx]),
            unit="masked copy",
        )
        totals = [0.0] * len(seqs)
        counts = [0] * len(seqs)
        for (k, _), lp in zip(items, lps, strict=True):
            totals[k] += lp
            counts[k] += 1
        return list(zip(totals, counts, strict=True))

    def _forward(self, rows: list[tuple[list[int], int]]) -> list[float]:
        import torch

        width = max(len(s) for s, _ in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        pos = torch.tensor([p for _, p in rows], dtype=torch.long)
        targets = torch.tensor([s[p] for s, p in rows], dtype=torch.long)
        for r, (s, p) in enumerate(rows):
            ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
            ids[r, p] = self.tokenizer.mask_token_id
            mask[r, : len(s)] = 1
        ids, mask, pos, targets = (t.to(self.device) for t in (ids, mask, pos, targets))
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask).logits
            picked = logits[torch.arange(len(rows), device=logits.device), pos]
            lp = token_logprobs(picked, targets).double()
        return [float(v) for v in lp.cpu().tolist()]

    def metadata(self) -> dict[str, Any]:
        """Run metadata for the output table."""
        return run_metadata(self, "pll")


class AulScorer(MaskedScorer):
    """All Unmasked Likelihood: :meth:`score` returns (sum of ln p(t_i | s) over the sentence's non-special tokens,
    their number) from one forward pass of the unmasked sentence; AUL is the first divided by the second."""

    kind = "masked-aul"

    def score(self, sentences: list[str]) -> list[tuple[float, int]]:
        enc = self.tokenizer(list(sentences), add_special_tokens=True, return_special_tokens_mask=True)
        rows = [
            (ids, [p for p, sp in enumerate(special) if not sp])
            for ids, special in zip(enc["input_ids"], enc["special_tokens_mask"], strict=True)
        ]
        return self.batcher.run(
            [len(ids) for ids, _ in rows],
            lambda idx: self._forward_unmasked([rows[i] for i in idx]),
            unit="sentence",
        )

    def _forward_unmasked(self, rows: list[tuple[list[int], list[int]]]) -> list[tuple[float, int]]:
        import torch

        width = max(len(s) for s, _ in rows)
        ids = torch.full((len(rows), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(rows), width), dtype=torch.long)
        for r, (s, _) in enumerate(rows):
            ids[r, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[r, : len(s)] = 1
        with torch.inference_mode():
            logits = self.model(input_ids=ids.to(self.device), attention_mask=mask.to(self.device)).logits
        out = []
        for r, (s, pos) in enumerate(rows):
            p = torch.tensor(pos, dtype=torch.long, device=logits.device)
            tgt = torch.tensor([s[i] for i in pos], dtype=torch.long, device=logits.device)
            out.append((float(token_logprobs(logits[r, p], tgt).double().sum()), len(pos)))
        return out

    def metadata(self) -> dict[str, Any]:
        return run_metadata(self, "none")
