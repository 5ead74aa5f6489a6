"""Sentence log-likelihoods under a causal language model (SPEC 1.4).

log p(s) = sum over the sentence's tokens t_i of ln p(t_i | prefix, t_1..t_{i-1}), where the prefix is the model's
BOS token, prepended and not scored. Tokenizers without a BOS token get an explicit, logged policy
(:func:`resolve_prefix`): EOS as the prefix when there is one (GPT-2 style models use ``<|endoftext|>`` as both),
else no prefix at all and the first token is not scored. The policy is written into every output row.

Exactness choices:
- the sentence is tokenized with ``add_special_tokens=False`` and the prefix is added here, so no tokenizer adds a
  second BOS or a trailing EOS behind our back;
- token log-probs are ``logit[token] - logsumexp(logits)`` in fp32 (closer to fp64 than ``log_softmax`` on CPU),
  summed in fp64;
- batches are right-padded with an attention mask: a causal model never attends to the padding that follows a real
  token and positions start at 0 for every row, so a sentence's score does not depend on its batch mates (up to the
  last bits of floating point that different matrix shapes give);
- sentences are sorted by length (longest first) and the batch size halves on out-of-memory (:mod:`.batching`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..log import get_logger
from .batching import Batcher

log = get_logger("scoring")

BOS_POLICIES = ("auto", "bos", "eos", "none")

# Auto batch size: start here, halve on out-of-memory. On CPU an allocation rarely fails (the kernel kills the
# process instead), so the logits of one batch are also bounded: items x length x vocab <= LOGITS_BUDGET floats.
AUTO_BATCH_SIZE = {"cuda": 128, "mps": 64, "cpu": 32}
LOGITS_BUDGET = {"cuda": 2**30, "mps": 2**28, "cpu": 2**28}  # floats: 4 GiB, 1 GiB, 1 GiB in fp32


@dataclass(frozen=True)
class Prefix:
    """What goes before a sentence: ``policy`` is bos, eos or none; ``token_id`` the prepended token (or None)."""

    policy: str
    token_id: int | None
    token: str | None

    def describe(self) -> str:
        return f"{self.policy}:{self.token}" if self.token is not None else self.policy


def resolve_prefix(tokenizer: Any, policy: str = "auto") -> Prefix:
    """The prefix token for ``policy``: auto = BOS, else EOS, else none (first token not scored); logged."""
    if policy not in BOS_POLICIES:
        raise ValueError(f"bos policy must be one of {BOS_POLICIES}, got {policy!r}")
    bos, eos = tokenizer.bos_token_id, tokenizer.eos_token_id
    if policy in ("auto", "bos") and bos is not None:
        return Prefix("bos", int(bos), tokenizer.bos_token)
    if policy == "bos":
        raise ValueError(
            "bos policy 'bos' requested but the tokenizer has no BOS token (use auto, eos or none)"
        )
    if policy in ("auto", "eos") and eos is not None:
        if policy == "auto":
            log.warning(
                "tokenizer has no BOS token: prepending its EOS token %r instead (bos policy 'eos')",
                tokenizer.eos_token,
            )
        return Prefix("eos", int(eos), tokenizer.eos_token)
    if policy == "eos":
        raise ValueError("bos policy 'eos' requested but the tokenizer has no EOS token (use auto or none)")
    log.warning(
        "tokenizer has neither BOS nor EOS (or policy 'none'): the first token of each sentence is not "
        "scored (bos policy 'none')"
    )
    return Prefix("none", None, None)


def token_logprobs(logits: Any, targets: Any) -> Any:
    """ln p(target) per position, in fp32: gathered logit minus logsumexp over the vocabulary."""
    logits = logits.float()
    picked = logits.gather(-1, targets.unsqueeze(-1)).squeeze(-1)
    return picked - logits.logsumexp(-1)


class CausalScorer:
    """Scores sentences with a causal LM: :meth:`score` returns (ln p(s), number of scored tokens) per sentence.

    ``batch_size`` is an int or ``"auto"`` (start at a device-dependent size, bound the logits' memory, halve on
    out-of-memory). ``model`` is anything called as ``model(input_ids=..., attention_mask=...)`` returning an object
    with ``.logits`` (a transformers causal LM in practice).
    """

    kind = "causal"

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        device: str = "cpu",
        batch_size: int | str = "auto",
        bos_policy: str = "auto",
        max_batch_size: int | None = None,
    ):
        self.model = model
        self.tokenizer = tokenizer
        self.device = device
        self.prefix = resolve_prefix(tokenizer, bos_policy)
        dev = device.split(":")[0]
        if batch_size == "auto":
            start = max_batch_size or AUTO_BATCH_SIZE.get(dev, 32)
            vocab = _vocab_size(model, tokenizer)
            cells = max(1, LOGITS_BUDGET.get(dev, 2**28) // vocab)
            self.batcher = Batcher(start, max_cells=cells)
        else:
            self.batcher = Batcher(int(batch_size))
        self.batch_size_requested = str(batch_size)
        self.pad_id = tokenizer.pad_token_id if tokenizer.pad_token_id is not None else 0

    def encode(self, sentences: list[str]) -> list[list[int]]:
        """Token ids of each sentence with the prefix token prepended (when the policy has one)."""
        ids = self.tokenizer(list(sentences), add_special_tokens=False)["input_ids"]
        if self.prefix.token_id is None:
            return [list(x) for x in ids]
        return [[self.prefix.token_id, *x] for x in ids]

    def score(self, sentences: list[str]) -> list[tuple[float, int]]:
        """(ln p(s), number of scored tokens) for each sentence, in input order."""
        seqs = self.encode(sentences)
        return self.batcher.run([len(s) for s in seqs], lambda idx: self._forward([seqs[i] for i in idx]))

    def _forward(self, seqs: list[list[int]]) -> list[tuple[float, int]]:
        import torch

        width = max(len(s) for s in seqs)
        if width < 2:  # nothing to score in any row (empty sentences, or one token under policy none)
            return [(0.0, 0) for _ in seqs]
        ids = torch.full((len(seqs), width), self.pad_id, dtype=torch.long)
        mask = torch.zeros((len(seqs), width), dtype=torch.long)
        for row, s in enumerate(seqs):
            ids[row, : len(s)] = torch.tensor(s, dtype=torch.long)
            mask[row, : len(s)] = 1
        ids, mask = ids.to(self.device), mask.to(self.device)
        with torch.inference_mode():
            logits = self.model(input_ids=ids, attention_mask=mask, use_cache=False).logits
            # position j predicts token j+1; only real tokens after the first count.
            lp = token_logprobs(logits[:, :-1], ids[:, 1:])
            valid = mask[:, 1:].bool()
            sums = torch.where(valid, lp, torch.zeros_like(lp)).double().sum(-1)
        counts = valid.sum(-1)
        return [(float(v), int(n)) for v, n in zip(sums.cpu().tolist(), counts.cpu().tolist(), strict=True)]

    def metadata(self) -> dict[str, Any]:
        """Run metadata for the output table."""
        return run_metadata(self, self.prefix.describe())


def _vocab_size(model: Any, tokenizer: Any) -> int:
    config = getattr(model, "config", None)
    size = getattr(config, "vocab_size", None)
    return int(size) if size else max(1, len(tokenizer))


def run_metadata(scorer: Any, bos_policy: str) -> dict[str, Any]:
    """Run metadata of a causal or masked scorer (``kind``, ``model``, ``device``, ``batcher``, ...)."""
    return {
        "scorer": scorer.kind,
        "device": str(scorer.device),
        "dtype": _dtype_name(scorer.model),
        "batch_size": int(scorer.batcher.largest_batch or scorer.batcher.batch_size),
        "batch_size_requested": scorer.batch_size_requested,
        "bos_policy": bos_policy,
        "model_commit": _commit(scorer.model),
    }


def _commit(model: Any) -> str | None:
    """The hub commit a model was loaded from (None for local folders and test models)."""
    return getattr(getattr(model, "config", None), "_commit_hash", None)


def _dtype_name(model: Any) -> str:
    dtype = getattr(model, "dtype", None)
    if dtype is None:
        try:
            dtype = next(model.parameters()).dtype
        except (StopIteration, AttributeError):
            return "unknown"
    return str(dtype).replace("torch.", "")
