"""Offline chat backend: a local causal LM through transformers and its tokenizer's chat template.

Works with any instruct model :func:`unstereo.models.load_causal_lm` can load (hub id, folder, GGUF file such as
Qwen2.5-Coder-0.5B-Instruct or SmolLM2-135M-Instruct). Several prompts are generated in one left-padded batch. Each
row samples with its own ``torch.Generator`` seeded from the request's ``seed``, so a row's answer does not depend on
which other prompts share its batch (up to float rounding); T = 0 is greedy.
"""

from __future__ import annotations

from typing import Any

from ..log import get_logger
from .types import ChatRequest, ChatResult

log = get_logger("llm.local")


def _row_sampler(temperatures: list[float], top_ps: list[float], generators: list[Any]):
    """A logits processor that samples each row itself and returns a one-hot score row.

    transformers then runs greedy decoding (argmax of the one-hot row = the sampled token), which keeps its KV
    cache, padding and end-of-sequence handling while the randomness comes from per-row generators.
    """
    import torch

    def process(input_ids, scores):
        out = torch.full_like(scores, float("-inf"))
        logits = scores.float()
        for i in range(scores.shape[0]):
            t, p = temperatures[i], top_ps[i]
            if t <= 0:
                tok = int(torch.argmax(logits[i]))
            else:
                probs = torch.softmax(logits[i] / t, dim=-1)
                if p < 1.0:
                    sorted_p, idx = torch.sort(probs, descending=True)
                    keep = torch.cumsum(sorted_p, 0) - sorted_p < p  # always keeps the top token
                    mask = torch.zeros_like(probs, dtype=torch.bool)
                    mask[idx[keep]] = True
                    probs = torch.where(mask, probs, torch.zeros_like(probs))
                    probs = probs / probs.sum()
                tok = int(torch.multinomial(probs, 1, generator=generators[i]))
            out[i, tok] = 0.0
        return out

    return process


class LocalChatBackend:
    """transformers chat backend; the model is loaded on first use."""

    name = "local"

    def __init__(self, model: str, device: str = "auto", dtype: str = "auto", batch_size: int = 8):
        self.model = model
        self.device = device
        self.dtype = dtype
        self.batch_size = max(1, int(batch_size))
        self._lm = None
        self._tok = None

    def __repr__(self) -> str:
        return f"LocalChatBackend(model={self.model!r})"

    def _load(self) -> None:
        if self._lm is None:
            from ..models import load_causal_lm

            log.info("loading local chat model %s", self.model)
            self._lm, self._tok = load_causal_lm(self.model, dtype=self.dtype, device=self.device)
            self._tok.padding_side = "left"
            if self._tok.pad_token is None:
                self._tok.pad_token = self._tok.eos_token
            if getattr(self._tok, "chat_template", None) is None:
                from ..errors import UnstereoError

                raise UnstereoError(f"model {self.model!r} has no chat template (use an instruct model)")

    def complete(self, requests: list[ChatRequest], on_retry=None) -> list[ChatResult]:
        """Generate answers for ``requests`` in one batch (the client chunks by ``batch_size``)."""
        import torch
        from transformers import GenerationConfig, LogitsProcessorList

        self._load()
        tok, lm = self._tok, self._lm
        texts = [
            tok.apply_chat_template(r.message_dicts(), tokenize=False, add_generation_prompt=True)
            for r in requests
        ]
        enc = tok(texts, return_tensors="pt", padding=True, add_special_tokens=False).to(lm.device)
        generators = [torch.Generator().manual_seed(int(r.seed) % (2**63)) for r in requests]
        processor = _row_sampler([r.temperature for r in requests], [r.top_p for r in requests], generators)
        eos = lm.generation_config.eos_token_id if lm.generation_config is not None else None
        eos = eos if eos is not None else tok.eos_token_id
        max_new = max(r.max_tokens for r in requests)
        gen_config = GenerationConfig(
            do_sample=False, max_new_tokens=max_new, pad_token_id=tok.pad_token_id, eos_token_id=eos
        )
        with torch.no_grad():
            out = lm.generate(
                **enc, generation_config=gen_config, logits_processor=LogitsProcessorList([processor])
            )
        eos_ids = set(eos if isinstance(eos, list) else [eos])
        prompt_len = enc["input_ids"].shape[1]
        results = []
        for i, req in enumerate(requests):
            new = out[i, prompt_len:].tolist()[: req.max_tokens]
            finish = "length"
            for j, t in enumerate(new):
                if t in eos_ids:
                    new, finish = new[: j + 1], "stop"
                    break
            text = tok.decode(new, skip_special_tokens=True)
            results.append(
                ChatResult(
                    text=text.strip(),
                    prompt_tokens=int(enc["attention_mask"][i].sum()),
                    completion_tokens=len(new),
                    finish_reason=finish,
                )
            )
        return results

    def close(self) -> None:
        self._lm = None
