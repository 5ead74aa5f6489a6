"""Local transformers backend: chat completions (instruct models) and plain text continuations (any causal LM).

Works with every model :func:`unstereo.models.load_causal_lm` can load (hub id, folder, GGUF file such as
Qwen2.5-Coder-0.5B-Instruct or SmolLM2-135M-Instruct; base models such as GPT-2 or Pythia for continuations). Several
prompts are generated in one left-padded batch. Each row samples with its own ``torch.Generator`` seeded from the
request's ``seed`` and draws exactly one uniform number per generated token, so a row's answer does not depend on
which other prompts share its batch (up to float rounding of the forward pass); T = 0 is greedy.
"""

from __future__ import annotations

from ..log import get_logger
from ..model_spec import ModelSpec, resolve_model
from .types import ChatRequest, ChatResult, ContinuationRequest

log = get_logger("llm.local")


def sample_rows(logits, temperatures, top_ps, uniforms):
    """One token per row of ``logits`` (B, V): greedy where the temperature is 0, else top-p inverse-CDF sampling.

    ``temperatures``, ``top_ps`` and ``uniforms`` are (B,) tensors; ``uniforms`` in [0, 1) are the rows' random
    draws. A row with top_p < 1 sorts its probabilities (descending), keeps the smallest prefix whose mass reaches
    top_p (the top token always), and returns the first token whose cumulative kept mass exceeds u * (kept mass); a
    row with top_p = 1 does the same over the vocabulary in id order (no sort needed). All rows of a kind are done
    in one batched operation; which rows share the batch does not change a row's token.
    """
    import torch

    logits = logits.float()
    sampled = temperatures > 0
    out = torch.zeros(logits.shape[0], dtype=torch.long, device=logits.device)
    greedy = torch.nonzero(~sampled).flatten()
    if greedy.numel():
        out[greedy] = torch.argmax(logits[greedy], dim=-1)
    if not greedy.numel() < logits.shape[0]:
        return out
    nucleus = sampled & (top_ps < 1.0)
    full = sampled & ~nucleus
    idx = torch.nonzero(full).flatten()
    if idx.numel():
        out[idx] = _inverse_cdf(_probabilities(logits, idx, temperatures), None, uniforms[idx])
    idx = torch.nonzero(nucleus).flatten()
    if idx.numel():
        probs = _probabilities(logits, idx, temperatures)
        # The nucleus is usually a few tokens: the largest TOP_K probabilities (sorted, as a full sort ranks them)
        # hold it whenever the last of them is already outside it; only the other rows sort the vocabulary.
        top, order = torch.topk(probs, min(TOP_K, probs.shape[-1]), dim=-1)
        covered = (torch.cumsum(top, dim=-1) - top)[:, -1] >= top_ps[idx]
        covered |= top.shape[-1] == probs.shape[-1]
        sub = torch.nonzero(covered).flatten()
        if sub.numel():
            out[idx[sub]] = _inverse_cdf(top[sub], order[sub], uniforms[idx[sub]], top_ps[idx[sub]])
        for r in torch.nonzero(~covered).flatten().tolist():
            p_sorted, p_order = _nucleus_candidates(probs[r], float(top_ps[idx[r]]))
            out[idx[r]] = _inverse_cdf(
                p_sorted[None], p_order[None], uniforms[idx[r] : idx[r] + 1], top_ps[idx[r : r + 1]]
            )[0]
    return out


def _probabilities(logits, idx, temperatures):
    """softmax(logits[idx] / temperature) (no copy when ``idx`` is every row, no division by a temperature of 1)."""
    import torch

    rows = logits if idx.numel() == logits.shape[0] else logits[idx]
    temps = temperatures[idx]
    if not bool((temps == 1.0).all()):
        rows = rows / temps[:, None]
    return torch.softmax(rows, dim=-1)


def _nucleus_candidates(probs, top_p: float):
    """The first tokens of ``probs`` (one row) sorted by descending probability, enough of them to hold the
    nucleus of ``top_p``, with their ids: the same head as a sort of the whole row, at a fraction of its cost.

    The candidates are the tokens whose probability's binary exponent is at least e, the largest e whose tokens
    hold ``top_p`` of the mass (one pass: ``frexp`` and a per-exponent sum); they are exactly the first tokens of
    the sorted row (ties included), so their running sum is the row's. If that sum falls short of ``top_p``
    (float rounding of the per-exponent sums), the whole row is sorted."""
    import torch

    _, exponent = torch.frexp(probs)
    rank = (
        torch.where(probs > 0, -exponent, 255).clamp_(min=0, max=255).long()
    )  # larger probability, smaller rank
    mass = torch.zeros(256, dtype=probs.dtype).index_add_(0, rank, probs)
    enough = torch.nonzero(torch.cumsum(mass, 0) >= top_p).flatten()
    if enough.numel():
        ids = torch.nonzero(rank <= int(enough[0])).flatten()
        values, order = torch.sort(probs[ids], descending=True)
        if float(torch.cumsum(values, 0)[-1]) >= top_p:
            return values, ids[order]
    return torch.sort(probs, descending=True)


# How many of the largest probabilities a nucleus row looks at before it sorts its whole vocabulary.
TOP_K = 256


def _inverse_cdf(probs, order, uniforms, top_ps=None):
    """The token of each row whose cumulative (kept) mass first exceeds u * (kept mass): ``probs`` in id order
    (``order`` None) or sorted descending with their ids in ``order`` and cut to the nucleus of ``top_ps``."""
    import torch

    if order is not None:
        before = torch.cumsum(probs, dim=-1) - probs  # mass of the tokens ranked above each token
        probs = probs.masked_fill(before >= top_ps[:, None], 0.0)  # outside the nucleus
    cdf = torch.cumsum(probs, dim=-1)
    target = uniforms[:, None].to(cdf.dtype) * cdf[:, -1:]
    pick = torch.searchsorted(cdf, target, right=True).clamp_(max=probs.shape[-1] - 1)
    if order is None:
        return pick.squeeze(-1)
    # float edge: never land on a zero-probability token past the end of the kept mass
    pick = torch.minimum(pick, (probs > 0).sum(-1, keepdim=True) - 1)
    return order.gather(-1, pick).squeeze(-1)


class _RowSampler:
    """A logits processor that samples each row itself (:func:`sample_rows`) and returns a one-hot score row.

    transformers then runs greedy decoding (argmax of the one-hot row = the sampled token), which keeps its KV
    cache, padding and stopping logic while the randomness comes from per-row generators.
    """

    def __init__(self, temperatures: list[float], top_ps: list[float], seeds: list[int]):
        import torch

        self.temperatures = torch.tensor(temperatures, dtype=torch.float32)
        self.top_ps = torch.tensor(top_ps, dtype=torch.float32)
        self.generators = [torch.Generator().manual_seed(int(s) % (2**63)) for s in seeds]
        self.any_sampled = any(t > 0 for t in temperatures)

    def __call__(self, input_ids, scores):
        import torch

        if self.any_sampled:  # one uniform per row and step, from the row's own generator
            u = torch.cat([torch.rand(1, generator=g, dtype=torch.float64) for g in self.generators])
        else:
            u = torch.zeros(len(self.generators), dtype=torch.float64)
        if self.temperatures.device != scores.device:  # moved once, on the first step
            self.temperatures, self.top_ps = (
                self.temperatures.to(scores.device),
                self.top_ps.to(scores.device),
            )
        tok = sample_rows(scores, self.temperatures, self.top_ps, u.to(scores.device))
        out = torch.full_like(scores, float("-inf"))
        out.scatter_(1, tok[:, None], 0.0)
        return out


class _RowStops:
    """Per-row stopping: end of sequence, the row's own token limit, or one of the row's stop strings.

    Records for every row the number of generated tokens it ends with and why (``stop`` or ``length``).
    """

    def __init__(self, tok, prompt_len: int, max_tokens: list[int], stops: list[tuple[str, ...]], eos_ids):
        import torch

        self.tok = tok
        self.prompt_len = prompt_len
        self.max_tokens = torch.tensor(max_tokens)
        self.stops = stops
        self.eos = torch.tensor(sorted(eos_ids), dtype=torch.long)
        self.end = [None] * len(max_tokens)
        self.reason = ["length"] * len(max_tokens)

    def __call__(self, input_ids, scores, **kwargs):
        import torch

        n = input_ids.shape[1] - self.prompt_len
        last = input_ids[:, -1].cpu()
        hit_eos = torch.isin(last, self.eos) if self.eos.numel() else torch.zeros_like(last, dtype=torch.bool)
        done = torch.zeros(len(self.end), dtype=torch.bool)
        for i in range(len(self.end)):
            if self.end[i] is not None:
                done[i] = True
                continue
            reason = None
            if hit_eos[i]:
                reason = "stop"
            elif self.stops[i] and any(
                s in self.tok.decode(input_ids[i, self.prompt_len :], skip_special_tokens=True)
                for s in self.stops[i]
            ):
                reason = "stop"
            elif n >= int(self.max_tokens[i]):
                reason = "length"
            if reason:
                self.end[i], self.reason[i], done[i] = n, reason, True
        return done.to(input_ids.device)


def cut_at_stop(text: str, stops: tuple[str, ...]) -> tuple[str, bool]:
    """``text`` up to the first occurrence of any stop string, and whether one occurred."""
    cut = min((i for i in (text.find(s) for s in stops if s) if i >= 0), default=-1)
    return (text[:cut], True) if cut >= 0 else (text, False)


class LocalBackend:
    """transformers backend for chat (needs a chat template) and continuation (any causal LM); loaded on first use."""

    name = "local"

    def __init__(
        self, model: ModelSpec | str, device: str = "auto", dtype: str = "auto", batch_size: int = 8
    ):
        self.spec = resolve_model(model)
        self.model = self.spec.label
        self.device = device
        self.dtype = dtype
        self.batch_size = max(1, int(batch_size))
        self._lm = None
        self._tok = None
        self._engine = None  # the SamplingEngine once checked; False: this model takes generate

    def __repr__(self) -> str:
        return f"LocalBackend(model={self.model!r})"

    @classmethod
    def from_loaded(cls, lm, tok, label: str, batch_size: int = 8) -> LocalBackend:
        """A backend around an already loaded (model, tokenizer) (tests, benchmarks)."""
        be = cls(ModelSpec(path=label), batch_size=batch_size)
        be._lm, be._tok = lm, tok
        be._prepare()
        return be

    def _prepare(self) -> None:
        self._tok.padding_side = "left"
        if self._tok.pad_token is None:
            self._tok.pad_token = self._tok.eos_token

    def _load(self) -> None:
        if self._lm is None:
            from ..models import load_causal_lm

            log.info("loading local model %s", self.model)
            self._lm, self._tok = load_causal_lm(self.spec, dtype=self.dtype, device=self.device)
            self._prepare()

    def complete(self, requests: list[ChatRequest], on_retry=None) -> list[ChatResult]:
        """Chat answers for ``requests`` in one batch (the client chunks by ``batch_size``)."""
        self._load()
        if getattr(self._tok, "chat_template", None) is None:
            from ..errors import UnstereoError

            raise UnstereoError(
                f"model {self.model!r} has no chat template (use an instruct model, or text continuation)"
            )
        texts = [
            self._tok.apply_chat_template(r.message_dicts(), tokenize=False, add_generation_prompt=True)
            for r in requests
        ]
        ids = [self._tok(t, add_special_tokens=False)["input_ids"] for t in texts]
        out = self._generate(ids, requests, [()] * len(requests))
        return [ChatResult(text.strip(), p, c, f) for text, p, c, f in out]

    def continue_batch(self, requests: list[ContinuationRequest], on_retry=None) -> list[ChatResult]:
        """Plain continuations of the prompts in one batch; the text is cut before the first stop string."""
        self._load()
        tok = self._tok
        ids = []
        for r in requests:
            row = tok(r.prompt, add_special_tokens=True)["input_ids"]
            if not row:  # an empty prompt: start from BOS (else EOS), as a base model does at document start
                start = tok.bos_token_id if tok.bos_token_id is not None else tok.eos_token_id
                row = [start]
            ids.append(row)
        out = self._generate(ids, requests, [r.stop for r in requests])
        results = []
        for (text, p, c, finish), r in zip(out, requests, strict=True):
            text, stopped = cut_at_stop(text, r.stop)
            results.append(ChatResult(text, p, c, "stop" if stopped else finish))
        return results

    def _engine_or_none(self):
        """The sampling engine of the loaded model, or None (logged) when its probe fails: then ``generate``."""
        if self._engine is None:
            from .engine import SamplingEngine

            engine = SamplingEngine(self._lm, self._tok, slots=self.batch_size)
            problem = engine.check()
            if problem is None:
                log.info("sampling engine for %s (%d slots%s)", self.model, engine.slots,
                         ", products on oneDNN" if engine.onednn else "")  # fmt: skip
                self._engine = engine
            else:
                log.warning("the sampling engine does not work with %s (%s): using transformers' generate",
                            self.model, problem)  # fmt: skip
                self._engine = False
        return self._engine or None

    def _generate(self, ids: list[list[int]], requests, stops) -> list[tuple[str, int, int, str]]:
        """(text, prompt tokens, completion tokens, finish reason) per row: by the engine, else ``generate``."""
        engine = self._engine_or_none()
        if engine is None:
            return self._generate_transformers(ids, requests, stops)
        from .engine import EngineRequest

        outs = engine.generate(
            [
                EngineRequest(row, r.max_tokens, r.temperature, r.top_p, r.seed, tuple(s))
                for row, r, s in zip(ids, requests, stops, strict=True)
            ]
        )
        return [
            (self._tok.decode(o.tokens, skip_special_tokens=True), len(row), len(o.tokens), o.finish)
            for row, o in zip(ids, outs, strict=True)
        ]

    def _generate_transformers(
        self, ids: list[list[int]], requests, stops
    ) -> list[tuple[str, int, int, str]]:
        """The fallback: transformers' ``generate`` on a left-padded batch, sampling by :class:`_RowSampler`."""
        import torch
        from transformers import GenerationConfig, LogitsProcessorList, StoppingCriteriaList

        tok, lm = self._tok, self._lm
        width = max(len(r) for r in ids)
        pad = tok.pad_token_id
        input_ids = torch.tensor([[pad] * (width - len(r)) + r for r in ids], dtype=torch.long)
        mask = torch.tensor([[0] * (width - len(r)) + [1] * len(r) for r in ids], dtype=torch.long)
        eos = lm.generation_config.eos_token_id if lm.generation_config is not None else None
        eos = eos if eos is not None else tok.eos_token_id
        eos_ids = set(eos if isinstance(eos, list) else [eos]) - {None}
        sampler = _RowSampler(
            [r.temperature for r in requests], [r.top_p for r in requests], [r.seed for r in requests]
        )
        stopper = _RowStops(tok, width, [r.max_tokens for r in requests], stops, eos_ids)
        gen_config = GenerationConfig(
            do_sample=False,
            max_new_tokens=max(r.max_tokens for r in requests),
            pad_token_id=pad,
            eos_token_id=sorted(eos_ids) or None,
        )
        with torch.no_grad():
            out = lm.generate(
                input_ids=input_ids.to(lm.device),
                attention_mask=mask.to(lm.device),
                generation_config=gen_config,
                logits_processor=LogitsProcessorList([sampler]),
                stopping_criteria=StoppingCriteriaList([stopper]),
            )
        results = []
        for i, req in enumerate(requests):
            new = out[i, width:].tolist()
            end = stopper.end[i] if stopper.end[i] is not None else min(len(new), req.max_tokens)
            new = new[:end]
            results.append(
                (tok.decode(new, skip_special_tokens=True), len(ids[i]), len(new), stopper.reason[i])
            )
        return results

    def close(self) -> None:
        self._lm = None
        self._engine = None


#: The name this backend had when it served chat only.
LocalChatBackend = LocalBackend
