"""The local sampling engine: one decode loop for every chat and continuation request of
:class:`~unstereo.llm.local.LocalBackend`.

What transformers' ``generate`` does per step, less its overhead, plus what it cannot do:

- each distinct prompt is run once (its own forward pass, batch 1), and its KV cache and last logits are copied to
  every sample of it that gets a slot: n samples of a prompt cost one prefill;
- a preallocated KV cache of ``slots`` rows (:class:`SlotCache`): each row writes at its own position, so rows of
  different lengths need no padding, and the attention sees a row's own positions only (a 4D additive mask; Gemma's
  sliding-window layers get their own);
- continuous batching: a row that ends (end of sequence, a stop string, its token limit) frees its slot, and the
  next waiting request takes it at once, so the batch stays full while requests wait; the live rows are kept in the
  first slots (a finished row's slot is filled by moving the last row), so a step runs on a view of the cache;
- the decode step runs the model's body (its own attention and rotary code; a Llama or Qwen2 body the same
  operations without transformers' module calls, :mod:`unstereo.engine.decode_step`) and then the LM head on the
  last position only; with fp32 weights on the CPU the linear layers and the head run on oneDNN like the scorer's
  (:mod:`unstereo.engine.kernels.onednn`), by weights packed once into oneDNN's layout where that gives the same
  products (:data:`PACK_WEIGHTS`);
- the tokens of all rows are drawn at once by :class:`unstereo.engine.sampler.RowSampler` with one uniform per row
  and generated token, ``u(seed, step)`` of the counter-based :func:`unstereo.engine.sampler.stream` (a row's
  numbers are worked out when it takes its slot), so a row's text depends on its prompt, settings and seed only,
  not on the batch, its neighbours or the device (up to float rounding of the products), and equals the text of
  the backend's ``generate`` path for the same seed;
- stop strings are looked for in the newly decoded text only (incremental detokenisation with a few tokens of
  context, as servers do), not in the whole text every step.

:meth:`SamplingEngine.check` runs a probe (two prompts, continuous batching, greedy) and compares the engine's
log-probabilities with the model's own full forward pass; the backend falls back to ``generate`` when it fails.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Any

from unstereo.log import get_logger

log = get_logger("engine.engine")

# Prompts run together in one prefill pass: rows x longest prompt <= PREFILL_CELLS positions.
PREFILL_CELLS = 2048
# The probe's log-probabilities may differ from the full forward pass's by float rounding only (fp32).
PROBE_TOLERANCE = 1e-3
#: ``slots="auto"``: every row of a call at once, up to AUTO_SLOTS rows and AUTO_MEMORY bytes of KV cache and
#: logits (:meth:`SamplingEngine.slots_for`). On the CPU a decode step streams every weight from memory whatever
#: the rows, so more rows are nearly free up to where the products turn compute-bound (docs/performance.md).
AUTO_SLOTS = 128
AUTO_MEMORY = 1 << 30
# Float32 copies of a row's logits alive while it samples (logits, softmax, top-k, cumsum).
_LOGIT_COPIES = 4
#: fp32 sampling multiplies by the body's weights packed once in oneDNN's layout (:func:`.kernels.onednn.packed_weights`:
#: the same products, faster at decode shapes), a second copy of them held while the engine lives, when it takes
#: at most PACK_MEMORY_SHARE of the memory available at the first call (the system's, or less under a Slurm job's or a
#: container's memory limit: :func:`.memory.available_bytes`). False: the plain weights (benchmarks).
PACK_WEIGHTS = True
PACK_MEMORY_SHARE = 0.5


@dataclass
class EngineRequest:
    """One row to generate: prompt token ids and its sampling settings (``stops``: strings that end the row)."""

    ids: list[int]
    max_tokens: int
    temperature: float = 1.0
    top_p: float = 1.0
    seed: int = 0
    stops: tuple[str, ...] = ()


@dataclass
class EngineOutput:
    """The generated token ids (the end-of-sequence token included when it ended the row), why the row ended
    (``stop``: end of sequence or a stop string; ``length``) and, when asked for, each token's log-probability
    under the model (temperature 1, no nucleus)."""

    tokens: list[int]
    finish: str
    logprobs: list[float] | None = None


@dataclass
class EngineStats:
    """Counters of the last :meth:`SamplingEngine.generate` call (tests and benchmarks read them)."""

    prefills: int = 0  # forward passes over a prompt (one per distinct prompt)
    steps: int = 0  # decode forward passes (one token per live row)
    # per round of sampling (one token for every row in a slot): (rows sampled, requests still waiting)
    occupancy: list[tuple[int, int]] = field(default_factory=list)


class SlotCache:
    """A preallocated KV cache: per layer ``[slots, kv heads, length, head dim]`` keys and values.

    Duck-types the part of transformers' ``Cache`` the attention layers call (``update``): a step of one token per
    row writes row ``i``'s key at ``positions[i]``; a pass over prompts writes each row's tokens from position 0.
    Returns the first ``rows`` rows up to ``length`` (views, no copy)."""

    is_compileable = False

    def __init__(self, layers: int, slots: int, length: int):
        self.n_layers, self.slots, self.length = layers, slots, length
        self.keys: list[Any] = [None] * layers
        self.values: list[Any] = [None] * layers
        self.rows = 0
        self.span = 0
        self.positions = None  # LongTensor [rows] for a one-token step; None for a prompt's pass

    def _alloc(self, layer: int, like: Any) -> None:
        import torch

        shape = (self.slots, like.shape[1], self.length, like.shape[3])
        self.keys[layer] = torch.zeros(shape, dtype=like.dtype, device=like.device)
        self.values[layer] = torch.zeros(shape, dtype=like.dtype, device=like.device)

    def update(self, key: Any, value: Any, layer_idx: int, cache_kwargs: Any = None):
        if self.keys[layer_idx] is None:
            self._alloc(layer_idx, key)
        k, v = self.keys[layer_idx], self.values[layer_idx]
        if self.positions is None:  # prompts: every row from position 0
            rows, q = key.shape[0], key.shape[2]
            k[:rows, :, :q] = key
            v[:rows, :, :q] = value
        else:
            import torch

            rows = torch.arange(self.rows, device=key.device)
            k[rows, :, self.positions] = key[:, :, 0]
            v[rows, :, self.positions] = value[:, :, 0]
        return k[: self.rows, :, : self.span], v[: self.rows, :, : self.span]

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return self.span

    def move_rows(self, src: list[int], dst: list[int], length: int) -> None:
        """Rows ``src`` (their first ``length`` positions) into rows ``dst`` of this cache, one copy a tensor."""
        import torch

        src_rows, dst_rows = torch.tensor(src), torch.tensor(dst)
        for tensors in (self.keys, self.values):
            for t in tensors:
                t[dst_rows, :, :length] = t[src_rows, :, :length]

    def copy_row(self, source: SlotCache, src: int, dst: int, length: int) -> None:
        """Row ``src`` of ``source`` (its first ``length`` positions) into row ``dst`` of this cache."""
        for layer in range(self.n_layers):
            if self.keys[layer] is None:
                self._alloc(layer, source.keys[layer])
            self.keys[layer][dst, :, :length] = source.keys[layer][src, :, :length]
            self.values[layer][dst, :, :length] = source.values[layer][src, :, :length]


class _Detokenizer:
    """The text of a growing list of token ids, a piece at a time: each new token is decoded with the few tokens
    before it as context (so a tokenizer that drops a first token's leading space, or a character split over
    byte tokens, decodes as in the whole text), and a piece that ends in an unfinished character waits."""

    def __init__(self, tok: Any):
        self.tok = tok
        self.ids: list[int] = []
        self.prefix = 0  # start of the context
        self.read = 0  # tokens already in ``text``
        self.text = ""

    def add(self, token: int) -> str:
        """Append ``token``; return the text it completes (maybe empty)."""
        self.ids.append(token)
        before = self.tok.decode(self.ids[self.prefix : self.read], skip_special_tokens=True)
        now = self.tok.decode(self.ids[self.prefix :], skip_special_tokens=True)
        if len(now) <= len(before) or now.endswith("\ufffd"):
            return ""
        piece = now[len(before) :]
        self.text += piece
        self.prefix, self.read = self.read, len(self.ids)
        return piece


class _Row:
    """A request being generated in a slot."""

    __slots__ = ("index", "req", "prompt", "uniforms", "tokens", "logprobs", "position", "detok", "finish")

    def __init__(self, index: int, req: EngineRequest, prompt: _Prompt, tok: Any):
        self.index, self.req, self.prompt = index, req, prompt
        self.uniforms: list[float] | None = None  # u(seed, step) for step 0 .. max_tokens - 1 (sampled rows)
        self.tokens: list[int] = []
        self.logprobs: list[float] = []
        self.position = len(req.ids)  # where the next fed token goes
        self.detok = _Detokenizer(tok) if req.stops else None
        self.finish: str | None = None


@dataclass
class _Prompt:
    """A prefilled prompt: the cache holding it (row ``row``), its last logits, how many of its requests have
    not started."""

    cache: SlotCache
    row: int
    logits: Any
    length: int
    waiting: int


class SamplingEngine:
    """Generates rows for a loaded (model, tokenizer) with ``slots`` rows at a time (see the module doc);
    ``slots="auto"``: as many as a call has rows, bounded (:meth:`slots_for`)."""

    def __init__(
        self,
        model: Any,
        tokenizer: Any,
        slots: int | str = 8,
        onednn: bool = True,
        products: str = "float32",
        pack: bool | None = None,
    ):
        import torch

        from unstereo.engine.kernels import SAMPLING_PRODUCTS, bf16, int8
        from unstereo.engine.kernels.lm_head import split_causal_lm
        from unstereo.engine.kernels.onednn import available

        self.model, self.tok = model, tokenizer
        self.auto = slots == "auto"
        self.slots = AUTO_SLOTS if self.auto else max(1, int(slots))
        parts = split_causal_lm(model)
        self.body, self.head = parts if parts is not None else (None, None)
        self.onednn = bool(onednn and parts is not None and available(self.head.weight))
        if products not in SAMPLING_PRODUCTS:
            raise ValueError(f"products must be one of {SAMPLING_PRODUCTS}, got {products!r}")
        #: int8 products while sampling (:mod:`unstereo.engine.kernels.int8`); the probe keeps fp32 (:meth:`check`)
        self.int8 = products == "int8" and parts is not None and int8.available(self.head.weight)
        #: the body's fp32 linears in bf16 while sampling (:mod:`unstereo.engine.kernels.bf16`; a model loaded in bf16
        #: already holds them so; without native bf16 products they are widened to fp32 per product); the head
        #: stays fp32
        self.bf16 = products == "bfloat16" and parts is not None
        #: the dtype the body computes in (KV cache, masks): the head's, but fp32 for a model loaded with bf16 or
        #: int8 products (its head may be held in bf16: unstereo.models.gguf_direct)
        held = getattr(model, "unstereo_form", None) in ("bfloat16", "int8")
        self.dtype = torch.float32 if held or parts is None else self.head.weight.dtype
        self._exact = False  # the probe's products: fp32 inputs times the held weights (check)
        # a bf16 head of such a model: its products (the same tensors, no copy)
        bf16_head = held and parts is not None and self.head.weight.dtype == torch.bfloat16
        self._bf16_head = bf16.Bf16Linear(self.head.weight, self.head.bias) if bf16_head else None
        # built on the first call that samples in int8 or bf16
        self._products_body: dict[Any, Any] | None = None
        self._int8_head: Any = None
        self._packed: dict[Any, Any] | None = None  # built on the first fp32 call (_packed_body)
        #: fp32 products by packed weights: True/False as chosen (:mod:`unstereo.engine.forms`), None: with room
        #: for the copy (:data:`PACK_MEMORY_SHARE`)
        self.pack = pack
        self._decode_head: Any = None  # the head by vocabulary blocks (.kernels.decode_head), with it
        config = getattr(model, "config", None)
        config = config.get_text_config() if hasattr(config, "get_text_config") else config
        self.config = config
        self.n_layers = int(getattr(config, "num_hidden_layers", 0) or getattr(config, "n_layer", 0) or 0)
        types = set(getattr(config, "layer_types", None) or ())
        window = getattr(config, "sliding_window", None)
        self.window = int(window) if "sliding_attention" in types and window else None
        self.eos = eos_ids(model, tokenizer)
        self.stats = EngineStats()
        #: decode steps without transformers' module calls, for a Llama-family fp32 body (.decode_step); None: the
        #: body's own forward
        self.decode_step = None
        if parts is not None and self.dtype == torch.float32 and self.window is None:
            from unstereo.engine.decode_step import LlamaDecodeStep

            self.decode_step = LlamaDecodeStep.build(self.body, config)

    def row_bytes(self, length: int) -> int:
        """Memory one slot holds for rows of up to ``length`` positions: its KV cache (every layer's keys and
        values) and the float32 copies of its logits that sampling makes."""
        config, dtype = self.config, self.dtype
        heads = int(getattr(config, "num_attention_heads", 0) or getattr(config, "n_head", 0) or 1)
        kv_heads = int(getattr(config, "num_key_value_heads", 0) or heads)
        width = int(getattr(config, "hidden_size", 0) or getattr(config, "n_embd", 0) or 0)
        head_dim = int(getattr(config, "head_dim", 0) or width // heads)
        kv = 2 * self.n_layers * kv_heads * head_dim * length * dtype.itemsize
        return kv + _LOGIT_COPIES * self.head.weight.shape[0] * 4

    def slots_for(self, rows: int, length: int) -> int:
        """Slots for a call of ``rows`` rows of up to ``length`` positions: ``min(slots, rows)``; with
        ``slots="auto"`` also at most what fits in :data:`AUTO_MEMORY`."""
        slots = min(self.slots, rows)
        if self.auto:
            slots = min(slots, AUTO_MEMORY // self.row_bytes(length))
        return max(1, slots)

    # ------------------------------------------------------------------------------------------- the checks

    def check(self) -> str | None:
        """None when the engine gives the model's own log-probabilities on a probe, else what went wrong."""
        import torch

        from unstereo.engine.kernels.quantised import exact_products

        if self.body is None:
            return "no body and linear LM head found (get_output_embeddings, base_model)"
        if not self.n_layers:
            return "the config names no number of layers"
        vocab = self.head.weight.shape[0]
        g = torch.Generator().manual_seed(0)
        prompts = [torch.randint(0, vocab, (n,), generator=g).tolist() for n in (3, 6, 3)]
        prompts[2] = prompts[0]  # a shared prompt
        reqs = [EngineRequest(p, max_tokens=4, temperature=0.0) for p in prompts]
        slots, auto, int8, bf16 = self.slots, self.auto, self.int8, self.bf16
        # three requests in two slots: continuous batching and a moved row; fp32 products, whose log-probabilities
        # must equal the full pass's (int8 products change them by design: the probe checks the machinery). A
        # model loaded as int8 (unstereo.models.gguf_direct) multiplies by its int8 weights without quantising
        # the input here, which keeps a row's numbers independent of its batch, as fp32 does.
        self.slots, self.auto, self.int8, self.bf16, self._exact = 2, False, False, False, True
        try:
            with exact_products(self.model):
                outs = self.generate(reqs, logprobs=True, ignore_eos=True)
        except Exception as exc:  # an architecture that rejects the cache, the 4D mask or the position ids
            return f"{type(exc).__name__}: {exc}"
        finally:
            self.slots, self.auto, self.int8, self.bf16, self._exact = slots, auto, int8, bf16, False
        diff = 0.0
        # one full pass per distinct sequence (the shared prompt's two greedy rows need one)
        wanted: dict[tuple[int, ...], Any] = {}
        with torch.inference_mode(), exact_products(self.model):
            for req, out in zip(reqs, outs, strict=True):
                key = (*req.ids, *out.tokens)
                if key not in wanted:
                    seq = torch.tensor([key], device=self.head.weight.device)
                    logits = self.model(input_ids=seq, use_cache=False).logits[0].float().cpu()
                    want = torch.log_softmax(logits[len(req.ids) - 1 : -1], -1)
                    wanted[key] = want.gather(-1, torch.tensor(out.tokens)[:, None])[:, 0]
                diff = max(diff, float((wanted[key] - torch.tensor(out.logprobs)).abs().max()))
        if not diff <= PROBE_TOLERANCE:  # also catches NaN
            return f"probe log-probabilities differ from the full forward pass by {diff:.3g}"
        return None

    def probe_key(self) -> str:
        """A digest of what :meth:`check`'s verdict depends on (:func:`unstereo.engine.kernels.probe_memo.digest`: the
        model, torch and transformers, the engine's source) and whether the products run on oneDNN: a passed
        probe is remembered under it per machine (:class:`~unstereo.llm.local.LocalBackend`) and skipped next
        time."""
        from unstereo.engine.kernels.probe_memo import digest

        kernels = ("lm_head", "onednn", "quantised", "int8", "bf16")
        modules = ("unstereo.engine.engine", "unstereo.engine.decode_step", "unstereo.engine.sampler")
        modules += ("unstereo.models.gguf_direct",)
        modules += tuple(f"unstereo.engine.kernels.{k}" for k in kernels)
        return digest(self.model, modules, extra=(f"onednn={self.onednn}",))

    # ----------------------------------------------------------------------------------------- generation

    def generate(
        self, requests: list[EngineRequest], logprobs: bool = False, ignore_eos: bool = False
    ) -> list[EngineOutput]:
        """One :class:`EngineOutput` per request, in order. ``ignore_eos``: rows end at their limit or a stop
        string only (probes and benchmarks)."""
        from unstereo.engine.memory import give_back_free_memory

        try:
            return self._generate(requests, logprobs, ignore_eos)
        finally:  # the call's KV caches are gone: not resident under the job's next model
            give_back_free_memory()

    def _generate(
        self, requests: list[EngineRequest], logprobs: bool, ignore_eos: bool
    ) -> list[EngineOutput]:
        import torch

        from unstereo.engine.kernels.onednn import linears_through_onednn

        self.stats = EngineStats()
        if not requests:
            return []
        waiting = {}
        for req in requests:
            key = tuple(req.ids)
            waiting[key] = waiting.get(key, 0) + 1
        prompts: dict[tuple[int, ...], _Prompt] = {}
        length = max(len(r.ids) + r.max_tokens for r in requests)
        cache = SlotCache(self.n_layers, self.slots_for(len(requests), length), length)
        vocab = self.head.weight.shape[0]
        logits = torch.empty((cache.slots, vocab), dtype=torch.float32)
        work = torch.empty_like(logits)  # the sampler's probabilities, then the log-probabilities
        eos = torch.tensor(sorted(self.eos) if not ignore_eos else [], dtype=torch.long)
        queue = list(range(len(requests)))[::-1]  # popped from the end: input order
        rows: list[_Row] = []
        done: list[_Row | None] = [None] * len(requests)
        onednn = (
            linears_through_onednn(self.body, packed=self._packed_body())
            if self.onednn
            else contextlib.nullcontext()
        )
        with torch.inference_mode(), onednn, self._sampling_products(), _decode_attention_for(self.model):

            def admit() -> None:
                coming = [tuple(requests[i].ids) for i in queue[::-1][: cache.slots - len(rows)]]
                new = [key for key in dict.fromkeys(coming) if key not in prompts]
                for chunk in _chunks(new, PREFILL_CELLS):
                    for key, prompt in zip(chunk, self._prefill(chunk), strict=True):
                        prompt.waiting = waiting[key]
                        prompts[key] = prompt
                while queue and len(rows) < cache.slots:
                    i = queue.pop()
                    req = requests[i]
                    key = tuple(req.ids)
                    prompt = prompts[key]
                    cache.copy_row(prompt.cache, prompt.row, len(rows), prompt.length)
                    logits[len(rows)] = prompt.logits
                    prompt.waiting -= 1
                    if not prompt.waiting:
                        del prompts[key]  # every sample of it has its copy
                    rows.append(_Row(i, req, prompt, self.tok))
                _draw_uniforms([row for row in rows if row.uniforms is None and row.req.temperature > 0])

            admit()
            while rows:
                self.stats.occupancy.append((len(rows), len(queue)))
                tokens = self._sample(logits[: len(rows)], rows, work[: len(rows)])
                lps = None
                if logprobs:  # log_softmax's own kernel, into the buffer
                    lp = torch.ops.aten._log_softmax.out(
                        logits[: len(rows)], -1, False, out=work[: len(rows)]
                    )
                    lps = lp.gather(-1, tokens[:, None])[:, 0].tolist()
                hit_eos = torch.isin(tokens, eos).tolist() if eos.numel() else [False] * len(rows)
                ended = []
                for j, (row, token) in enumerate(zip(rows, tokens.tolist(), strict=True)):
                    row.tokens.append(token)
                    if lps is not None:
                        row.logprobs.append(lps[j])
                    if self._ends(row, token, hit_eos[j]):
                        done[row.index] = row
                        ended.append(j)
                if ended:
                    _fill_gaps(cache, rows, ended)
                if rows:
                    hidden = self._step(cache, rows, [row.tokens[-1] for row in rows])
                    self._logits(hidden, out=logits[: len(rows)])
                    self.stats.steps += 1
                admit()
        return [EngineOutput(r.tokens, r.finish, r.logprobs if logprobs else None) for r in done]

    def _packed_body(self) -> dict[Any, Any] | None:
        """The body's packed weights for fp32 products (:data:`PACK_WEIGHTS`), None without them; on the first call
        also the head by vocabulary blocks (:meth:`_logits`), whose blocks are packed too when the body's are. Packed
        only with room for the copies; never with int8 or bf16 products."""
        from unstereo.engine.kernels.decode_head import DecodeHead
        from unstereo.engine.kernels.onednn import packed_weights, plain_linears
        from unstereo.engine.memory import available_bytes

        if self.int8 or self.bf16:
            return None
        if self._packed is None:
            weights = [m.weight for m in plain_linears(self.body)] + [self.head.weight]
            size = sum(w.numel() * w.element_size() for w in weights)
            room = available_bytes() if self.pack is None else None
            fits = room is None or size <= PACK_MEMORY_SHARE * room
            pack = PACK_WEIGHTS and (fits if self.pack is None else self.pack)
            if PACK_WEIGHTS and not fits:
                log.info(
                    "weights not packed: %.1f GB against %.1f GB available", size / 1e9, (room or 0) / 1e9
                )
            self._packed = packed_weights(self.body) if pack else {}
            if self.decode_step is not None:  # query-key-value and gate-up as one packed product each
                self.decode_step.fuse(self._packed)
            self._decode_head = DecodeHead.build(self.head, packed=pack)
        return (self._packed or None) if PACK_WEIGHTS else None

    @contextlib.contextmanager
    def _sampling_products(self):
        """While sampling with ``products="int8"``: the body's linears and the head (by vocabulary blocks:
        :mod:`.kernels.decode_head`) through their int8 forms; with
        ``"bfloat16"``: the body's fp32 linears through bf16 forms (built once, on the first call)."""
        if not (self.int8 or self.bf16):
            yield
            return
        from unstereo.engine.kernels.bf16 import bf16_layers
        from unstereo.engine.kernels.decode_head import DecodeHead
        from unstereo.engine.kernels.int8 import int8_layers, linears_through

        if self._products_body is None:
            self._products_body = int8_layers(self.body) if self.int8 else bf16_layers(self.body)
            if self.int8:
                self._int8_head = DecodeHead.build(self.head, int8=True)
        with linears_through(self._products_body):
            yield

    def _ends(self, row: _Row, token: int, eos: bool) -> bool:
        """Whether ``row`` ends with ``token`` (just appended); sets its finish reason."""
        stopped = eos
        if not stopped and row.detok is not None:
            piece = row.detok.add(token)
            if piece:
                span = len(piece) + max(len(s) for s in row.req.stops) - 1
                tail = row.detok.text[-span:]
                stopped = any(s and s in tail for s in row.req.stops)
        if stopped:
            row.finish = "stop"
        elif len(row.tokens) >= row.req.max_tokens:
            row.finish = "length"
        return row.finish is not None

    def _sample(self, logits: Any, rows: list[_Row], work: Any = None):
        """One token per row (:class:`.sampler.RowSampler`), with the uniform of the row's seed and its step;
        ``work``: a buffer of ``logits``' shape for the probabilities."""
        import torch

        from unstereo.engine.sampler import RowSampler

        temps = [r.req.temperature for r in rows]
        top_ps = [r.req.top_p for r in rows]
        u = torch.tensor(
            [r.uniforms[len(r.tokens)] if r.uniforms else 0.0 for r in rows], dtype=torch.float32
        )
        return RowSampler(temps, top_ps, logits.device)(logits, u, work=work)

    # ------------------------------------------------------------------------------------ forward passes

    def _prefill(self, prompts: list[tuple[int, ...]]) -> list[_Prompt]:
        """Run prompts (right-padded, each row from position 0, a row sees its own tokens only) into a cache of
        their own; each prompt's last position's logits."""
        import torch

        lengths = torch.tensor([len(p) for p in prompts])
        width = int(lengths.max())
        ids = torch.zeros((len(prompts), width), dtype=torch.long)
        for row, p in enumerate(prompts):
            ids[row, : len(p)] = torch.tensor(p)
        cache = SlotCache(self.n_layers, len(prompts), width)
        cache.rows, cache.span = len(prompts), width
        positions = torch.arange(width)
        # [row, query, key]: causal, and never a padding key
        visible = (positions[None, None, :] <= positions[None, :, None]) & (positions < lengths[:, None])[
            :, None
        ]
        masks = self._masks(visible, (positions[:, None] - positions[None, :])[None])
        hidden = self._body(
            ids, {k: m[:, None] for k, m in masks.items()}, positions[None].expand(len(prompts), -1), cache
        )
        self.stats.prefills += len(prompts)
        rows = torch.arange(len(prompts), device=hidden.device)
        last = self._logits(hidden[rows, (lengths - 1).to(hidden.device)])
        return [_Prompt(cache, row, last[row], len(p), 0) for row, p in enumerate(prompts)]

    def _step(self, cache: SlotCache, rows: list[_Row], tokens: list[int]):
        """One token per row at its own position; the hidden states ``[rows, hidden]``."""
        import torch

        positions = torch.tensor([r.position for r in rows])
        cache.rows, cache.span = len(rows), int(positions.max()) + 1
        cache.positions = positions.to(self.head.weight.device)
        keys = torch.arange(cache.span)
        visible = keys[None, :] <= positions[:, None]  # [row, key]
        masks = self._masks(visible, positions[:, None] - keys[None, :])
        try:
            if self.decode_step is not None:
                device = self.head.weight.device
                hidden = self.decode_step(
                    torch.tensor(tokens, device=device),
                    cache.positions,
                    cache,
                    masks["full_attention"][:, None, None].to(device),
                    fused=PACK_WEIGHTS and not (self.int8 or self.bf16),  # the fused copies are packed fp32
                )
            else:
                hidden = self._body(
                    torch.tensor(tokens)[:, None],
                    {k: m[:, None, None] for k, m in masks.items()},
                    positions[:, None],
                    cache,
                )[:, -1]
        finally:
            cache.positions = None
        for r in rows:
            r.position += 1
        return hidden

    def _masks(self, visible: Any, distance: Any) -> dict[str, Any]:
        """Additive masks (0 where a key is seen, the dtype's minimum elsewhere): ``full_attention`` and, for a
        model with sliding-window layers, ``sliding_attention`` (keys less than the window behind)."""
        import torch

        dtype = self.dtype
        low = torch.finfo(dtype).min

        def additive(v):
            return torch.zeros(v.shape, dtype=dtype).masked_fill_(~v, low)

        masks = {"full_attention": additive(visible)}
        if self.window is not None:
            masks["sliding_attention"] = additive(visible & (distance < self.window))
        return masks

    def _body(self, ids: Any, masks: dict[str, Any], positions: Any, cache: SlotCache):
        from unstereo.engine.kernels.lm_head import last_hidden

        device = self.head.weight.device
        # the inputs are built on the CPU, where the rows are sampled; a model on another device takes copies
        if device.type != "cpu":
            ids, positions = ids.to(device), positions.to(device)
            masks = {k: m.to(device) for k, m in masks.items()}
        mask = masks if self.window is not None else masks["full_attention"]
        out = self.body(
            input_ids=ids,
            attention_mask=mask,
            position_ids=positions,
            past_key_values=cache,
            use_cache=True,
            cache_position=positions[0],
        )
        return last_hidden(out)

    def _logits(self, hidden: Any, out: Any = None):
        """fp32 logits ``[n, vocabulary]`` of hidden states ``[n, hidden]``: the head, its scale and soft cap, written
        into ``out`` when given (the step's logits buffer: no fresh tensor of that size a step)."""
        import torch.nn.functional as F

        from unstereo.engine.kernels.onednn import linear

        head = self.head
        if self.int8:  # only ever called inside generate, where _sampling_products built the head's int8 form
            return self._int8_head(hidden, out)
        if self._bf16_head is not None:
            logits = self._bf16_head.exact(hidden) if self._exact else self._bf16_head(hidden)
        elif self.onednn and self._decode_head is not None:
            return self._decode_head(hidden, out, packed=PACK_WEIGHTS)
        elif self.onednn:
            logits = linear(hidden, head.weight, head.bias)
        else:
            logits = F.linear(hidden, head.weight, head.bias)
        logits = head.scale_and_cap_(logits.float())
        return logits if out is None else out.copy_(logits)


ATTENTION = "unstereo_decode"


def _decode_attention(module, query, key, value, attention_mask, scaling=None, dropout=0.0, **kwargs):
    """Attention of one new token per row (``query`` ``[rows, heads, 1, dim]``) over a cache ``[rows, kv heads,
    length, dim]`` with an additive mask by :func:`.decode_step.grouped_attention`. Anything else (a prompt's
    pass, no ``scaling`` given) goes to transformers' ``sdpa``."""
    from transformers.integrations.sdpa_attention import sdpa_attention_forward

    from unstereo.engine import decode_step

    rows, heads, q, dim = query.shape
    kv_heads = key.shape[1]
    if q != 1 or scaling is None or attention_mask is None or heads % kv_heads:
        return sdpa_attention_forward(
            module, query, key, value, attention_mask, dropout=dropout, scaling=scaling, **kwargs
        )
    out = decode_step.grouped_attention(query, key, value, attention_mask, scaling)
    return out.reshape(rows, 1, heads, dim), None


@contextlib.contextmanager
def _decode_attention_for(model: Any):
    """Route a model that uses ``sdpa`` through :func:`_decode_attention` while the block runs."""
    config = getattr(model, "config", None)
    if getattr(config, "_attn_implementation", None) != "sdpa":
        yield
        return
    from transformers import AttentionInterface

    AttentionInterface.register(ATTENTION, _decode_attention)
    config._attn_implementation = ATTENTION
    try:
        yield
    finally:
        config._attn_implementation = "sdpa"


def _fill_gaps(cache: SlotCache, rows: list[_Row], ended: list[int]) -> None:
    """Drop the rows at indices ``ended`` (ascending) from ``rows``, keeping the live ones in the first slots: the last
    live rows move into the ended rows' slots (their caches with them), the others stay where they are."""
    live = len(rows) - len(ended)
    gone = set(ended)
    holes = [j for j in ended if j < live]
    movers = [j for j in range(live, len(rows)) if j not in gone]
    if holes:
        cache.move_rows(movers, holes, max(rows[j].position for j in movers))
        for hole, mover in zip(holes, movers, strict=True):
            rows[hole] = rows[mover]
    del rows[live:]


def _draw_uniforms(rows: list[_Row]) -> None:
    """Each row's uniforms for all its tokens (:func:`.sampler.stream` of its seed), all rows in one computation."""
    if not rows:
        return
    from unstereo.engine.sampler import stream

    drawn = stream([r.req.seed for r in rows], max(r.req.max_tokens for r in rows)).tolist()
    for row, u in zip(rows, drawn, strict=True):
        row.uniforms = u[: row.req.max_tokens]


def _chunks(prompts: list[tuple[int, ...]], cells: int) -> list[list[tuple[int, ...]]]:
    """``prompts`` in consecutive groups of rows x longest <= ``cells`` (at least one prompt each)."""
    out: list[list[tuple[int, ...]]] = []
    width = 0
    for p in prompts:
        if out and (len(out[-1]) + 1) * max(width, len(p)) <= cells:
            out[-1].append(p)
            width = max(width, len(p))
        else:
            out.append([p])
            width = len(p)
    return out


def eos_ids(model: Any, tok: Any) -> set[int]:
    """The ids that end a row: the generation config's end-of-sequence ids, else the tokenizer's."""
    config = getattr(model, "generation_config", None)
    eos = config.eos_token_id if config is not None else None
    eos = eos if eos is not None else tok.eos_token_id
    return set(eos if isinstance(eos, list) else [eos]) - {None}
