"""Tiny models and tokenizers built in the tests (no masked LM or small causal LM can be downloaded here)."""

from __future__ import annotations

import math
from pathlib import Path
from types import SimpleNamespace

import torch

WORDS = (
    "she he her his him went to the store . a dog barked book gave i yesterday because asked nobody expected "
    "win long race against champion of city , mary said hi"
).split()


def word_tokenizer(
    bos: str | None = "<s>", eos: str | None = "</s>", words=WORDS, add_bos_template: bool = False
):
    """A lower-casing whitespace/punctuation word-level tokenizer over ``words`` (+ special tokens)."""
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    specials = ["<pad>", "<unk>", "<s>", "</s>"]
    vocab = {w: i for i, w in enumerate([*specials, *words])}
    tok = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if add_bos_template:  # like Llama/Gemma tokenizers: BOS added by the tokenizer itself
        tok.post_processor = processors.TemplateProcessing(
            single="<s> $A", special_tokens=[("<s>", vocab["<s>"])]
        )
    kw = {"pad_token": "<pad>", "unk_token": "<unk>"}
    if bos:
        kw["bos_token"] = bos
    if eos:
        kw["eos_token"] = eos
    return PreTrainedTokenizerFast(tokenizer_object=tok, **kw)


def tiny_gpt2(vocab_size: int, seed: int = 0):
    """A randomly initialised 2-layer GPT-2 (large init so the distributions are far from uniform)."""
    from transformers import GPT2Config, GPT2LMHeadModel

    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab_size, n_positions=64, n_embd=16, n_layer=2, n_head=2, initializer_range=0.3
    )
    return GPT2LMHeadModel(config).eval()


def save_tiny_gpt2(path: Path) -> Path:
    """:func:`tiny_gpt2` with :func:`word_tokenizer`, saved as a Hugging Face folder at ``path``."""
    tok = word_tokenizer()
    tiny_gpt2(len(tok)).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def tiny_bert(tmp_path: Path, seed: int = 0):
    """(model, tokenizer) of a randomly initialised 2-layer BERT with a word-level vocab file written to tmp_path."""
    from transformers import BertConfig, BertForMaskedLM, BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *WORDS]
    path = tmp_path / "vocab.txt"
    path.write_text("\n".join(vocab) + "\n")
    tokenizer = BertTokenizerFast(vocab_file=str(path), do_lower_case=True)
    torch.manual_seed(seed)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=16,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=32,
        max_position_embeddings=64,
        initializer_range=0.3,
    )
    return BertForMaskedLM(config).eval(), tokenizer


class Bigram(torch.nn.Module):
    """A causal 'LM' whose next-token logits are ln(counts[previous token]): probabilities are worked out by hand.

    Vocabulary (see :func:`bigram_tokenizer`): 0 <pad>, 1 <unk>, 2 <s>, 3 </s>, 4 a, 5 b. Rows (previous token):
      <s>: counts a=2, b=3, everything else 1 -> total 1+1+1+1+2+3 = 9:  p(a|<s>) = 2/9, p(b|<s>) = 3/9
      a:   counts a=1, b=2, rest 1            -> total 7:               p(a|a) = 1/7,   p(b|a) = 2/7
      b:   counts a=3, b=1, rest 1            -> total 8:               p(a|b) = 3/8,   p(b|b) = 1/8
      other rows: uniform.
    ``calls`` counts forward passes; ``oom_above`` raises a fake out-of-memory error for larger batches.
    """

    def __init__(self, oom_above: int | None = None):
        super().__init__()
        counts = torch.ones(6, 6)
        counts[2, 4], counts[2, 5] = 2, 3
        counts[4, 4], counts[4, 5] = 1, 2
        counts[5, 4], counts[5, 5] = 3, 1
        self.table = torch.nn.Parameter(counts.log(), requires_grad=False)
        self.oom_above = oom_above
        self.calls = 0
        self.batch_sizes: list[int] = []

    def forward(self, input_ids, attention_mask=None, **kw):
        if self.oom_above is not None and input_ids.shape[0] > self.oom_above:
            raise torch.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.00 GiB (fake)")
        self.calls += 1
        self.batch_sizes.append(int(input_ids.shape[0]))
        return SimpleNamespace(logits=self.table[input_ids])


def bigram_tokenizer(**kw):
    return word_tokenizer(words=["a", "b"], **kw)


LN = math.log
