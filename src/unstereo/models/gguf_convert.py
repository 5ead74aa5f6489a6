"""GGUF files converted once into Hugging Face folders, shared by every config and run on the machine.

Dequantising a GGUF file takes 20-60 s on a small CPU, so it is done once: into a content-addressed cache
(``$UNSTEREO_CACHE_DIR``, else ``$XDG_CACHE_HOME/unstereo``, else ``~/.cache/unstereo``; folder
``gguf-hf/<sha256 prefix>-v<conversion version>``), and the folder beside the file (``<file>.gguf.hf``) links to
it. Two configs with their own resource folders (the default and ``.test``) or a fresh clone thus reuse one
conversion of the same bytes. When the cache cannot be written the conversion goes beside the file.

The conversion writes fp32 weights without the quantisation config, and the tokenizer as every consumer needs it:
for Gemma files the Unigram tokenizer transformers builds is replaced by the equivalent BPE model
(:mod:`unstereo.models.gguf_tokenizer`), so the folder loads correctly in plain transformers or lm-eval too.
A folder of another conversion version (e.g. made before the tokenizer repair) is converted again.
"""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

from unstereo.defaults import RESOURCE_MANIFEST
from unstereo.errors import UnstereoError
from unstereo.io import cache_root, set_aside, sha256_file
from unstereo.log import get_logger

log = get_logger("models")

# 2: the Gemma tokenizer is repaired at conversion.
CONVERSION_VERSION = 2
MARKER = "unstereo-conversion.json"


def is_current(folder: Path) -> bool:
    """True when ``folder`` holds a finished conversion of the current version."""
    try:
        return json.loads((folder / MARKER).read_text()).get("version") == CONVERSION_VERSION
    except (OSError, ValueError):
        return False


def conversion_damage(folder: Path) -> str | None:
    """Why a finished conversion ``folder`` cannot be loaded, or None: its ``config.json`` is not a JSON object, or a
    ``*.safetensors`` file is cut short or damaged (its header, an 8-byte length and a JSON table of tensors whose
    data offsets must end exactly at the file's end). Reads only the headers: a few KiB per file."""
    import struct

    try:
        config = json.loads((folder / "config.json").read_text())
    except (OSError, ValueError) as exc:
        return f"config.json unreadable: {exc}"
    if not isinstance(config, dict):
        return "config.json is not a JSON object"
    weights = sorted(folder.glob("*.safetensors"))
    if not weights:
        return "no *.safetensors weights"
    for path in weights:
        try:
            size = path.stat().st_size
            with path.open("rb") as fh:
                (n,) = struct.unpack("<Q", fh.read(8))
                if n > size - 8:
                    return f"{path.name}: header of {n:,} bytes in a file of {size:,}"
                table = json.loads(fh.read(n))
            end = max((int(t["data_offsets"][1]) for k, t in table.items() if k != "__metadata__"), default=0)
        except (OSError, ValueError, KeyError, TypeError, IndexError, struct.error, AttributeError) as exc:
            return f"{path.name}: unreadable header ({type(exc).__name__}: {exc})"
        if 8 + n + end != size:
            return f"{path.name}: {size:,} bytes where its header says {8 + n + end:,}"
    return None


def _sound(folder: Path) -> bool:
    """True when ``folder`` holds a finished, loadable conversion of the current version; a finished one that is
    damaged (:func:`conversion_damage`) is set aside (renamed, never deleted), so that it is converted again."""
    if not is_current(folder):
        return False
    why = conversion_damage(folder)
    if why is None:
        return True
    set_aside(folder.resolve(), why)
    return False


def gguf_sha256(path: Path) -> str:
    """sha256 of a GGUF file: from the resource manifest beside it when it lists the file, else computed."""
    manifest = path.parent / RESOURCE_MANIFEST
    try:
        entry = json.loads(manifest.read_text())["files"][path.name]
        if entry["size"] == path.stat().st_size:
            return entry["sha256"]
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return sha256_file(path)


def dequantise(path: Path, gguf_file: str, out: Path) -> None:
    """Write the Hugging Face folder of ``path/gguf_file`` into ``out`` (atomically: a temporary sibling folder)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from unstereo.models.gguf_check import check_gguf
    from unstereo.models.gguf_direct import one_reader
    from unstereo.models.gguf_tokenizer import needs_bpe_repair, repair_gemma_tokenizer

    check_gguf(path / gguf_file)  # a file cut short or of another architecture: one line naming it
    log.info("converting %s to a Hugging Face folder %s (once)", path / gguf_file, out)
    # transformers parses the whole file for each of these calls (config and tokenizer twice, the model once
    # more); the parse of a large vocabulary is most of a conversion, so the file is parsed once for all of them
    with one_reader():
        tokenizer = AutoTokenizer.from_pretrained(path, gguf_file=gguf_file)
        model = AutoModelForCausalLM.from_pretrained(path, gguf_file=gguf_file, dtype=torch.float32)
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
    if needs_bpe_repair(model, tokenizer):
        tokenizer = repair_gemma_tokenizer(tokenizer)
    tmp = out.with_name(out.name + f".tmp{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    model.save_pretrained(tmp, safe_serialization=True)
    tokenizer.save_pretrained(tmp)
    (tmp / MARKER).write_text(json.dumps({"version": CONVERSION_VERSION, "gguf_file": gguf_file}))
    _remove(out)
    os.replace(tmp, out)  # a killed conversion leaves no half folder behind


def _remove(path: Path) -> None:
    if path.is_symlink() or path.is_file():
        path.unlink()
    elif path.exists():
        shutil.rmtree(path)


def _link(beside: Path, target: Path) -> None:
    """Point ``beside`` at ``target`` (atomically replacing whatever was there)."""
    tmp = beside.with_name(beside.name + f".link{os.getpid()}")
    _remove(tmp)
    os.symlink(target, tmp, target_is_directory=True)
    if beside.exists() and not beside.is_symlink():
        shutil.rmtree(beside)  # a stale folder of an older conversion
    os.replace(tmp, beside)


def converted_folder(path: str | Path, gguf_file: str, beside: Path, convert=dequantise) -> Path:
    """The Hugging Face folder of ``path/gguf_file``: ``beside`` when current, else a cached conversion of the same
    bytes (linked from ``beside``), else a new conversion into the cache (or beside, when the cache is not
    writable). ``convert(path, gguf_file, out)`` does the work (a test hook)."""
    gguf = Path(path) / gguf_file
    if _sound(beside):
        return beside
    if not gguf.is_file():
        raise UnstereoError(f"GGUF file not found: {gguf}")
    cached = cache_root() / "gguf-hf" / f"{gguf_sha256(gguf)[:24]}-v{CONVERSION_VERSION}"
    try:
        cached.parent.mkdir(parents=True, exist_ok=True)
        writable = os.access(cached.parent, os.W_OK)
    except OSError:
        writable = False
    if not writable:
        log.warning("the conversion cache %s is not writable; converting beside the file", cached.parent)
        convert(Path(path), gguf_file, beside)
        return beside
    if _sound(cached):
        log.info("%s: reusing the conversion in %s", gguf, cached)
    else:
        convert(Path(path), gguf_file, cached)
    _link(beside, cached)
    return beside
