"""A GGUF model loaded straight into bf16 or int8 products, for a model that samples and judges but is never scored.

The ordinary road (:mod:`unstereo.models.gguf_convert`) dequantises the whole file to fp32 once, writes it as a
Hugging Face folder and loads that: for Qwen2.5-Coder-1.5B a 6.8 GB folder on disk and 6.2 GB of weights in memory,
of which int8 sampling (:mod:`unstereo.engine.kernels.int8`) then made a second, int8 copy. Here the transformers model is
built on the meta device (no memory for its weights) and the file's tensors are read one at a time (``pread``, not
the reader's memory map, whose pages would stay resident): each is dequantised to fp32 by the ``gguf`` package,
turned into the parameter's form and dropped, so at most one tensor's fp32 copy exists at a time:

- every ``nn.Linear`` of the body becomes a :class:`QuantisedLinear` holding the engine's form of the dequantised
  weight: :class:`~unstereo.engine.kernels.bf16.Bf16Linear` (the weight rounded to bf16) or
  :class:`~unstereo.engine.kernels.int8.Int8Linear` (per-row int8, outlier input columns of the down projections in
  fp32), the same numbers the engine makes from the converted fp32 weight (tests/models/test_gguf_direct.py);
- an LM head of its own (not tied to the embedding) is held in bf16, as a ``Bf16Linear`` (in either form: the
  engine makes its int8 head from it a block at a time), and then so is the embedding table, whose rows are widened
  to fp32 as they are looked up; a tied head is the fp32 embedding;
- everything else (norms, biases) stays fp32.

docs/performance.md ("Loading a GGUF straight into int8") has the measured peak memory of each form.

A forward pass through these layers rounds its input (bf16) or quantises it per tensor (int8), so a row's numbers
depend slightly on the other rows of its batch; :func:`exact_products` switches them to products computed a row at
a time, batch-independent, for the engine's probe (:meth:`SamplingEngine.check`).

A file loaded once in a form is kept in that form on the machine (:mod:`unstereo.models.form_cache`), with its
tokenizer: the next load of the same file in the same form maps the cached tensors instead of dequantising the file.
"""

from __future__ import annotations

import contextlib
import os
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from unstereo.engine.kernels.quantised import quantised_linear_class
from unstereo.errors import UnstereoError
from unstereo.log import get_logger

log = get_logger("models")

#: The forms :func:`load_gguf` builds: the body's linears in int8 or bf16, or every weight in fp32 (the converted
#: model's numbers without the converted folder).
FORMS = ("int8", "bfloat16", "float32")
#: How a :class:`QuantisedLinear` names its held form, per quantised form.
_SHORT = {"int8": "int8", "bfloat16": "bf16"}


@contextlib.contextmanager
def one_reader() -> Iterator[None]:
    """While the block runs, every ``gguf.GGUFReader`` of the same file is one object, parsed once: transformers
    parses the whole file for the config, again for the tokenizer (and the loader once more for the tensors), and a
    parse of the 1.5B's 151,936-token vocabulary takes about 10 s. A parse holds about 0.5 GB for that vocabulary:
    :func:`load_gguf` lets it go (:func:`_release`) before it reads the weights."""
    import gguf

    original = gguf.GGUFReader
    readers: dict[tuple[str, str], Any] = {}
    _OPEN.append(readers)

    def reader(path, mode="r"):
        key = (str(Path(path).resolve()), mode)
        if key not in readers:
            readers[key] = original(path, mode)
        return readers[key]

    gguf.GGUFReader = reader
    try:
        yield
    finally:
        gguf.GGUFReader = original
        _OPEN.pop()  # blocks nest: this one is the innermost


#: The parses each :func:`one_reader` block holds, innermost last.
_OPEN: list[dict[tuple[str, str], Any]] = []


def _release(file: Path) -> None:
    """Forget every :func:`one_reader` block's parse of ``file`` (a later reader parses it again)."""
    for readers in _OPEN:
        for key in [k for k in readers if k[0] == str(file.resolve())]:
            del readers[key]


def _read(fd: int, tensor: Any):
    """The bytes of GGUF ``tensor`` as the reader's array would hold them, read with ``pread`` (no mapped pages
    stay resident)."""
    import numpy as np

    data = tensor.data  # a lazy view of the memory map: its dtype and shape, no page read
    raw = os.pread(fd, int(tensor.n_bytes), int(tensor.data_offset))
    if len(raw) != int(tensor.n_bytes):
        raise UnstereoError(
            f"GGUF tensor {tensor.name!r} is cut short ({len(raw)} of {tensor.n_bytes} bytes)"
        )
    return np.frombuffer(raw, dtype=data.dtype).reshape(data.shape)


#: Rows dequantised at a time are capped so that their fp32 output holds at most this many bytes.
_CHUNK_BYTES = 64 << 20


def _dequantize(raw: Any, kind: Any):
    """``gguf.dequantize(raw, kind)`` a block of rows at a time into one fp32 array: the package's dequantisation
    makes temporaries several times its output's size, which for the 1.5B's 151,936 x 1,536 embedding (0.93 GB in
    fp32) peaked at 1.8 GB beyond it and left about 1 GB of the process's heap in use after it."""
    import numpy as np
    from gguf import dequantize

    if raw.dtype != np.uint8 or raw.ndim < 2 or raw.shape[0] < 2:  # unquantised (F32, F16), or a single row
        return dequantize(raw, kind)
    first = dequantize(raw[:1], kind)
    step = max(1, _CHUNK_BYTES // max(1, first.nbytes))
    if step >= raw.shape[0]:
        return dequantize(raw, kind)
    out = np.empty((raw.shape[0], *first.shape[1:]), dtype=first.dtype)
    for start in range(0, raw.shape[0], step):
        out[start : start + step] = dequantize(raw[start : start + step], kind)
    return out


def load_gguf(path: str | Path, gguf_file: str, form: str = "int8") -> Any:
    """The causal LM of ``path/gguf_file`` in eval mode on the CPU, its tensors read one at a time: with ``form``
    ``int8`` or ``bfloat16`` the body's linear layers as :class:`QuantisedLinear` (see the module doc), with
    ``float32`` every weight an fp32 parameter, the numbers of the converted folder without writing it (a model
    that is sampled or judged but not scored). Raises when the file's architecture is not one transformers reads from GGUF, or a
    tensor is missing.

    The first load of a file in a form writes that form to the machine's cache, and later loads of the same file
    in the same form read it from there in seconds, the same model to the bit (:mod:`unstereo.models.form_cache`)."""
    from unstereo.models import form_cache

    if form not in FORMS:
        raise ValueError(f"form must be one of {FORMS}, got {form!r}")
    file = Path(path) / gguf_file
    folder = form_cache.form_folder(file, form)
    if folder is None:  # the cache is off, or the file is missing (the load names it)
        return _load_direct(file, form)
    model = form_cache.read_model(folder, file, form, skeleton, finish)
    if model is not None:
        return model
    with form_cache.locked(folder):  # a second job loading the same form waits here and reads the first's
        model = form_cache.read_model(folder, file, form, skeleton, finish)
        if model is not None:
            return model
        t0 = time.perf_counter()
        model = _load_direct(file, form, folder)
        log.info("loaded %s (%s) from the GGUF file in %.1f s", file, form, time.perf_counter() - t0)
    return model


def skeleton(config: dict[str, Any], form: str) -> tuple[Any, bool]:
    """(the causal LM of ``config`` on the meta device, whether ``form`` holds its head in bf16 of its own):
    ``config`` is the keyword arguments of ``AutoConfig.for_model`` that transformers reads from a GGUF file; the
    model is what :func:`load_gguf` fills, from the file or from its cached form."""
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM
    from transformers.integrations.accelerate import init_empty_weights

    config = AutoConfig.for_model(**config)  # what from_pretrained(gguf_file=) makes of it
    if hasattr(config, "quantization_config"):
        del config.quantization_config
    with init_empty_weights():
        model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    # a head of its own (not the embedding's transpose) is held in bf16, and so is the embedding
    return model, form in _SHORT and not getattr(config, "tie_word_embeddings", False)


def finish(model: Any, file: Path, form: str, own_head: bool) -> Any:
    """``model`` (:func:`skeleton`, every tensor in place) as :func:`load_gguf` returns it: tied, hooked, named, in
    eval mode."""
    if getattr(model.config, "tie_word_embeddings", False):
        model.tie_weights()
    if own_head:  # its table is bf16 already (place): its rows go on in fp32
        model.get_input_embeddings().register_forward_hook(_widen)
    model.name_or_path = f"{file} ({form} from GGUF)"  # the probe memo's digest reads it
    model.unstereo_form = form  # the engine computes in fp32 around bf16 products (SamplingEngine.dtype)
    model.eval()
    return model


def _quantised(module: Any, form: str, head: Any, own_head: bool) -> bool:
    """Whether :func:`load_gguf` holds ``module`` of a model in ``form`` as a :class:`QuantisedLinear`."""
    import torch

    return form in _SHORT and type(module) is torch.nn.Linear and (module is not head or own_head)


def _kind(module: Any, form: str, head: Any) -> str:
    """The held form of a quantised linear of a model loaded in ``form``: the head's is bf16 (module doc)."""
    return "bf16" if module is head else _SHORT[form]


def _held(module: Any, form: str, head: Any, hidden: int | None, weight: Any, bias: Any) -> Any:
    """The engine form of ``module`` (a quantised linear, :func:`_quantised`) from its fp32 ``weight`` and ``bias``."""
    from unstereo.engine.kernels.bf16 import Bf16Linear
    from unstereo.engine.kernels.int8 import Int8Linear, keeps_outliers

    if _kind(module, form, head) == "int8":
        return Int8Linear(weight, bias, outliers=keeps_outliers(module.in_features, hidden))
    return Bf16Linear(weight, bias)


def _plan(
    model: Any, form: str, own_head: bool
) -> tuple[dict[str, Any], list[tuple[str, Any, tuple[int, ...]]]]:
    """What :func:`load_gguf` will make of the :func:`skeleton` ``model``, for its cached form
    (:class:`unstereo.models.form_cache.Writer`): (quantised linear -> (its held form, whether it has a bias,
    [out, in]); every other parameter as (name, dtype, shape), a tied head's left out)."""
    import torch

    head, embedding = model.get_output_embeddings(), model.get_input_embeddings()
    tied = getattr(model.config, "tie_word_embeddings", False)
    layers = {
        name: (_kind(m, form, head), m.bias is not None, (m.out_features, m.in_features))
        for name, m in model.named_modules()
        if _quantised(m, form, head, own_head)
    }
    parameters = []
    for name, p in model.named_parameters():
        owner = name.rpartition(".")[0]
        module = model.get_submodule(owner)
        if owner in layers or (tied and module is head):
            continue
        dtype = torch.bfloat16 if own_head and module is embedding else torch.float32
        parameters.append((name, dtype, tuple(p.shape)))
    return layers, parameters


def _load_direct(file: Path, form: str, cache: Path | None = None) -> Any:
    """:func:`load_gguf`'s model read from the GGUF ``file`` itself; its form written, while it is read, to the cache
    entry ``cache`` (:class:`unstereo.models.form_cache.Writer`) unless that is None."""
    import copy

    import gguf
    import numpy as np
    import torch
    from transformers.modeling_gguf_pytorch_utils import (
        TENSOR_PROCESSORS,
        TensorProcessor,
        get_gguf_hf_weights_map,
        load_gguf_checkpoint,
        read_field,
    )

    from unstereo.models.form_cache import Writer
    from unstereo.models.gguf_check import check_gguf

    check_gguf(file)  # missing, cut short or of another architecture: one line naming it, before any parse
    try:
        with one_reader():
            parsed = load_gguf_checkpoint(str(file), return_tensors=False)
            reader = gguf.GGUFReader(str(file))  # the same parse (one_reader)
        config_kwargs = copy.deepcopy(parsed["config"])
        architecture = read_field(reader, "general.architecture")[0]
        tensors = list(reader.tensors)  # name, type, shape, offset: no reference to the parse's vocabulary
    except (ValueError, KeyError, OSError) as exc:
        raise UnstereoError(f"cannot read the GGUF file {file}: {exc}") from exc
    model, own_head = skeleton(config_kwargs, form)
    config = model.config
    head = model.get_output_embeddings()
    embedding = model.get_input_embeddings()
    names = get_gguf_hf_weights_map(model)
    # the vocabulary (the parse's and the tokenizer's copy of it) is not needed for the weights: let it go
    parsed = {k: v for k, v in parsed.items() if not k.startswith("tokenizer")}
    del reader
    _release(file)
    processor = TENSOR_PROCESSORS.get(architecture, TensorProcessor)(config=parsed.get("config", {}))
    cls = quantised_linear_class()
    hidden = getattr(config, "hidden_size", None)
    pending: dict[str, dict[str, Any]] = {}  # a linear layer's weight and bias until both are read

    def place(name: str, value: Any) -> None:
        owner, _, attr = name.rpartition(".")
        module = model.get_submodule(owner)
        if _quantised(module, form, head, own_head):
            got = pending.setdefault(owner, {})
            got[attr] = value
            if "weight" in got and ("bias" in got or module.bias is None):
                parent, _, child = owner.rpartition(".")
                q = _held(module, form, head, hidden, got["weight"], got.get("bias"))
                layer = cls(q, module.in_features, module.out_features, _kind(module, form, head))
                setattr(model.get_submodule(parent), child, layer)
                del pending[owner]
                if writer is not None:
                    writer.layer(owner, q)
        else:
            if own_head and module is embedding:  # held in bf16 from the start: no second copy at any time
                value = value.to(torch.bfloat16)
            module._parameters[attr] = torch.nn.Parameter(value, requires_grad=False)
            if writer is not None:
                writer.parameter(name, value)

    def read(tensor: Any) -> tuple[str, Any] | None:
        """(parameter name, fp32 tensor) of a file tensor, None for one the model has no place for."""
        weights = _dequantize(_read(fd, tensor), tensor.tensor_type)
        result = processor.process(
            weights=weights, name=tensor.name, tensor_key_mapping=names, parsed_parameters=parsed
        )
        if result.name not in names:
            return None
        array = np.ascontiguousarray(result.weights, dtype=np.float32)
        if not array.flags.writeable:  # an F32 tensor straight from the file's bytes
            array = array.copy()
        return names[result.name], torch.from_numpy(array)

    writer = None if cache is None else Writer(cache, file, form, *_plan(model, form, own_head))
    fd = os.open(file, os.O_RDONLY)
    try:
        # the next tensor is read and dequantised (numpy, without the GIL) while this one is quantised: two at a time
        # at most, so two tensors' fp32 copies at most are alive
        with ThreadPoolExecutor(max_workers=1) as pool:
            ahead = pool.submit(read, tensors[0]) if tensors else None
            for i in range(len(tensors)):
                got = ahead.result()
                ahead = pool.submit(read, tensors[i + 1]) if i + 1 < len(tensors) else None
                if got is not None:
                    place(*got)
                del got
        if getattr(config, "tie_word_embeddings", False):
            model.tie_weights()  # before the check: a tied head's parameter is the embedding's
        missing = sorted(n for n, p in model.named_parameters() if p.device.type == "meta")
        missing += sorted(f"{owner}.weight" for owner in pending if f"{owner}.weight" not in missing)
        if missing:
            raise UnstereoError(f"GGUF file {file} lacks tensors for {missing[:5]} ({len(missing)} in all)")
    except BaseException:
        if writer is not None:  # no entry of a failed load
            writer.abort()
        raise
    finally:
        os.close(fd)
    model = finish(model, file, form, own_head)
    if writer is not None:
        writer.finish(model, config_kwargs)  # the last tensors' writes, the description, the rename
    return model


def _widen(module: Any, args: Any, out: Any) -> Any:
    """A forward hook: an embedding held in bf16 (half the memory: 0.47 GB for the 1.5B) hands its rows on in fp32,
    the dtype the rest of the model computes in."""
    return out.float()


def load_gguf_with_tokenizer(path: str | Path, gguf_file: str, form: str = "int8") -> tuple[Any, Any]:
    """(:func:`load_gguf`, :func:`load_gguf_tokenizer`) of ``path/gguf_file``, the file parsed once for both: the
    tokenizer first, so that the parse is gone before the weights are read. The tokenizer too is cached
    (:mod:`unstereo.models.form_cache`): a later load does not parse the file's vocabulary again."""
    from unstereo.models import form_cache

    folder = form_cache.tokenizer_folder(Path(path) / gguf_file)
    tokenizer = None if folder is None else form_cache.read_tokenizer(folder)
    fresh = tokenizer is None
    with one_reader():
        if fresh:
            tokenizer = read_gguf_tokenizer(path, gguf_file)
        model = load_gguf(path, gguf_file, form)
    tokenizer = _repaired(model, tokenizer)
    if fresh and folder is not None:
        form_cache.write_tokenizer(folder, tokenizer, Path(path) / gguf_file)
    return model, tokenizer


def load_gguf_tokenizer(path: str | Path, gguf_file: str, model: Any):
    """The tokenizer of ``path/gguf_file`` as the conversion writes it (Gemma's repaired to BPE,
    :mod:`unstereo.models.gguf_tokenizer`), read from the file itself."""
    return _repaired(model, read_gguf_tokenizer(path, gguf_file))


def read_gguf_tokenizer(path: str | Path, gguf_file: str):
    """The tokenizer transformers reads from ``path/gguf_file`` (not yet repaired: :func:`load_gguf_tokenizer`)."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(path, gguf_file=gguf_file)


def _repaired(model: Any, tokenizer: Any):
    """``tokenizer``, Gemma's repaired to BPE (:mod:`unstereo.models.gguf_tokenizer`)."""
    from unstereo.models.gguf_tokenizer import needs_bpe_repair, repair_gemma_tokenizer

    if needs_bpe_repair(model, tokenizer):
        tokenizer = repair_gemma_tokenizer(tokenizer)
    return tokenizer
