"""The language-model side of fine-tuning: token ids of a text, right-padded batches, the next-token loss, and a
fine-tune on the LM loss alone (counterfactual data augmentation and its control)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any


def bos_ids(tok) -> list[int]:
    """``[tok.bos_token_id]``, or none for a tokenizer without a BOS token."""
    return [tok.bos_token_id] if tok.bos_token_id is not None else []


def encode_text(tok, text: str, max_length: int) -> list[int]:
    """BOS + the text's ids, cut to ``max_length`` tokens."""
    return (bos_ids(tok) + tok(text, add_special_tokens=False)["input_ids"])[:max_length]


def pad_id(tok) -> int:
    """The id padding a batch (the pad token's, else 0; padded positions are masked out)."""
    return tok.pad_token_id if tok.pad_token_id is not None else 0


def pad(seqs: list[list[int]], pad_value: int):
    """(ids, attention mask) of right-padded sequences, (B, T) long tensors."""
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_value, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


def lm_loss(logits, ids, mask):
    """Mean next-token cross-entropy over the real tokens."""
    import torch

    lp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    valid = mask[:, 1:].bool()
    return -(lp * valid).sum() / valid.sum().clamp(min=1)


def batch_lm_loss(model, seqs: list[list[int]], pad_value: int, device: str = "cpu"):
    """:func:`lm_loss` of the model on a batch of id sequences."""
    ids, mask = pad(seqs, pad_value)
    ids, mask = ids.to(device), mask.to(device)
    out = model(input_ids=ids, attention_mask=mask, use_cache=False)
    return lm_loss(out.logits, ids, mask)


def finetune_lm(model, tok, texts: Sequence[str], *, steps: int, batch_size: int, lr: float, max_length: int,
                out_dir: str | Path, checkpoint_every: int = 50, seed: int = 0, device: str = "cpu",
                fingerprint: str | None = None,
                after_step: Callable[[int], None] | None = None) -> list[dict[str, Any]]:  # fmt: skip
    """Fine-tune on the LM loss of ``texts`` (:func:`unstereo.finetune.loop.train`, resumable from
    ``out_dir/checkpoint.pt``); returns the loss log (``step``, ``loss``)."""
    from unstereo.finetune.loop import train

    seqs = [s for s in (encode_text(tok, t, max_length) for t in texts) if len(s) >= 2]
    value = pad_id(tok)
    return train(
        model, seqs, lambda batch: {"loss": batch_lm_loss(model, batch, value, device)}, steps=steps,
        batch_size=batch_size, lr=lr, out_dir=out_dir, checkpoint_every=checkpoint_every, seed=seed,
        device=device, fingerprint=fingerprint, desc="fine-tune (LM loss)", after_step=after_step,
    )  # fmt: skip
