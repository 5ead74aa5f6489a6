"""The forms a GGUF file was loaded in (:mod:`unstereo.models.gguf_direct`), kept on disk so that the next load of
the same file in the same form takes seconds.

A direct load dequantises every tensor of the file and, for its tokenizer, parses the whole vocabulary: 46-90 s for
Qwen2.5-Coder-1.5B on a 2-core CPU, paid by every process (every Snakemake job) that samples from it. After such a
load the model is written here, beside the converted models (:func:`unstereo.io.cache_root`):

- ``gguf-forms/<digest>/`` per (file, form): ``unstereo-form.json`` (the GGUF's configuration as transformers read
  it, which layers hold which form) and ``tensors.safetensors``, every tensor as the model holds it: bf16 weights
  as bf16, int8 layers as their int8 weight, quantisation scales and bias (packed again by
  ``torch.ops.quantized.linear_prepack`` at load: the same packed weight, bit-identical products), everything else
  fp32 (or bf16: the embedding of a bf16 form with an untied head);
- ``gguf-forms/<digest>-tokenizer/`` per file: the tokenizer as ``save_pretrained`` writes it (Gemma's repaired, as
  the conversion writes it), so the vocabulary is not parsed again.

The digest covers the file's identity (resolved path, size, modification time in ns, inode), the form, the
installed torch, transformers, gguf and numpy, and the source of the modules that build the form (as
:func:`unstereo.engine.kernels.probe_memo.digest` does): a changed file or a changed loader is another digest, and
an old entry is never read for it.

The tensors are mapped from the file (``torch.UntypedStorage.from_file``, a private mapping: the pages are the
file's, read on first use, given back under memory pressure and shared by processes that load the same form),
except the int8 weights, which are read (``pread``) one layer at a time for packing and dropped. Every entry is
written to a temporary folder and renamed into place, one process at a time (:func:`unstereo.io.file_lock` on the
entry; a second process that loads the same form meanwhile waits and reads the first's entry). An entry that cannot
be read (cut short, another layout, a header that does not match the model) is set aside
(:func:`unstereo.io.set_aside`, with a warning) and the file is loaded from the GGUF again, as on a machine that
never loaded it; an entry that cannot be written is skipped with a warning. ``UNSTEREO_FORM_CACHE=0`` turns the
cache off (nothing read or written).

A new entry removes those it makes stale (:func:`evict`): the entries of a GGUF path that no longer exists or of an
older version of the same file, and all but the most recently used other entry of the same file and form (another
version of the loader's source or of a package), so that the cache holds at most two entries of a file and form.
This module does not import :mod:`unstereo.models.gguf_direct` (which imports it): the loader hands it the functions
that build and finish a model.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import shutil
import struct
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from typing import Any

from unstereo.io import cache_root, file_lock, set_aside
from unstereo.log import get_logger

log = get_logger("models")

#: The layout of an entry; another version is another digest.
VERSION = 1
#: The environment variable that turns the cache off (``0``, ``off``, ``no`` or ``false``).
ENV = "UNSTEREO_FORM_CACHE"
#: The folder under :func:`unstereo.io.cache_root`.
FOLDER = "gguf-forms"
#: An entry's description; written last into the temporary folder, so a folder without it is no finished entry.
META = "unstereo-form.json"
#: An entry's tensors.
TENSORS = "tensors.safetensors"
#: The modules whose source a form depends on: the loader, this cache and the layers it builds.
MODULES = ("unstereo.models.gguf_direct", "unstereo.models.form_cache", "unstereo.engine.kernels.quantised")
#: ... and those of each form's layers.
FORM_MODULES = {
    "int8": ("unstereo.engine.kernels.int8",),
    "bfloat16": ("unstereo.engine.kernels.bf16",),
    "float32": (),
}
#: The most threads that pack an int8 form's weights at load.
PACKERS = 4
#: The modules whose source the tokenizer depends on.
TOKENIZER_MODULES = ("unstereo.models.gguf_direct", "unstereo.models.gguf_tokenizer")


class Damaged(Exception):
    """An entry that cannot be read as it should be."""


def enabled() -> bool:
    """Whether the cache is in use (:data:`ENV`)."""
    return os.environ.get(ENV, "1").strip().lower() not in ("0", "off", "no", "false")


def identity(file: Path) -> dict[str, Any] | None:
    """What tells ``file`` apart from another file or another version of it (None: it cannot be read)."""
    try:
        st = file.stat()
    except OSError:
        return None
    return {"path": str(file.resolve()), "size": st.st_size, "mtime_ns": st.st_mtime_ns, "inode": st.st_ino}


def _versions(*packages: str) -> list[str]:
    import importlib.metadata

    out = []
    for name in packages:
        try:
            out.append(f"{name} {importlib.metadata.version(name)}")
        except importlib.metadata.PackageNotFoundError:
            out.append(f"{name} absent")
    return out


def _digest(file: Path, kind: str, packages: tuple[str, ...], modules: tuple[str, ...]) -> str | None:
    from unstereo.engine.kernels.probe_memo import _source

    ident = identity(file)
    if ident is None:
        return None
    parts = [f"v{VERSION}", json.dumps(ident, sort_keys=True), kind, *_versions(*packages)]
    parts += [_source(m) for m in modules]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def form_folder(file: Path, form: str) -> Path | None:
    """The entry of ``file`` in ``form`` (None: the cache is off, or the file cannot be read)."""
    if not enabled():
        return None
    key = _digest(
        file, form, ("torch", "transformers", "gguf", "numpy"), MODULES + FORM_MODULES.get(form, ())
    )
    return None if key is None else cache_root() / FOLDER / key


def tokenizer_folder(file: Path) -> Path | None:
    """The tokenizer entry of ``file`` (None: the cache is off, or the file cannot be read)."""
    if not enabled():
        return None
    key = _digest(file, "tokenizer", ("transformers", "tokenizers", "gguf"), TOKENIZER_MODULES)
    return None if key is None else cache_root() / FOLDER / f"{key}-tokenizer"


@contextlib.contextmanager
def locked(folder: Path) -> Iterator[None]:
    """One process at a time in the block for ``folder`` (:func:`unstereo.io.file_lock` on it); without the lock
    where its file cannot be made (a read-only cache): the entry is then not written either. With the lock held,
    the temporary folders of the entry's writers are stale (a process killed while it wrote): they are removed."""
    with contextlib.ExitStack() as stack:
        try:
            folder.parent.mkdir(parents=True, exist_ok=True)
            stack.enter_context(file_lock(folder))
        except OSError as exc:
            log.debug("no lock on %s: %s", folder, exc)
        else:
            for stale in folder.parent.glob(f"{folder.name}.tmp*"):
                log.info("removing %s, the entry of a writer that stopped before it finished", stale)
                shutil.rmtree(stale, ignore_errors=True)
        yield


# ------------------------------------------------------------------------------------------------ tensors file

#: safetensors' names of the dtypes an entry holds.
_NAMES = {
    "float64": "F64",
    "int64": "I64",
    "float32": "F32",
    "bfloat16": "BF16",
    "float16": "F16",
    "int8": "I8",
}


def _dtype_name(dtype: Any) -> str:
    return _NAMES[str(dtype).removeprefix("torch.")]


def read_header(path: Path) -> tuple[dict[str, Any], int, int]:
    """(tensor table, where the data starts, the file's size) of the safetensors file ``path``; :class:`Damaged`
    where the header is unreadable or its tensors do not fill the file exactly (a file cut short)."""
    size = path.stat().st_size
    with path.open("rb") as fh:
        head = fh.read(8)
        if len(head) < 8:
            raise Damaged(f"{path.name}: {size} bytes, no header")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise Damaged(f"{path.name}: a header of {n:,} bytes in a file of {size:,}")
        try:
            table = json.loads(fh.read(n))
        except ValueError as exc:
            raise Damaged(f"{path.name}: its header is not JSON ({exc})") from None
    if not isinstance(table, dict):
        raise Damaged(f"{path.name}: its header is not a JSON object")
    table.pop("__metadata__", None)
    end = 0
    try:
        for name, entry in sorted(table.items(), key=lambda kv: kv[1]["data_offsets"][0]):
            begin, stop = (int(x) for x in entry["data_offsets"])
            if begin != end or stop < begin:
                raise Damaged(f"{path.name}: {name} at bytes {begin}-{stop}, where {end} was next")
            end = stop
    except (KeyError, TypeError, ValueError, IndexError) as exc:
        raise Damaged(
            f"{path.name}: its header's table is unreadable ({type(exc).__name__}: {exc})"
        ) from None
    if 8 + n + end != size:
        raise Damaged(f"{path.name}: {size:,} bytes where its header says {8 + n + end:,}")
    return table, 8 + n, size


class _Tensors:
    """The tensors of an entry's file: mapped (a private mapping of the whole file, pages read on first use), or
    read into memory of their own (:meth:`read`)."""

    def __init__(self, path: Path):
        import torch

        self.path = path
        self.table, self.start, size = read_header(path)
        self.storage: Any = torch.UntypedStorage.from_file(str(path), shared=False, nbytes=size)
        self.used: set[str] = set()

    def _where(self, name: str, dtype: Any, shape: tuple[int, ...]) -> tuple[int, int]:
        import torch

        entry = self.table.get(name)
        if entry is None:
            raise Damaged(f"{self.path.name} has no tensor {name!r}")
        if entry.get("dtype") != _dtype_name(dtype) or list(entry.get("shape", ())) != list(shape):
            raise Damaged(f"{self.path.name}: {name} is {entry.get('dtype')} {entry.get('shape')}, not "
                          f"{_dtype_name(dtype)} {list(shape)}")  # fmt: skip
        size = torch.empty(0, dtype=dtype).element_size()
        begin = self.start + int(entry["data_offsets"][0])
        if begin % size:
            raise Damaged(f"{self.path.name}: {name} is not aligned to its {size}-byte elements")
        self.used.add(name)
        return begin, size

    def mapped(self, name: str, dtype: Any, shape: tuple[int, ...]) -> Any:
        """Tensor ``name`` (of ``dtype`` and ``shape``, else :class:`Damaged`) over the file's pages."""
        import torch

        begin, size = self._where(name, dtype, shape)
        stride = [math.prod(shape[i + 1 :]) for i in range(len(shape))]  # contiguous
        return torch.empty(0, dtype=dtype).set_(self.storage, begin // size, tuple(shape), stride)

    def read(self, name: str, dtype: Any, shape: tuple[int, ...], fd: int) -> Any:
        """Tensor ``name`` read from the file (``pread``) into memory of its own, no page of the file kept."""
        import torch

        begin, _ = self._where(name, dtype, shape)
        out = torch.empty(tuple(shape), dtype=dtype)
        view = out.reshape(-1).view(torch.uint8).numpy().data
        got = os.preadv(fd, [view], begin) if view.nbytes else 0
        if got != view.nbytes:
            raise Damaged(f"{self.path.name}: {name} is cut short")
        return out


# ------------------------------------------------------------------------------------------------ model entries


def _linears(model: Any) -> list[tuple[str, Any]]:
    from unstereo.engine.kernels.quantised import quantised_linear_class

    cls = quantised_linear_class()
    return [(name, m) for name, m in model.named_modules() if isinstance(m, cls)]


class Writer:
    """The entry ``folder`` of ``file`` in ``form``, written while the model is read from the GGUF file: the header
    of the tensors file is laid out from the model's plan up front (``layers``: the quantised linears, name ->
    (form, whether it has a bias, [out, in]); ``parameters``: every other tensor, (name, dtype, shape)), and each
    tensor is written at its place (``pwrite``) by a thread of its own as soon as the load has made it
    (:meth:`layer`, :meth:`parameter`), so that the writing overlaps the dequantisation; :meth:`finish` writes the
    description and renames the folder into place. It never raises: an entry that cannot be written is dropped
    with a warning (the next load reads the GGUF again). Use it under :func:`locked`."""

    def __init__(self, folder: Path, file: Path, form: str, layers: dict[str, tuple[str, bool, tuple[int, int]]],
                 parameters: list[tuple[str, Any, tuple[int, ...]]]):  # fmt: skip
        import queue
        import threading

        import torch

        self.folder, self.file, self.form, self.layers = folder, file, form, layers
        self.ident = identity(file)
        self.failed: str | None = None
        self.axes: dict[str, int] = {}
        self.tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
        self.t0 = time.perf_counter()
        entries = list(parameters)
        for name, (kind, bias, (out, inp)) in layers.items():
            if kind == "bf16":
                entries.append((f"{name}.weight", torch.bfloat16, (out, inp)))
            else:
                entries += [(f"{name}.int8", torch.int8, (out, inp)), (f"{name}.qscale", torch.float64, (out,)),
                            (f"{name}.qzero", torch.int64, (out,)), (f"{name}.scale", torch.float32, (out,))]  # fmt: skip
            if bias:
                entries.append((f"{name}.bias", torch.float32, (out,)))
        # the widest elements first: every tensor's data then lies aligned to its element size in the file
        entries.sort(key=lambda e: -torch.empty(0, dtype=e[1]).element_size())
        header: dict[str, Any] = {}
        offset = 0
        for name, dtype, shape in entries:
            n = torch.empty(0, dtype=dtype).element_size() * math.prod(shape)
            header[name] = {
                "dtype": _dtype_name(dtype),
                "shape": list(shape),
                "data_offsets": [offset, offset + n],
            }
            offset += n
        header["__metadata__"] = {"format": "pt", "unstereo": f"gguf form v{VERSION}"}
        blob = json.dumps(header, separators=(",", ":")).encode()
        blob += b" " * (-len(blob) % 8)  # as safetensors pads its header: the data starts 8-byte aligned
        self.start, self.size = 8 + len(blob), 8 + len(blob) + offset
        self.header, self.left = header, {name for name, _, _ in entries}
        self.fd = -1
        self.queue: queue.SimpleQueue = queue.SimpleQueue()
        try:
            shutil.rmtree(self.tmp, ignore_errors=True)
            self.tmp.mkdir(parents=True)
            self.fd = os.open(self.tmp / TENSORS, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            self._pwrite(struct.pack("<Q", len(blob)) + blob, 0)
        except OSError as exc:
            self._fail(f"{type(exc).__name__}: {exc}")
        self.thread = threading.Thread(target=self._run, name="form-cache-writer", daemon=True)
        self.thread.start()

    def _fail(self, why: str) -> None:
        if self.failed is None:
            self.failed = why

    def _pwrite(self, data: Any, offset: int) -> None:
        view = memoryview(data).cast("B")
        while view.nbytes:
            n = os.pwrite(self.fd, view[: 256 << 20], offset)  # Linux writes at most 2 GiB a call
            view, offset = view[n:], offset + n

    def _run(self) -> None:
        import torch

        from unstereo.engine.memory import give_back_free_memory

        while True:
            item = self.queue.get()
            if item is None:
                return
            make, transient = item
            if self.failed is not None:
                continue
            try:
                for name, t in make().items():
                    entry = self.header.get(name)
                    if entry is None or name not in self.left:
                        raise ValueError(f"{name}: not in the plan, or made twice")
                    if _dtype_name(t.dtype) != entry["dtype"] or list(t.shape) != entry["shape"]:
                        raise ValueError(
                            f"{name}: {t.dtype} {list(t.shape)}, not {entry['dtype']} {entry['shape']}"
                        )
                    if t.numel():
                        data = t.detach().contiguous().reshape(-1).view(torch.uint8).numpy()
                        self._pwrite(data, self.start + entry["data_offsets"][0])
                    self.left.discard(name)
                    del t
            except Exception as exc:  # noqa: BLE001  (a full disk, a bug: the entry is dropped, the load goes on)
                self._fail(f"{type(exc).__name__}: {exc}")
            if transient:
                # tensors made for the file (an int8 layer unpacked) are freed into this thread's malloc arena,
                # which glibc keeps: 0.55 GB more peak memory by the end of the 1.5B's int8 load without this
                give_back_free_memory()

    def parameter(self, name: str, value: Any) -> None:
        """Write parameter ``name`` (a tensor the model keeps: no copy is made); one outside the plan (a head the
        embedding replaces when it is tied) is left out."""
        if name in self.header and name.rpartition(".")[0] not in self.layers:
            self.queue.put((lambda: {name: value}, False))

    def layer(self, name: str, q: Any) -> None:
        """Write the tensors of the quantised linear ``name`` holding ``q`` (a ``Bf16Linear`` or an ``Int8Linear``,
        whose int8 weight the writer unpacks once: one layer's unpacked copy at a time)."""
        import torch

        kind, bias, _ = self.layers.get(name, (None, False, None))
        if kind == "bf16":
            self.queue.put(
                (lambda: {f"{name}.weight": q.weight, **({f"{name}.bias": q.bias} if bias else {})}, False)
            )
        elif kind == "int8":

            def parts() -> dict[str, Any]:
                weight, b = torch.ops.quantized.linear_unpack(q.packed)
                self.axes[name] = int(weight.q_per_channel_axis())
                out = {f"{name}.int8": weight.int_repr(), f"{name}.qscale": weight.q_per_channel_scales(),
                       f"{name}.qzero": weight.q_per_channel_zero_points(), f"{name}.scale": q.scale}  # fmt: skip
                if bias:
                    out[f"{name}.bias"] = b
                return out

            self.queue.put((parts, True))

    def abort(self) -> None:
        """Drop the entry (the load failed)."""
        self._fail("the load failed")
        self._stop()
        self._discard()

    def _stop(self) -> None:
        if self.thread.is_alive():
            self.queue.put(None)
            self.thread.join()

    def _discard(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1
        shutil.rmtree(self.tmp, ignore_errors=True)

    def finish(self, model: Any, config: dict[str, Any]) -> None:
        """Once every tensor is written, write the entry's description of ``model`` (``config``: the keyword
        arguments of ``AutoConfig.for_model`` it was built from) and rename the entry into place."""
        self._stop()
        names = [name for name, _ in model.named_parameters()]
        layers = {name for name, _ in _linears(model)}
        if self.left:
            self._fail(f"{len(self.left)} tensors were never made: {sorted(self.left)[:3]}")
        if layers != set(self.layers) or set(names) - set(self.header):
            self._fail("the model is not the one planned")
        if identity(self.file) != self.ident or form_folder(self.file, self.form) != self.folder:
            self._fail(f"{self.file} changed while it was read")
        if self.failed is None:
            try:
                size = os.fstat(self.fd).st_size
                if size != self.size:
                    raise OSError(f"{TENSORS} holds {size:,} bytes, not {self.size:,}")
                os.close(self.fd)
                self.fd = -1
                described = {k: {"form": f, "bias": b, **({"axis": self.axes[k]} if f == "int8" else {})}
                             for k, (f, b, _) in self.layers.items()}  # fmt: skip
                meta = {"version": VERSION, "gguf": self.ident, "form": self.form, "config": config,
                        "layers": described, "parameters": names}  # fmt: skip
                (self.tmp / META).write_text(json.dumps(meta, indent=1))
                os.replace(self.tmp, self.folder)
            except (OSError, KeyError, TypeError, ValueError) as exc:
                self._fail(f"{type(exc).__name__}: {exc}")
        self._discard()
        if self.failed is not None:
            log.warning(
                "cannot cache the %s form of %s in %s: %s", self.form, self.file, self.folder, self.failed
            )
        elif self.ident is not None:  # (it is: finish fails where the file's identity changed)
            log.info("cached the %s form of %s in %s (written while it was read: %.1f s)", self.form, self.file,
                     self.folder, time.perf_counter() - self.t0)  # fmt: skip
            evict(self.folder, self.ident, self.form)


def read_model(folder: Path, file: Path, form: str, skeleton: Callable, finish: Callable) -> Any | None:
    """The model of the entry ``folder`` (``file`` in ``form``), as :func:`unstereo.models.gguf_direct.load_gguf`
    returns it, built and finished by that module's ``skeleton`` and ``finish`` (passed in: this module does not
    import the loader that imports it); None where there is no entry, or where it is damaged (then set aside, with
    a warning)."""
    if not folder.exists():
        return None
    t0 = time.perf_counter()
    try:
        model = _build(folder, file, form, skeleton, finish)
    except Exception as exc:  # damaged, or of another layout: derived data, rebuilt from the GGUF
        set_aside(folder, f"{type(exc).__name__}: {exc}")
        return None
    log.info("loaded %s (%s) from its cached form %s in %.1f s", file, form, folder, time.perf_counter() - t0)
    _used(folder)
    return model


def _build(folder: Path, file: Path, form: str, skeleton: Callable, finish: Callable) -> Any:
    import torch

    from unstereo.engine.kernels.bf16 import Bf16Linear
    from unstereo.engine.kernels.int8 import Int8Linear, keeps_outliers
    from unstereo.engine.kernels.quantised import quantised_linear_class

    try:
        meta = json.loads((folder / META).read_text())
    except (OSError, ValueError) as exc:
        raise Damaged(f"{META} unreadable: {exc}") from None
    if not isinstance(meta, dict) or meta.get("version") != VERSION or meta.get("form") != form:
        raise Damaged(f"{META} is not of a version {VERSION} {form} entry")
    if meta.get("gguf") != identity(file):
        raise Damaged(f"{META} describes {meta.get('gguf')}, not {identity(file)}")
    tensors = _Tensors(folder / TENSORS)
    model, own_head = skeleton(meta["config"], form)
    cls = quantised_linear_class()
    fd = os.open(folder / TENSORS, os.O_RDONLY)

    def int8_layer(name: str, shape: tuple[int, int], axis: int, bias: Any) -> Any:
        """The layer as ``Int8Linear.__init__`` leaves it, from its stored parts: what it makes lazily (the outlier
        columns' rows) starts unmade, None; its weight packed again (the same packed weight: the same products)."""
        q = Int8Linear.__new__(Int8Linear)
        for slot in getattr(Int8Linear, "__slots__", ()):
            setattr(q, slot, None)
        q.outliers = keeps_outliers(shape[1], getattr(model.config, "hidden_size", None))
        rows = (shape[0],)
        weight = torch._make_per_channel_quantized_tensor(
            tensors.read(f"{name}.int8", torch.int8, shape, fd),
            tensors.read(f"{name}.qscale", torch.float64, rows, fd),
            tensors.read(f"{name}.qzero", torch.int64, rows, fd),
            axis,
        )
        # the bias as linear_prepack had it on the first load: a tensor of its own, not the file's pages
        q.packed = torch.ops.quantized.linear_prepack(weight, None if bias is None else bias.clone())
        q.scale = tensors.read(f"{name}.scale", torch.float32, rows, fd)
        return q

    try:
        # packing is most of an int8 form's load (about 6 s for the 1.5B on one core) and runs without the GIL
        with ThreadPoolExecutor(max_workers=max(1, min(PACKERS, torch.get_num_threads()))) as pool:
            made: dict[
                str, tuple[Any, Any, str]
            ] = {}  # name -> (the linear, its held form or its Future, form)
            for name, layer in meta["layers"].items():
                module = model.get_submodule(name)
                if type(module) is not torch.nn.Linear or layer["bias"] != (module.bias is not None):
                    raise Damaged(
                        f"{name} is a {type(module).__name__} (bias: {module.bias is not None}), not {layer}"
                    )
                shape, rows = (module.out_features, module.in_features), (module.out_features,)
                bias = tensors.mapped(f"{name}.bias", torch.float32, rows) if layer["bias"] else None
                held: Any
                if layer["form"] == "bf16":
                    held = Bf16Linear(tensors.mapped(f"{name}.weight", torch.bfloat16, shape), bias)
                elif layer["form"] == "int8":
                    held = pool.submit(int8_layer, name, shape, int(layer["axis"]), bias)
                else:
                    raise Damaged(f"{name}: form {layer['form']!r}")
                made[name] = (module, held, layer["form"])
            for name, (module, held, kind) in made.items():
                q = held.result() if isinstance(held, Future) else held
                parent, _, child = name.rpartition(".")
                setattr(
                    model.get_submodule(parent), child, cls(q, module.in_features, module.out_features, kind)
                )
        embedding = model.get_input_embeddings()
        for name in meta["parameters"]:
            owner, _, attr = name.rpartition(".")
            module = model.get_submodule(owner)
            p = module._parameters.get(attr)
            if p is None:
                raise Damaged(f"the model has no parameter {name!r}")
            dtype = torch.bfloat16 if own_head and module is embedding else p.dtype  # as load_gguf holds it
            value = tensors.mapped(name, dtype, tuple(p.shape))
            module._parameters[attr] = torch.nn.Parameter(value, requires_grad=False)
    finally:
        os.close(fd)
    if set(tensors.table) != tensors.used:
        raise Damaged(
            f"{TENSORS} holds tensors the model has no place for: {sorted(set(tensors.table) - tensors.used)[:3]}"
        )
    model = finish(model, file, form, own_head)  # a tied head: the embedding from here on
    missing = [name for name, p in model.named_parameters() if p.device.type == "meta"]
    if missing:
        raise Damaged(f"{TENSORS} lacks {missing[:3]} ({len(missing)} in all)")
    return model


# ------------------------------------------------------------------------------------------------ tokenizers


def read_tokenizer(folder: Path) -> Any | None:
    """The tokenizer of the entry ``folder``; None where there is none, or where it is damaged (set aside)."""
    if not folder.exists():
        return None
    from transformers import AutoTokenizer

    t0 = time.perf_counter()
    try:
        if not (folder / META).is_file():
            raise Damaged(f"no {META}")
        tokenizer = AutoTokenizer.from_pretrained(folder)
    except Exception as exc:
        set_aside(folder, f"{type(exc).__name__}: {exc}")
        return None
    log.info("loaded the tokenizer from its cached form %s in %.1f s", folder, time.perf_counter() - t0)
    _used(folder)
    return tokenizer


def write_tokenizer(folder: Path, tokenizer: Any, file: Path) -> None:
    """Write the tokenizer entry ``folder`` (``save_pretrained``), one process at a time; skipped with a warning
    where it cannot be written."""
    with locked(folder):
        if folder.exists() or folder != tokenizer_folder(file):
            return
        tmp = folder.with_name(f"{folder.name}.tmp{os.getpid()}")
        try:
            shutil.rmtree(tmp, ignore_errors=True)
            tokenizer.save_pretrained(tmp)
            (tmp / META).write_text(json.dumps({"version": VERSION, "gguf": identity(file)}, indent=1))
            os.replace(tmp, folder)
        except Exception as exc:
            log.warning("cannot cache the tokenizer of %s in %s: %s", file, folder, exc)
            return
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    ident = identity(file)
    if ident is not None:
        evict(folder, ident, "tokenizer")


# ------------------------------------------------------------------------------------------------ eviction

#: Entries of the same file and form (or the same file's tokenizer) kept besides the newest: another version of the
#: loader (a second checkout, a branch) finds its own entry; older ones are removed.
KEEP = 1


def _used(folder: Path) -> None:
    """Mark the entry ``folder`` as used now (its description's modification time: :func:`evict` keeps the most
    recently used)."""
    with contextlib.suppress(OSError):
        os.utime(folder / META)


def evict(folder: Path, ident: dict[str, Any], kind: str) -> list[Path]:
    """Remove the entries that the new entry ``folder`` (of the file ``ident``, ``kind`` a form or ``tokenizer``)
    makes stale; return them. Every entry of a GGUF path that no longer exists, or of another version of the same
    file (another size, modification time or inode), can never be read again; of the entries of this very file
    and kind, the :data:`KEEP` most recently used besides ``folder`` stay. Without this a change of the loader's
    source or of a package leaves a whole model's form behind each time (3.4 GB for the 1.5B in bf16). An entry is
    renamed first (a reader finds it gone and loads from the GGUF) and then deleted; what cannot be removed stays."""
    tokenizer = kind == "tokenizer"
    mine: list[tuple[float, Path]] = []
    stale: list[Path] = []
    try:
        entries = [e for e in folder.parent.iterdir() if e != folder and e.is_dir() and "." not in e.name]
    except OSError:
        return []
    for entry in entries:
        if entry.name.endswith("-tokenizer") != tokenizer:
            continue
        try:
            meta = json.loads((entry / META).read_text())
            when = (entry / META).stat().st_mtime
            of = meta["gguf"]
            path = Path(of["path"])
        except (OSError, ValueError, KeyError, TypeError):
            continue  # a damaged entry is its reader's to set aside
        if not path.exists() or (of.get("path") == ident["path"] and of != ident):
            stale.append(entry)
        elif of == ident and (tokenizer or meta.get("form") == kind):
            mine.append((when, entry))
    mine.sort(reverse=True)
    stale += [entry for _, entry in mine[KEEP:]]
    removed = []
    for entry in stale:
        gone = entry.with_name(f"{entry.name}.tmp-evicted{os.getpid()}")
        try:
            os.replace(entry, gone)
        except OSError:
            continue
        shutil.rmtree(gone, ignore_errors=True)
        removed.append(entry)
    if removed:
        log.info(
            "removed %d cached forms made stale by %s: %s",
            len(removed),
            folder.name,
            [e.name for e in removed],
        )
    return removed
