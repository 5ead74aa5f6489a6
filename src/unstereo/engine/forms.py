"""The form a local model samples in, chosen by timing the candidates on the running machine.

A model can sample with several forms of the same weights: fp32 products by the plain weight or by a copy packed
into oneDNN's layout (the same numbers: :func:`.kernels.onednn.packing_works`), bf16 weights (native bf16 products
where the CPU has them, else widened to fp32 a block at a time: :mod:`.kernels.bf16`) or int8 weights
(:mod:`.kernels.int8`). Which is fastest depends on the CPU in hand (its instructions, caches and memory, the
kernels its libraries pick), so no rule written on another machine can say; an emulated instruction set changes the
instructions, not the rest, and is no evidence of speed. Here each candidate is timed on the model's own shapes:

- the body's linear products of a few of the model's layers (random weights of the model's shapes, enough layers to
  exceed any CPU cache, so the weights stream from memory as in a real step), at the decode step's row count, and
  one block of the LM head (:data:`.kernels.decode_head.BLOCK` words), each through the engine's own kernels;
- the figures are scaled to the whole model (its layers, its vocabulary): seconds a decode step of the products,
  which dominate a step on the CPU; attention and sampling cost the same in every form and are left out;
- a candidate whose weights (:func:`weight_bytes`) exceed the memory budget is never chosen; the fastest of the
  others is.

Only forms with the same outputs as fp32 are candidates unless the caller allows others: bf16 and int8 sample other
texts (cached apart by the model's label, :func:`unstereo.llm.local.product_label`), so a config names them
(``sampling_products``: a list is the candidates, a single name forces that product). The timings are remembered per
(machine, model shapes, rows, threads, candidates, kernel sources) with the probe verdicts
(:mod:`.kernels.probe_memo`, kind ``forms``), so a warm run times nothing; the log says what was timed, the figures
and the choice.
"""

from __future__ import annotations

import hashlib
import math
import os
import platform
import statistics
import struct
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from unstereo.log import get_logger

log = get_logger("engine.forms")

#: Candidate forms by name: (products, packed). ``float32-packed`` gives float32's numbers (probed bit-equal).
FORMS: dict[str, tuple[str, bool]] = {
    "float32": ("float32", False),
    "float32-packed": ("float32", True),
    "bfloat16": ("bfloat16", False),
    "int8": ("int8", False),
}
#: Weights timed at once: the model's layers up to this many fp32 bytes (at least one layer), larger than the
#: last-level cache of any CPU we know, so the timed products stream their weights from memory like a real step.
TIMED_BYTES = 384 << 20
#: Timed passes after one warm-up; the median is kept.
PASSES = 3
#: Share of input columns made outliers (20x the rest) in the timed inputs: the down projection's input of a gated
#: MLP has many (1,186 of 8,960 in one of Qwen2.5-1.5B's), the other products' inputs (norm outputs) a few; int8
#: multiplies the down projection's in fp32 (:class:`.kernels.int8.Int8Linear`, :func:`.kernels.int8.keeps_outliers`),
#: so they are part of its cost.
OUTLIER_SHARE = {"down": 1 / 8, "other": 1 / 192}
#: Share of the memory available at the start that ``sampling_memory: auto`` gives the sampled model's weights.
AUTO_MEMORY_SHARE = 0.4


@dataclass(frozen=True)
class ModelShapes:
    """What the products of a decoder-only model depend on: its widths, layers and vocabulary."""

    hidden: int
    intermediate: int
    heads: int
    kv_heads: int
    head_dim: int
    layers: int
    vocab: int
    tied: bool = True

    def linears(self) -> list[tuple[int, int]]:
        """(out, in) of one layer's linear products: query, key, value, output, gate, up, down."""
        q, kv = self.heads * self.head_dim, self.kv_heads * self.head_dim
        h, m = self.hidden, self.intermediate
        return [(q, h), (kv, h), (kv, h), (h, q), (m, h), (m, h), (h, m)]

    @property
    def layer_params(self) -> int:
        return sum(o * i for o, i in self.linears())

    @property
    def body_params(self) -> int:
        return self.layers * self.layer_params

    @property
    def head_params(self) -> int:
        return self.vocab * self.hidden

    def key(self) -> str:
        return ",".join(f"{k}={v}" for k, v in asdict(self).items())


def weight_bytes(shapes: ModelShapes, form: str) -> int:
    """Bytes the model's weights take while it samples in ``form``: the body's linears in the form, the embedding in
    fp32 (a separate LM head too), but a head of its own and then the embedding in bf16 in the bf16 and int8 forms,
    as :mod:`unstereo.models.gguf_direct` holds them, and the copies the engine makes: a packed copy of the body and
    head beside the plain weights (``float32-packed``); for ``int8`` the head's int8 blocks and the down projections'
    transposed int8 weights for outlier columns (:class:`.kernels.int8.Int8Linear`: made on the first call with an
    outlier, so counted)."""
    body, head = shapes.body_params, shapes.head_params
    embeddings = head * (1 if shapes.tied else 2)
    held = 4 * head if shapes.tied else 2 * embeddings  # the bf16 and int8 forms' embedding (and own head)
    if form == "float32":
        return 4 * (body + embeddings)
    if form == "float32-packed":
        return 4 * (body + embeddings) + 4 * (body + head)
    if form == "bfloat16":
        return 2 * body + held
    if form == "int8":
        return body + shapes.layers * shapes.hidden * shapes.intermediate + held + head
    raise ValueError(f"unknown form {form!r}; known: {list(FORMS)}")


# ------------------------------------------------------------------------------------------- model shapes


def shapes_of_config(config: Any) -> ModelShapes | None:
    """The shapes of a transformers config (a text config is taken from a multimodal one); None when it names no
    decoder widths (an encoder, an unknown layout)."""
    config = config.get_text_config() if hasattr(config, "get_text_config") else config

    def get(*names: str) -> int:
        for n in names:
            v = getattr(config, n, None)
            if v:
                return int(v)
        return 0

    hidden, layers = get("hidden_size", "n_embd"), get("num_hidden_layers", "n_layer")
    heads = get("num_attention_heads", "n_head")
    vocab = get("vocab_size")
    if not (hidden and layers and heads and vocab):
        return None
    intermediate = get("intermediate_size", "n_inner") or 4 * hidden
    kv = get("num_key_value_heads") or heads
    head_dim = get("head_dim") or hidden // heads
    tied = bool(getattr(config, "tie_word_embeddings", True))
    return ModelShapes(hidden, intermediate, heads, kv, head_dim, layers, vocab, tied)


_GGUF_SCALARS = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}


def gguf_metadata(path: str | Path) -> tuple[dict[str, Any], dict[str, tuple[int, ...]]]:
    """(scalar metadata, tensor shapes) of a GGUF file, read from its header alone: arrays are skipped (an array's
    value here is its length), so a 152k-word vocabulary costs a pass over its lengths, not a parse (the ``gguf``
    package's full parse takes seconds)."""
    with open(path, "rb") as f:

        def read(fmt: str) -> Any:
            size = struct.calcsize("<" + fmt)
            data = f.read(size)
            if len(data) != size:
                raise ValueError(f"{path}: cut short in its GGUF header")
            return struct.unpack("<" + fmt, data)[0]

        def string() -> str:
            return f.read(read("Q")).decode("utf-8", errors="replace")

        def value(kind: int) -> Any:
            if kind in _GGUF_SCALARS:
                return read(_GGUF_SCALARS[kind])
            if kind == 8:
                return string()
            if kind == 9:
                elem, count = read("I"), read("Q")
                if elem == 8:
                    for _ in range(count):
                        f.seek(read("Q"), os.SEEK_CUR)
                elif elem in _GGUF_SCALARS:
                    f.seek(count * struct.calcsize("<" + _GGUF_SCALARS[elem]), os.SEEK_CUR)
                else:
                    for _ in range(count):
                        value(elem)
                return count
            raise ValueError(f"{path}: unknown GGUF value type {kind}")

        if f.read(4) != b"GGUF":
            raise ValueError(f"{path}: not a GGUF file")
        version = read("I")
        if version < 2:
            raise ValueError(f"{path}: GGUF version {version} is not supported")
        n_tensors, n_kv = read("Q"), read("Q")
        meta = {}
        for _ in range(n_kv):
            key = string()
            meta[key] = value(read("I"))
        tensors = {}
        for _ in range(n_tensors):
            name = string()
            dims = tuple(read("Q") for _ in range(read("I")))
            read("I"), read("Q")  # type, offset
            tensors[name] = dims
    return meta, tensors


def shapes_of_gguf(path: str | Path) -> ModelShapes | None:
    """The shapes of a GGUF file's model (llama.cpp's key names); None when its header lacks them."""
    meta, tensors = gguf_metadata(path)
    arch = meta.get("general.architecture")
    if not isinstance(arch, str):
        return None

    def get(name: str) -> int:
        return int(meta.get(f"{arch}.{name}") or 0)

    hidden, layers, heads = get("embedding_length"), get("block_count"), get("attention.head_count")
    embed = tensors.get("token_embd.weight")
    vocab = int(embed[1]) if embed and len(embed) == 2 else int(meta.get("tokenizer.ggml.tokens") or 0)
    if not (hidden and layers and heads and vocab):
        return None
    kv = get("attention.head_count_kv") or heads
    head_dim = get("attention.key_length") or hidden // heads
    intermediate = get("feed_forward_length") or 4 * hidden
    return ModelShapes(
        hidden, intermediate, heads, kv, head_dim, layers, vocab, "output.weight" not in tensors
    )


def shapes_of_spec(spec: Any) -> ModelShapes | None:
    """The shapes of a local model spec (:class:`unstereo.models.spec.ModelSpec`) without loading its weights: the
    converted folder's or the folder's ``config.json``, else the GGUF header; None where neither tells (logged)."""
    try:
        folders = [getattr(spec, "converted_dir", None)]
        gguf = getattr(spec, "gguf_file", None)
        path = Path(str(getattr(spec, "path", "") or ""))
        if not gguf:
            folders.append(path)
        for folder in folders:
            if folder is not None and (Path(folder) / "config.json").is_file():
                from transformers import AutoConfig

                return shapes_of_config(AutoConfig.from_pretrained(str(folder)))
        if gguf:
            file = path / gguf if path.is_dir() else path
            return shapes_of_gguf(file)
        if path.suffix == ".gguf":
            return shapes_of_gguf(path)
        from transformers import AutoConfig

        return shapes_of_config(AutoConfig.from_pretrained(str(path)))
    except Exception as exc:  # an unreadable file or an unknown layout: the caller keeps its fixed rule
        log.info("no shapes for %s without loading it (%s: %s)", getattr(spec, "label", spec), type(exc).__name__,
                 exc)  # fmt: skip
        return None


# ----------------------------------------------------------------------------------------------- timing


def _products(form: str, weight: Any, bias: Any = None, hidden: int | None = None) -> Callable[[Any], Any]:
    """The engine's product by ``weight`` in ``form`` (the kernels the engine runs in it; ``hidden``: the model's
    hidden size, which decides int8's outlier path)."""
    import torch.nn.functional as F

    from unstereo.engine.kernels import onednn

    products, packed = FORMS[form]
    if products == "int8":
        from unstereo.engine.kernels.int8 import Int8Linear, keeps_outliers

        return Int8Linear(weight, bias, outliers=keeps_outliers(weight.shape[1], hidden))
    if products == "bfloat16":
        from unstereo.engine.kernels.bf16 import Bf16Linear

        return Bf16Linear(weight, bias)
    if not onednn.available(weight):
        return lambda x: F.linear(x, weight, bias)
    if packed:
        copy = onednn.pack(weight)
        return lambda x: onednn.packed_linear(x, weight, copy, bias)
    return lambda x: onednn.linear(x, weight, bias)


@dataclass(frozen=True)
class Timed:
    """Seconds of a decode step's products per form (None: the form cannot run here) and whether the passes agreed
    (every form's median within :data:`STEADY` of its fastest pass): timings taken while other work shared the CPU
    serve their run and are timed again by the next (:data:`UNSTEADY_TRIES`)."""

    seconds: Mapping[str, float | None]
    steady: bool = True


#: A form's median pass at most this many times its fastest: the machine was quiet enough to trust the timings.
STEADY = 1.3
#: Processes that time the forms again while the remembered timings were taken on a busy machine.
UNSTEADY_TRIES = 3


def time_forms(shapes: ModelShapes, forms: Iterable[str], rows: int, passes: int = PASSES) -> Timed:
    """Seconds of one decode step's products of the whole model in each of ``forms`` at ``rows`` rows, from timing a
    few of its layers (:data:`TIMED_BYTES`) and one head block (the same random weights in every form, inputs with
    outlier columns as a real model's have), scaled to its layers and vocabulary. The forms take turns, pass by pass,
    so that other work on the machine slows each alike, and each keeps its fastest pass."""
    import torch

    from unstereo.engine.kernels.decode_head import BLOCK

    forms = list(forms)
    g = torch.Generator().manual_seed(0)
    n_layers = max(1, min(shapes.layers, TIMED_BYTES // (4 * shapes.layer_params)))
    block = min(BLOCK, shapes.vocab)
    passes = max(1, passes)
    with torch.inference_mode():
        weights = [
            [torch.randn(o, i, generator=g) * i**-0.5 for o, i in shapes.linears()] for _ in range(n_layers)
        ]
        head_weight = torch.randn(block, shapes.hidden, generator=g) * shapes.hidden**-0.5
        inputs = []
        for n, (_, i) in enumerate(shapes.linears()):
            x = torch.randn(rows, i, generator=g)
            share = OUTLIER_SHARE["down" if n == 6 else "other"]
            x[:, :: max(1, round(1 / share))] *= 20.0
            inputs.append(x)
        built: dict[str, Any] = {}
        for form in forms:
            try:
                layers = [[_products(form, w, hidden=shapes.hidden) for w in layer] for layer in weights]
                # the bf16 form keeps an fp32 head (a tied embedding stays fp32)
                head = _products(form if form != "bfloat16" else "float32", head_weight, hidden=shapes.hidden)
                built[form] = (layers, head)
                _pass(
                    layers, head, inputs
                )  # warm-up: first-call allocations, int8's outlier rows, oneDNN's cache
            except Exception as exc:  # a kernel this build cannot run: not a candidate
                log.info("form %s not runnable here (%s: %s)", form, type(exc).__name__, exc)
                built.pop(form, None)
        runs: dict[str, list[tuple[float, float]]] = {f: [] for f in built}
        for _ in range(passes):
            for form, (layers, head) in built.items():
                runs[form].append(_pass(layers, head, inputs))
    seconds: dict[str, float | None] = {f: None for f in forms}
    steady = True
    for form, timed in runs.items():
        totals = [b * shapes.layers / n_layers + h * shapes.vocab / block for b, h in timed]
        seconds[form] = min(totals)
        steady = steady and statistics.median(totals) <= STEADY * min(totals)
    return Timed(seconds, steady)


def _pass(layers: list[list[Any]], head: Any, inputs: list[Any]) -> tuple[float, float]:
    """Seconds of one pass of ``layers``' products and of ``head``'s."""
    t0 = time.perf_counter()
    for layer in layers:
        for product, x in zip(layer, inputs, strict=True):
            product(x)
    t1 = time.perf_counter()
    head(inputs[0])
    return t1 - t0, time.perf_counter() - t1


def time_form(shapes: ModelShapes, form: str, rows: int, passes: int = PASSES) -> float:
    """:func:`time_forms` of one form (raises where it cannot run)."""
    seconds = time_forms(shapes, [form], rows, passes).seconds[form]
    if seconds is None:
        raise RuntimeError(f"form {form} cannot run here")
    return seconds


@dataclass(frozen=True)
class Choice:
    """A chosen form: its name, products and packing, the seconds a step each candidate timed (None: not timed, over
    the budget or not runnable here), the budget in bytes (None: none) and whether the timings were remembered."""

    form: str
    timings: Mapping[str, float | None]
    budget: int | None
    remembered: bool = False
    forced: bool = False

    @property
    def products(self) -> str:
        return FORMS[self.form][0]

    @property
    def packed(self) -> bool:
        return FORMS[self.form][1]


def candidates(allowed: Iterable[str]) -> list[str]:
    """The forms timed for the allowed products (float32 is both its plain and its packed form); the products this
    CPU or PyTorch cannot run (:func:`unstereo.llm.local.sampling_products`) are left out."""
    import torch

    from unstereo.engine.kernels import bf16, int8, onednn

    out = []
    for products in dict.fromkeys(allowed):
        if products == "float32":
            out += ["float32", "float32-packed"] if onednn.available(torch.empty(0)) else ["float32"]
        elif products == "int8" and int8.works():
            out.append("int8")
        elif products == "bfloat16" and bf16.works():
            out.append("bfloat16")
    return out


def machine_key() -> str:
    """What a timing holds for: the CPU (model name and flags), the cores torch uses, torch's build."""
    import torch

    from unstereo.engine.kernels.bf16 import cpu_flags

    model = ""
    try:
        for line in Path("/proc/cpuinfo").read_text(errors="replace").splitlines():
            if line.startswith("model name") or line.startswith("cpu family") or line.startswith("model\t"):
                model += line.split(":", 1)[1].strip() + ";"
            if line.strip() == "":
                break
    except OSError:
        model = platform.processor()
    return (
        f"{model}|{' '.join(sorted(cpu_flags()))}|threads={torch.get_num_threads()}|torch={torch.__version__}"
    )


def _memo_key(shapes: ModelShapes, rows: int, forms: list[str]) -> str:
    from unstereo.engine.kernels.probe_memo import _source

    modules = ["unstereo.engine.forms", *(f"unstereo.engine.kernels.{m}" for m in ("onednn", "bf16", "int8"))]
    parts = [machine_key(), shapes.key(), f"rows={rows}", ",".join(forms), *(_source(m) for m in modules)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()


def choose(
    shapes: ModelShapes,
    allowed: Iterable[str],
    rows: int,
    budget: int | None,
    timer: Callable[[ModelShapes, list[str], int], Timed | Mapping[str, float | None]] = time_forms,
    memo: bool = True,
    label: str = "",
) -> Choice:
    """The fastest form among those of ``allowed`` products (:func:`candidates`) whose weights fit ``budget`` bytes
    (None: no limit); when none fits, the smallest (logged). Timings come from the memo when ``memo`` and this
    machine timed the same candidates for the same shapes and rows before on a quiet machine (:class:`Timed`), else
    from ``timer`` (every candidate, when more than one fits), stored."""
    from unstereo.engine.kernels import probe_memo

    forms = candidates(allowed) or ["float32"]
    key = _memo_key(shapes, rows, forms) if memo else None
    known = probe_memo.recall("forms", key, {"timings": dict, "tries": int}) if key is not None else None
    timings: dict[str, float | None] = {}
    tries = 0
    if known is not None and set(known["timings"]) == set(forms):
        timings = {f: (None if v is None else float(v)) for f, v in known["timings"].items()}
        tries = known["tries"]
    # timings taken while the machine was busy are timed again by the next processes, each form keeping its
    # fastest figure over the tries, up to UNSTEADY_TRIES: a machine that is always busy stops paying for them
    remembered = bool(timings) and (bool(known and known.get("steady") is True) or tries >= UNSTEADY_TRIES)
    fits = [f for f in forms if budget is None or weight_bytes(shapes, f) <= budget]
    steady = True
    if not remembered and len(fits) > 1:
        # every form is timed, the ones over this run's budget too, so that the memo serves any budget
        timed = timer(shapes, forms, rows)
        steady = timed.steady if isinstance(timed, Timed) else True
        seconds = timed.seconds if isinstance(timed, Timed) else timed
        now = {f: (None if (t := seconds.get(f)) is None else float(t)) for f in forms}
        timings = {f: _faster(timings.get(f), now[f]) for f in forms}
        if key is not None:
            verdict = {"timings": timings, "steady": steady, "tries": tries + 1}
            probe_memo.remember("forms", key, verdict)
    runnable = [f for f in fits if timings.get(f) is not None]
    if runnable:
        form = min(runnable, key=lambda f: (timings[f], forms.index(f)))
    elif fits:
        form = fits[0]
    else:
        form = min(forms, key=lambda f: weight_bytes(shapes, f))
        log.warning("%s: no form's weights fit the %.1f GB budget; the smallest: %s (%.1f GB)", label or "model",
                    (budget or 0) / 1e9, form, weight_bytes(shapes, form) / 1e9)  # fmt: skip
    choice = Choice(form, {f: timings.get(f) for f in forms}, budget, remembered)
    log.info("%s%s", describe(choice, shapes, rows, label),
             "" if steady else " (the passes varied: other work shared the CPU; timed again next time)")  # fmt: skip
    return choice


def _faster(a: float | None, b: float | None) -> float | None:
    return b if a is None else a if b is None else min(a, b)


def describe(choice: Choice, shapes: ModelShapes, rows: int, label: str = "") -> str:
    """One log line: every candidate's seconds a step and weights, which exceeded the budget, the choice."""
    parts = []
    for f, t in choice.timings.items():
        size = weight_bytes(shapes, f) / 1e9
        over = choice.budget is not None and weight_bytes(shapes, f) > choice.budget
        timed = any(v is not None for v in choice.timings.values())
        figure = ("not runnable" if timed else "not timed") if t is None else f"{1000 * t:.1f} ms a step"
        figure += " (over the budget)" if over else ""
        parts.append(f"{f} {figure} ({size:.1f} GB)")
    budget = "no budget" if choice.budget is None else f"budget {choice.budget / 1e9:.1f} GB"
    how = "remembered on this machine" if choice.remembered else "timed now"
    return (f"sampling forms of {label or 'the model'} at {rows} rows ({budget}, {how}): {'; '.join(parts)}; "
            f"chose {choice.form}")  # fmt: skip


def memory_budget(setting: float | str | None) -> int | None:
    """Bytes the sampled model's weights may take: ``setting`` GB, or for ``auto`` (None) :data:`AUTO_MEMORY_SHARE`
    of the memory available now (:func:`unstereo.engine.memory.available_bytes`: the system's, or less under a
    Slurm job's or a container's limit), which leaves the rest to the KV cache, the job's other models and the jobs
    running beside it; None where nothing is known."""
    if setting is not None and setting != "auto":
        return int(float(setting) * 1e9)
    from unstereo.engine.memory import available_bytes

    room = available_bytes()
    return None if room is None else int(AUTO_MEMORY_SHARE * room)


def rows_class(rows: int) -> int:
    """The row count a step is timed at for ``rows`` rows: the next power of two (2 at least), so nearby batch sizes
    share one timing."""
    return max(2, 1 << math.ceil(math.log2(max(1, rows))))
