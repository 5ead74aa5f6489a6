"""A GGUF file checked before anything converts or loads it: one clear error naming the file instead of a numpy
reshape error deep inside a loader (a file cut short at 50 MB ended in ``ValueError: cannot reshape array
of size 399424 into shape (576,960)``).

:func:`check_gguf` reads the header and the tensor table (no tensor data) and checks that the file starts with the
GGUF magic, that every tensor's data lies inside the file, and that transformers can load the file's architecture. Any loader of a GGUF file (the conversion of
:mod:`unstereo.models.gguf_convert`, a direct int8 load) calls it first; it costs the parse of the header (well
under a second for the offline models), paid once per conversion.
"""

from __future__ import annotations

import math
from pathlib import Path

from unstereo.errors import InputError

MAGIC = b"GGUF"
MEND = "fetch it again (`unstereo resources fetch NAME`, or copy the file anew)"


_SCALAR = {0: "B", 1: "b", 2: "H", 3: "h", 4: "I", 5: "i", 6: "f", 7: "?", 10: "Q", 11: "q", 12: "d"}
_STRING, _ARRAY = 8, 9


class _Short(Exception):
    """The header ends before its declared content."""


class _Header:
    """The parts of a GGUF header a check needs: version, metadata (scalars and strings; arrays skipped), the
    tensor table (name, shape, ggml type, offset) and where the tensor data starts. Parsed here rather than by
    :class:`gguf.GGUFReader`, which builds a numpy view per metadata item (4-10 s for the offline models' tokenizer
    arrays on a busy 2-core machine; this parse takes a fraction of a second)."""

    def __init__(self, fh):
        import struct

        self._fh, self._struct = fh, struct
        self.version = self._read("I")
        if self.version < 2:
            raise ValueError(f"GGUF version {self.version} (this reader knows versions 2 and 3)")
        n_tensors, n_kv = self._read("Q"), self._read("Q")
        self.metadata: dict[str, object] = {}
        for _ in range(n_kv):
            key = self._string()
            self.metadata[key] = self._value(self._read("I"))
        self.tensors = []
        for _ in range(n_tensors):
            name = self._string()
            dims = [self._read("Q") for _ in range(self._read("I"))]
            self.tensors.append((name, dims, self._read("I"), self._read("Q")))
        align = self.metadata.get("general.alignment", 32)
        if not isinstance(align, int) or align <= 0:
            raise ValueError(f"general.alignment is {align!r}")
        here = fh.tell()
        self.data_start = here + (-here) % align

    def _bytes(self, n: int) -> bytes:
        data = self._fh.read(n)
        if len(data) < n:
            raise _Short()
        return data

    def _read(self, fmt: str):
        size = self._struct.calcsize("<" + fmt)
        return self._struct.unpack("<" + fmt, self._bytes(size))[0]

    def _string(self) -> str:
        n = self._read("Q")
        if n > 1 << 30:
            raise ValueError(f"a string of {n:,} bytes")
        return self._bytes(n).decode("utf-8", errors="replace")

    def _value(self, kind: int):
        if kind in _SCALAR:
            return self._read(_SCALAR[kind])
        if kind == _STRING:
            return self._string()
        if kind == _ARRAY:
            item, n = self._read("I"), self._read("Q")
            if item in _SCALAR:  # skipped: a check needs no array's values
                self._fh.seek(n * self._struct.calcsize("<" + _SCALAR[item]), 1)
            else:
                for _ in range(n):
                    self._value(item)
            return None
        raise ValueError(f"unknown metadata type {kind}")


def check_gguf(path: str | Path, architectures: list[str] | None = None) -> str:
    """Check the GGUF file ``path``; return its architecture (``general.architecture``).

    Raises :class:`~unstereo.errors.InputError` naming the file when it is missing, empty, not a GGUF file
    (another format, random bytes), damaged or cut short (in its header, or a tensor's data running past the end)
    or of an architecture not in ``architectures`` (default: those transformers' GGUF loader supports)."""
    from gguf.constants import GGML_QUANT_SIZES, GGMLQuantizationType

    path = Path(path)
    if not path.is_file():
        raise InputError("GGUF file not found", path=path)
    size = path.stat().st_size
    if size == 0:
        raise InputError(f"the GGUF file is empty; {MEND}", path=path)
    with path.open("rb") as fh:
        head = fh.read(4)
        if head != MAGIC:
            raise InputError(f"not a GGUF file (it starts with {head!r}, not {MAGIC!r}); {MEND}", path=path)
        try:
            header = _Header(fh)
        except _Short:
            raise InputError(
                f"the GGUF file is cut short inside its header ({size:,} bytes); {MEND}", path=path
            ) from None
        except (ValueError, OverflowError, MemoryError) as exc:
            raise InputError(f"the GGUF file is damaged: its header has {exc}; {MEND}", path=path) from exc
    for name, dims, kind, offset in header.tensors:
        try:
            block, type_size = GGML_QUANT_SIZES[GGMLQuantizationType(kind)]
        except (ValueError, KeyError):
            raise InputError(
                f"the GGUF file is damaged: tensor {name!r} has unknown type {kind}; {MEND}", path=path
            ) from None
        end = header.data_start + offset + math.prod(dims) // block * type_size
        if end > size:
            raise InputError(
                f"the GGUF file is cut short: tensor {name!r} ends at byte {end:,}, the file has {size:,} "
                f"bytes; {MEND}",
                path=path,
            )
    arch = header.metadata.get("general.architecture")
    if not isinstance(arch, str):
        raise InputError(f"the GGUF file names no architecture (general.architecture); {MEND}", path=path)
    if architectures is None:
        from transformers.modeling_gguf_pytorch_utils import GGUF_SUPPORTED_ARCHITECTURES

        # the mapping's keys are the architectures, plus two sections that are not ones
        architectures = [a for a in GGUF_SUPPORTED_ARCHITECTURES if a not in ("general", "tokenizer")]
    if arch not in architectures:
        raise InputError(
            f"GGUF architecture {arch!r} is not one this project can load (transformers loads: "
            f"{', '.join(sorted(architectures))}); give a model of one of those",
            path=path,
        )
    return arch
