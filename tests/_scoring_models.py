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


def tiny_qwen2_gguf(folder: Path, name: str = "tiny.gguf", seed: int = 0, tie: bool = True) -> Path:
    """A randomly initialised 2-layer Qwen2 (biases on q/k/v, as Qwen2.5) written as a GGUF file: linear weights
    quantised to Q8_0 by the ``gguf`` package, norms and embeddings in F32; vocabulary :data:`WORDS` + 4 specials.
    Returns the file. No tokenizer is written (the model loaders under test read none)."""
    import gguf
    import numpy as np
    from transformers import Qwen2Config, Qwen2ForCausalLM
    from transformers.modeling_gguf_pytorch_utils import get_gguf_hf_weights_map

    torch.manual_seed(seed)
    config = Qwen2Config(vocab_size=len(WORDS) + 4, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128,
                         initializer_range=0.2, tie_word_embeddings=tie, rope_theta=10000.0)  # fmt: skip
    model = Qwen2ForCausalLM(config).eval()
    # biases and norm weights away from their 0 / 1 initialisation, so both are exercised
    with torch.no_grad():
        for n, p in model.named_parameters():
            if n.endswith("bias") or "norm" in n:
                p.add_(torch.randn_like(p) * 0.3)
    to_hf = get_gguf_hf_weights_map(model)
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / name
    writer = gguf.GGUFWriter(str(path), "qwen2")
    writer.add_context_length(config.max_position_embeddings)
    writer.add_block_count(config.num_hidden_layers)
    writer.add_feed_forward_length(config.intermediate_size)
    writer.add_embedding_length(config.hidden_size)
    writer.add_head_count(config.num_attention_heads)
    writer.add_head_count_kv(config.num_key_value_heads)
    writer.add_layer_norm_rms_eps(config.rms_norm_eps)
    writer.add_rope_freq_base(config.rope_theta)
    writer.add_vocab_size(config.vocab_size)
    state = model.state_dict()
    for gguf_name, hf_name in sorted(to_hf.items()):
        if hf_name not in state or (tie and hf_name == "lm_head.weight"):
            continue
        w = state[hf_name].float().numpy()
        if w.ndim == 2 and "embed" not in hf_name and w.shape[1] % 32 == 0:
            q = gguf.quants.quantize(w, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(gguf_name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(gguf_name, np.ascontiguousarray(w, dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path
