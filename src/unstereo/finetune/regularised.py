"""Counterfactual regularisation (Huang et al. 2020, section 4): fine-tune with

    L(x) = L_LM(x) + lambda * d(h(x_{1:i}), h(x~_{1:i})),     d(u, v) = 1 - u.v / (|u| |v|)

where x holds a sensitive token ending at position i and the counterfactual prefix x~_{1:i} swaps it for a token of
another subgroup (the sentiment method: another country, occupation or name; the model variants: the gendered
word's counterpart).

- embedding regularisation: h = the mean of the last two hidden layers at position i (the paper's choice);
- sentiment regularisation: h = the hidden layer of a small sentiment head f_s^h (Linear -> tanh -> Linear) applied
  to those features. The head is trained first, on the base model's frozen features of sentences labelled by a
  sentiment classifier (kept where |score - 0.5| >= 0.25: "data with high magnitude"), and stays fixed.

The fine-tune is :func:`unstereo.finetune.loop.train`'s (resumable, ``checkpoint.pt`` in the run's folder).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from unstereo.errors import InputError
from unstereo.finetune.language_model import bos_ids, lm_loss, pad, pad_id
from unstereo.log import get_logger

log = get_logger("finetune.regularised")

#: An encoded example: (ids of x, position of the sensitive token's last sub-token in x, ids of x~_{1:i}).
Encoded = tuple[list[int], int, list[int]]


@dataclass(frozen=True)
class CounterfactualExample:
    """A training sentence ``text`` with its sensitive token at ``[start, end)`` and the token that replaces it in the
    counterfactual prefix, ``swap``."""

    text: str
    start: int
    end: int
    swap: str

    @property
    def prefix(self) -> str:
        """x_{1:i}: the sentence up to the end of its sensitive token."""
        return self.text[: self.end]

    @property
    def counterfactual_prefix(self) -> str:
        """x~_{1:i}: that prefix with the token swapped."""
        return self.text[: self.start] + self.swap


def last_two_mean(hidden_states) -> Any:
    """h(x): the mean of the last two hidden layers (B, T, d)."""
    return (hidden_states[-1] + hidden_states[-2]) / 2


def encode_example(tok, ex: CounterfactualExample, max_length: int) -> Encoded | None:
    """(ids of x, position of the sensitive token's last sub-token in x, ids of the counterfactual prefix x~_{1:i});
    None when the prefix does not fit in ``max_length``. x is tokenised as prefix + rest, so both prefixes end at a
    token boundary."""
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    prefix = bos_ids(tok) + enc(ex.prefix)
    if len(prefix) > max_length or len(prefix) < 1:
        return None
    ids = (prefix + enc(ex.text[ex.end :]))[:max_length]
    return ids, len(prefix) - 1, (bos_ids(tok) + enc(ex.counterfactual_prefix))[:max_length]


def features_at(model, seqs: list[list[int]], positions: list[int], pad_value: int, device: str = "cpu"):
    """(h at ``positions`` (B, d), logits (B, T, V), ids, mask) of right-padded sequences."""
    import torch

    ids, mask = pad(seqs, pad_value)
    ids, mask = ids.to(device), mask.to(device)
    out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
    h = last_two_mean(out.hidden_states)
    rows = torch.arange(len(seqs), device=device)
    return h[rows, torch.tensor(positions, device=device)], out.logits, ids, mask


def cosine_distance(u, v):
    """1 - cos(u, v) per row."""
    import torch

    return 1 - torch.nn.functional.cosine_similarity(u, v, dim=-1)


def make_head(dim: int, hidden: int = 32, seed: int = 0, mean=None, std=None):
    """The sentiment head f_s^h: standardise the features (fixed mean/std of the training features) -> Linear(dim,
    hidden) -> tanh -> Linear(hidden, 1). ``head[:3]`` is the projection the sentiment regularisation compares."""
    import torch

    class Standardize(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.register_buffer("mean", torch.zeros(dim) if mean is None else mean.detach().clone())
            self.register_buffer("std", torch.ones(dim) if std is None else std.detach().clone())

        def forward(self, x):
            return (x - self.mean) / self.std

    torch.manual_seed(seed)
    return torch.nn.Sequential(
        Standardize(), torch.nn.Linear(dim, hidden), torch.nn.Tanh(), torch.nn.Linear(hidden, 1)
    )


def train_head(model, tok, sentences: Sequence[str], labels: Sequence[float] | np.ndarray, steps: int, seed: int = 0,
               max_length: int = 64, device: str = "cpu"):  # fmt: skip
    """Train the sentiment head on the frozen features of the last token of each sentence (binary labels)."""
    import torch

    enc = [(bos_ids(tok) + tok(s, add_special_tokens=False)["input_ids"])[:max_length] for s in sentences]
    keep = [i for i, e in enumerate(enc) if e]
    value = pad_id(tok)
    feats = []
    with torch.no_grad():
        for i in range(0, len(keep), 16):
            batch = [enc[k] for k in keep[i : i + 16]]
            h, *_ = features_at(model, batch, [len(b) - 1 for b in batch], value, device)
            feats.append(h.float())
    x = torch.cat(feats)
    y = torch.tensor([float(labels[k]) for k in keep], device=x.device)
    # standardised inside the head: the features' scale varies a lot between models and layers
    head = make_head(x.shape[1], seed=seed, mean=x.mean(0), std=x.std(0).clamp(min=1e-6)).to(x.device)
    opt = torch.optim.Adam(head.parameters(), lr=1e-3)
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.binary_cross_entropy_with_logits(head(x).squeeze(-1), y)
        loss.backward()
        opt.step()
    acc = float(((head(x).squeeze(-1) > 0).float() == y).float().mean())
    log.info("sentiment head: %d sentences, training accuracy %.3f", len(y), acc)
    for p in head.parameters():
        p.requires_grad_(False)
    return head


def sentiment_head(model, tok, texts: Sequence[str], scores: np.ndarray, classifier: str, steps: int,
                   seed: int = 0, max_length: int = 64, device: str = "cpu"):  # fmt: skip
    """:func:`train_head` on the ``texts`` whose classifier ``scores`` (in [0, 1]) are clear, |score - 0.5| >=
    0.25, labelled score > 0.5; an InputError (naming ``classifier``) when fewer than 4 are, or one class only."""
    keep = np.abs(scores - 0.5) >= 0.25
    if keep.sum() < 4 or len(set((scores[keep] > 0.5).tolist())) < 2:
        raise InputError(
            f"only {int(keep.sum())} training sentences have a clear sentiment under "
            f"{classifier!r} (both classes needed): use a larger corpus or max_sentences"
        )
    return train_head(
        model, tok, [t for t, k in zip(texts, keep, strict=True) if k], (scores[keep] > 0.5).astype(float),
        steps, seed, max_length, device,
    )  # fmt: skip


def fairness_loss(h_x, h_cf, method: str, head=None):
    """d(h(x), h(x~)) averaged over the batch: on the features (embedding) or on the head's hidden layer."""
    if method == "sentiment":
        if head is None:
            raise ValueError("sentiment regularisation needs the sentiment head")
        h_x, h_cf = head[:3](h_x), head[:3](h_cf)
    return cosine_distance(h_x, h_cf).mean()


def debias_loss(model, tok, batch: list[Encoded], lam: float, method: str, head=None,
                device: str = "cpu"):  # fmt: skip
    """(L, L_LM, L_fair) of a batch of encoded examples (:func:`encode_example`)."""
    value = pad_id(tok)
    h_x, logits, ids, mask = features_at(model, [b[0] for b in batch], [b[1] for b in batch], value, device)
    h_cf, *_ = features_at(model, [b[2] for b in batch], [len(b[2]) - 1 for b in batch], value, device)
    l_lm = lm_loss(logits, ids, mask)
    l_fair = fairness_loss(h_x, h_cf, method, head)
    return l_lm + lam * l_fair, l_lm, l_fair


def finetune(model, tok, encoded: list[Encoded], *, method: str, lam: float, steps: int, batch_size: int,
             lr: float, out_dir: str | Path, checkpoint_every: int = 50, head=None, seed: int = 0,
             device: str = "cpu", fingerprint: str | None = None,
             after_step: Callable[[int], None] | None = None) -> list[dict[str, float]]:  # fmt: skip
    """The regularised fine-tune (``method`` embedding or sentiment, strength ``lam``; resumable from
    ``out_dir/checkpoint.pt``); returns the loss log (``step``, ``loss``, ``lm``, ``fair``)."""
    from unstereo.finetune.loop import train

    def loss_fn(batch: list[Encoded]) -> dict[str, Any]:
        loss, l_lm, l_fair = debias_loss(model, tok, batch, lam, method, head, device)
        return {"loss": loss, "lm": l_lm, "fair": l_fair}

    return train(
        model, encoded, loss_fn, steps=steps, batch_size=batch_size, lr=lr, out_dir=out_dir,
        checkpoint_every=checkpoint_every, seed=seed, device=device, fingerprint=fingerprint,
        desc=f"debias {method} λ={lam}", after_step=after_step,
    )  # fmt: skip
