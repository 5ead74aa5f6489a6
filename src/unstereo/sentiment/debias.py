"""Counterfactual debiasing (Huang et al. 2020, section 4) and its quality measures (section 5.3).

Training data: sentences of a corpus that hold a sensitive token (an attribute value of the templates: a country, an
occupation noun, a name; whole word). For such a sentence x with the token ending at position i, the counterfactual
prefix x~_{1:i} swaps the token for another value of the attribute from another subgroup (another country or
occupation, a name of the other gender). The debiasing step minimises

    L(x) = L_LM(x) + lambda * d(h(x_{1:i}), h(x~_{1:i})),     d(u, v) = 1 - u.v / (|u| |v|)

- embedding regularisation: h = the mean of the last two hidden layers at position i (the paper's choice);
- sentiment regularisation: h = the hidden layer of a small sentiment head f_s^h (Linear -> tanh -> Linear) applied
  to those features. The head is trained first, on the base model's frozen features of corpus sentences labelled
  by a configured classifier (kept where |score - 0.5| >= 0.25: "data with high magnitude"), and stays fixed.

The step is resumable: ``checkpoint.pt`` in the output folder (model, optimiser, head, step, sampler state) is
written every ``checkpoint_every`` steps and removed when training ends.

Quality (paper Table 1, Figure 6): perplexity on held-out sentences (PPL: sentences of the corpus; PPL_s: held-out
sentences with a sensitive token), from the project's causal scorer; semantic similarity S.S. = share of
continuations whose sentence embedding has cosine similarity > threshold with the prefix's, and S.S._c = share of
continuations that mention a value of the attribute.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.io import atomic_path
from unstereo.log import get_logger, progress

log = get_logger("sentiment.debias")

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+")
_ARTICLE = re.compile(r"^(a|an)\s+", re.I)


# ---- sensitive tokens and the corpus -----------------------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """A sensitive token: its text, attribute and subgroup (names: female/male; else the value itself)."""

    text: str
    attribute: str
    subgroup: str


def sensitive_terms(values: pd.DataFrame, attributes: Sequence[str]) -> list[Term]:
    """The sensitive tokens of the values table (occupations without their article)."""
    out = []
    for row in values.itertuples(index=False):
        if row.attribute in attributes:
            text = _ARTICLE.sub("", row.value)
            out.append(Term(text, row.attribute, row.subgroup or text))
    return out


def read_texts(paths: Sequence[str | Path]) -> list[str]:
    """Texts of .jsonl (field ``text``) or .txt (one a line) files."""
    texts = []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise InputError("file not found", path=path)
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh, start=1):
                line = line.strip()
                if not line:
                    continue
                if path.suffix == ".jsonl":
                    try:
                        texts.append(str(json.loads(line)["text"]))
                    except (json.JSONDecodeError, KeyError, TypeError) as exc:
                        raise InputError(f"not a JSON object with a `text` field: {exc}", path, i) from exc
                else:
                    texts.append(line)
    return texts


def split_sentences(texts: Sequence[str]) -> list[str]:
    """Sentences of the texts (split after . ! ? followed by space; newlines split too)."""
    out = []
    for text in texts:
        for line in text.splitlines():
            out += [s.strip() for s in _SENT_SPLIT.split(line) if len(s.split()) >= 3]
    return out


def find_term(sentence: str, pattern: re.Pattern, by_text: dict[str, Term]) -> tuple[Term, int, int] | None:
    """The first sensitive token of the sentence (whole word): (term, start, end) or None."""
    m = pattern.search(sentence)
    return None if m is None else (by_text[m.group(0)], m.start(), m.end())


def term_pattern(terms: Sequence[Term]) -> re.Pattern:
    """One regex for every term as a whole word (longest first, case-sensitive: names and countries are capitalised,
    occupation nouns are matched as written in the values)."""
    alts = sorted({t.text for t in terms}, key=len, reverse=True)
    return re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, alts)) + r")(?![\w-])")


@dataclass(frozen=True)
class Example:
    """A training sentence with its sensitive token at ``[start, end)`` and the counterfactual token."""

    text: str
    term: Term
    start: int
    end: int
    swap: str

    @property
    def prefix(self) -> str:
        return self.text[: self.end]

    @property
    def counterfactual_prefix(self) -> str:
        return self.text[: self.start] + self.swap


def counterfactual(term: Term, terms: Sequence[Term], rng: random.Random) -> str:
    """Another value of the term's attribute from another subgroup."""
    pool = [t.text for t in terms if t.attribute == term.attribute and t.subgroup != term.subgroup]
    return rng.choice(pool)


def build_examples(
    sentences: Sequence[str], terms: Sequence[Term], max_sentences: int, heldout_fraction: float, seed: int
) -> tuple[list[Example], list[str], list[str]]:
    """(training examples, held-out sensitive sentences, held-out general sentences), shuffled by ``seed``.

    Sentences with a sensitive token are shuffled, the first ``max_sentences`` kept, and ``heldout_fraction`` of
    them held out (PPL_s); as many sentences without the restriction are held out for PPL (none of them trained on).
    """
    rng = random.Random(seed)
    pattern = term_pattern(terms)
    by_text = {t.text: t for t in terms}
    found = []
    for s in sentences:
        hit = find_term(s, pattern, by_text)
        if hit:
            found.append((s, *hit))
    rng.shuffle(found)
    found = found[:max_sentences]
    if len(found) < 2:
        raise InputError(f"the corpus has {len(found)} sentence(s) with a sensitive token; need at least 2")
    n_held = max(1, int(round(len(found) * heldout_fraction)))
    held, train = found[:n_held], found[n_held:]
    examples = [Example(s, t, a, b, counterfactual(t, terms, rng)) for s, t, a, b in train]
    trained = {s for s, *_ in train}
    general = [s for s in sentences if s not in trained]
    rng.shuffle(general)
    return examples, [s for s, *_ in held], general[:n_held]


# ---- the model side ----------------------------------------------------------------------------------------------


def last_two_mean(hidden_states) -> Any:
    """h(x): the mean of the last two hidden layers (B, T, d)."""
    return (hidden_states[-1] + hidden_states[-2]) / 2


def _bos(tok) -> list[int]:
    return [tok.bos_token_id] if tok.bos_token_id is not None else []


def encode_example(tok, ex: Example, max_length: int) -> tuple[list[int], int, list[int]] | None:
    """(ids of x, position of the sensitive token's last sub-token in x, ids of the counterfactual prefix x~_{1:i});
    None when the prefix does not fit in ``max_length``. x is tokenised as prefix + rest, so both prefixes end at a
    token boundary."""
    enc = lambda s: tok(s, add_special_tokens=False)["input_ids"]  # noqa: E731
    prefix = _bos(tok) + enc(ex.prefix)
    if len(prefix) > max_length or len(prefix) < 1:
        return None
    ids = (prefix + enc(ex.text[ex.end :]))[:max_length]
    return ids, len(prefix) - 1, (_bos(tok) + enc(ex.counterfactual_prefix))[:max_length]


def _pad(seqs: list[list[int]], pad_id: int):
    import torch

    width = max(len(s) for s in seqs)
    ids = torch.full((len(seqs), width), pad_id, dtype=torch.long)
    mask = torch.zeros((len(seqs), width), dtype=torch.long)
    for i, s in enumerate(seqs):
        ids[i, : len(s)] = torch.tensor(s)
        mask[i, : len(s)] = 1
    return ids, mask


def features_at(model, seqs: list[list[int]], positions: list[int], pad_id: int, device: str = "cpu"):
    """(h at ``positions`` (B, d), logits (B, T, V), ids, mask) of right-padded sequences."""
    import torch

    ids, mask = _pad(seqs, pad_id)
    ids, mask = ids.to(device), mask.to(device)
    out = model(input_ids=ids, attention_mask=mask, output_hidden_states=True, use_cache=False)
    h = last_two_mean(out.hidden_states)
    rows = torch.arange(len(seqs), device=device)
    return h[rows, torch.tensor(positions, device=device)], out.logits, ids, mask


def lm_loss(logits, ids, mask):
    """Mean next-token cross-entropy over the real tokens."""
    import torch

    lp = torch.log_softmax(logits[:, :-1].float(), dim=-1).gather(-1, ids[:, 1:, None]).squeeze(-1)
    valid = mask[:, 1:].bool()
    return -(lp * valid).sum() / valid.sum().clamp(min=1)


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


def train_head(model, tok, sentences: Sequence[str], labels: Sequence[float], steps: int, seed: int = 0,
               max_length: int = 64, device: str = "cpu"):  # fmt: skip
    """Train the sentiment head on the frozen features of the last token of each sentence (binary labels)."""
    import torch

    enc = [(_bos(tok) + tok(s, add_special_tokens=False)["input_ids"])[:max_length] for s in sentences]
    keep = [i for i, e in enumerate(enc) if e]
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    feats = []
    with torch.no_grad():
        for i in range(0, len(keep), 16):
            batch = [enc[k] for k in keep[i : i + 16]]
            h, *_ = features_at(model, batch, [len(b) - 1 for b in batch], pad, device)
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


def fairness_loss(h_x, h_cf, method: str, head=None):
    """d(h(x), h(x~)) averaged over the batch: on the features (embedding) or on the head's hidden layer."""
    if method == "sentiment":
        if head is None:
            raise ValueError("sentiment regularisation needs the sentiment head")
        h_x, h_cf = head[:3](h_x), head[:3](h_cf)
    return cosine_distance(h_x, h_cf).mean()


def debias_loss(model, tok, batch: list[tuple[list[int], int, list[int]]], lam: float, method: str, head=None,
                device: str = "cpu"):  # fmt: skip
    """(L, L_LM, L_fair) of a batch of encoded examples (:func:`encode_example`)."""
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    h_x, logits, ids, mask = features_at(model, [b[0] for b in batch], [b[1] for b in batch], pad, device)
    h_cf, *_ = features_at(model, [b[2] for b in batch], [len(b[2]) - 1 for b in batch], pad, device)
    l_lm = lm_loss(logits, ids, mask)
    l_fair = fairness_loss(h_x, h_cf, method, head)
    return l_lm + lam * l_fair, l_lm, l_fair


def finetune(model, tok, encoded: list[tuple[list[int], int, list[int]]], *, method: str, lam: float, steps: int,
             batch_size: int, lr: float, out_dir: str | Path, checkpoint_every: int = 50, head=None, seed: int = 0,
             device: str = "cpu", after_step=None) -> list[dict[str, float]]:  # fmt: skip
    """The debiasing step (resumable from ``out_dir/checkpoint.pt``); returns the loss log (one row per step).
    ``after_step(k)`` runs after step k (a test hook)."""
    import torch

    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    ckpt = out_dir / "checkpoint.pt"
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=lr)
    rng = random.Random(seed)
    torch.manual_seed(seed)  # dropout
    order: list[int] = []
    history: list[dict[str, float]] = []
    start = 0
    if ckpt.exists():
        state = torch.load(ckpt, map_location=device, weights_only=False)
        model.load_state_dict(state["model"])
        opt.load_state_dict(state["optimizer"])
        rng.setstate(state["rng"])
        torch.set_rng_state(state["torch_rng"])
        order, history, start = state["order"], state["history"], state["step"]
        log.info("resuming the debiasing step at step %d/%d", start, steps)
    model.train()
    for step in progress(
        range(start, steps), desc=f"debias {method} λ={lam}", total=steps - start, unit="step"
    ):
        if len(order) < batch_size:
            more = list(range(len(encoded)))
            rng.shuffle(more)
            order += more
        idx, order = order[:batch_size], order[batch_size:]
        opt.zero_grad()
        loss, l_lm, l_fair = debias_loss(model, tok, [encoded[i] for i in idx], lam, method, head, device)
        loss.backward()
        opt.step()
        history.append({"step": step + 1, "loss": loss.item(), "lm": l_lm.item(), "fair": l_fair.item()})
        if (step + 1) % checkpoint_every == 0 and step + 1 < steps:
            state = {"model": model.state_dict(), "optimizer": opt.state_dict(), "rng": rng.getstate(), "torch_rng": torch.get_rng_state(),
                     "order": order, "history": history, "step": step + 1}  # fmt: skip
            with atomic_path(ckpt) as tmp:
                torch.save(state, tmp)
        if after_step is not None:  # a test hook (e.g. a simulated kill)
            after_step(step + 1)
    model.eval()
    ckpt.unlink(missing_ok=True)
    return history


# ---- quality -----------------------------------------------------------------------------------------------------


def perplexity(model, tok, texts: Sequence[str], device: str = "cpu") -> float:
    """exp(- sum ln p / number of scored tokens) over ``texts`` (the project's causal scorer, BOS prepended)."""
    from unstereo.scoring.causal import CausalScorer

    scores = CausalScorer(model, tok, device=device, batch_size=16).score(list(texts))
    total, count = sum(s for s, _ in scores), sum(n for _, n in scores)
    return math.exp(-total / count) if count else float("nan")


def mentions(continuations: Sequence[str], terms: Sequence[str]) -> np.ndarray:
    """Whether each continuation mentions one of ``terms`` (whole word, case-insensitive): S.S._c's numerator."""
    pattern = re.compile(r"(?<![\w-])(?:" + "|".join(map(re.escape, terms)) + r")(?![\w-])", re.I)
    return np.array([bool(pattern.search(c)) for c in continuations])
