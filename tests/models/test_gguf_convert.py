"""The machine-wide cache of GGUF conversions (unstereo.models.gguf_convert), with a stand-in for the slow dequantisation:
one conversion per distinct file, linked from beside every copy; stale folders converted again; a cache that cannot
be written falls back to converting beside the file."""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil

import pytest
import torch
from safetensors.torch import save_file

import unstereo.models.gguf_convert as gguf_convert
from unstereo.errors import UnstereoError
from unstereo.io import CACHE_ENV


class FakeConvert:
    """Writes a folder the way dequantise does (config, weights, marker) and counts calls."""

    def __init__(self):
        self.calls = []

    def __call__(self, path, gguf_file, out):
        self.calls.append(out)
        shutil.rmtree(out, ignore_errors=True)  # as dequantise: whatever was there is replaced
        out.mkdir(parents=True)
        (out / "config.json").write_text(json.dumps({"from": str(path / gguf_file)}))
        save_file({"w": torch.zeros(3)}, str(out / "model.safetensors"))  # 8 + header + 12 bytes of data
        (out / gguf_convert.MARKER).write_text(json.dumps({"version": gguf_convert.CONVERSION_VERSION}))


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(root))
    return root


def _gguf(folder, data=b"GGUF-bytes", name="m.gguf"):
    folder.mkdir(parents=True, exist_ok=True)
    (folder / name).write_bytes(data)
    return folder / f"{name}.hf"


def test_two_copies_of_one_file_convert_once(tmp_path, cache):
    convert = FakeConvert()
    a, b = _gguf(tmp_path / "default"), _gguf(tmp_path / ".test")
    assert gguf_convert.converted_folder(tmp_path / "default", "m.gguf", a, convert) == a
    assert gguf_convert.converted_folder(tmp_path / ".test", "m.gguf", b, convert) == b
    assert len(convert.calls) == 1
    sha = hashlib.sha256(b"GGUF-bytes").hexdigest()
    assert convert.calls[0] == cache / "gguf-hf" / f"{sha[:24]}-v{gguf_convert.CONVERSION_VERSION}"
    assert a.is_symlink() and b.is_symlink()
    assert os.path.realpath(a) == os.path.realpath(b) == str(convert.calls[0])
    assert json.loads((b / "config.json").read_text()) == {"from": str(tmp_path / "default" / "m.gguf")}
    # a third call finds the folder beside the file current: nothing to do
    assert gguf_convert.converted_folder(tmp_path / "default", "m.gguf", a, convert) == a
    assert len(convert.calls) == 1


def test_other_bytes_are_another_conversion(tmp_path, cache):
    convert = FakeConvert()
    a, b = _gguf(tmp_path / "x", b"one"), _gguf(tmp_path / "y", b"two")
    gguf_convert.converted_folder(tmp_path / "x", "m.gguf", a, convert)
    gguf_convert.converted_folder(tmp_path / "y", "m.gguf", b, convert)
    assert len(convert.calls) == 2 and os.path.realpath(a) != os.path.realpath(b)


def test_a_folder_of_an_older_conversion_is_replaced(tmp_path, cache):
    convert = FakeConvert()
    beside = _gguf(tmp_path / "r")
    beside.mkdir()
    (beside / "config.json").write_text("{}")  # converted before the marker existed (no tokenizer repair)
    gguf_convert.converted_folder(tmp_path / "r", "m.gguf", beside, convert)
    assert len(convert.calls) == 1 and beside.is_symlink()
    # a dangling link (the cache was cleared) is converted again too
    for p in cache.rglob("*"):
        if p.is_file():
            p.unlink()
    gguf_convert.converted_folder(tmp_path / "r", "m.gguf", beside, convert)
    assert len(convert.calls) == 2


def test_an_unwritable_cache_converts_beside_the_file(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("not a folder")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "file" / "cache"))
    convert = FakeConvert()
    beside = _gguf(tmp_path / "r")
    assert gguf_convert.converted_folder(tmp_path / "r", "m.gguf", beside, convert) == beside
    assert convert.calls == [beside] and not beside.is_symlink()


def test_sha_from_the_resource_manifest_when_it_lists_the_file(tmp_path):
    beside = _gguf(tmp_path / "r", b"abc")
    gguf = beside.with_name("m.gguf")
    real = hashlib.sha256(b"abc").hexdigest()
    assert gguf_convert.gguf_sha256(gguf) == real
    (tmp_path / "r" / "RESOURCE.json").write_text(
        json.dumps({"files": {"m.gguf": {"sha256": "f" * 64, "size": 3}}})
    )
    assert gguf_convert.gguf_sha256(gguf) == "f" * 64  # the manifest's, no hashing of a 500 MB file
    (tmp_path / "r" / "RESOURCE.json").write_text(
        json.dumps({"files": {"m.gguf": {"sha256": "f" * 64, "size": 9}}})
    )
    assert gguf_convert.gguf_sha256(gguf) == real  # size differs: the manifest is not about these bytes


def test_missing_file_is_an_error(tmp_path, cache):
    with pytest.raises(UnstereoError, match="GGUF file not found"):
        gguf_convert.converted_folder(tmp_path, "absent.gguf", tmp_path / "absent.gguf.hf", FakeConvert())


@pytest.mark.parametrize(
    "damage, why",
    [
        ("config-missing", "config.json unreadable"),
        ("config-not-object", "not a JSON object"),
        ("weights-missing", "no [*].safetensors"),
        ("weights-cut", "bytes where its header says"),  # a conversion cut short by a full disk
        ("weights-empty", "unreadable header"),
        ("weights-random", "header of"),  # 8 random bytes read as the header's length: more than the file
    ],
)
def test_a_damaged_conversion_is_set_aside_and_converted_again(tmp_path, cache, caplog, damage, why):
    """A finished conversion (marker present) whose files are damaged is renamed <folder>.damaged-<time>, never
    deleted, with a warning naming it, and the GGUF file is converted again."""
    convert = FakeConvert()
    beside = _gguf(tmp_path / "r")
    gguf_convert.converted_folder(tmp_path / "r", "m.gguf", beside, convert)
    folder = beside.resolve()
    weights = folder / "model.safetensors"
    if damage == "config-missing":
        (folder / "config.json").unlink()
    elif damage == "config-not-object":
        (folder / "config.json").write_text("[1, 2]")
    elif damage == "weights-missing":
        weights.unlink()
    elif damage == "weights-cut":
        weights.write_bytes(weights.read_bytes()[:-4])
    elif damage == "weights-empty":
        weights.write_bytes(b"")
    else:
        weights.write_bytes(os.urandom(64))
    assert gguf_convert.conversion_damage(folder) is not None
    gguf_convert.converted_folder(tmp_path / "r", "m.gguf", beside, convert)
    assert len(convert.calls) == 2 and gguf_convert.conversion_damage(beside) is None
    aside = list(folder.parent.glob(folder.name + ".damaged-*"))
    assert len(aside) == 1 and (aside[0] / gguf_convert.MARKER).exists()  # kept, renamed
    assert re.search(why, caplog.text) and str(folder) in caplog.text and "set aside" in caplog.text


def test_the_real_conversion_parses_the_file_once(tmp_path, resource, monkeypatch):
    """transformers parses a GGUF file for its config, twice for the tokenizer and again for the weights; the
    conversion reads it once for all of them, and the folder it writes tokenizes as the GGUF's own tokenizer."""
    import gguf
    from transformers import AutoTokenizer

    folder = resource("smollm2")
    name = "SmolLM2-135M-Instruct.Q4_1.gguf"
    parses = []
    original = gguf.GGUFReader

    def counted(path, mode="r"):
        parses.append(str(path))
        return original(path, mode)

    monkeypatch.setattr(gguf, "GGUFReader", counted)
    out = tmp_path / "hf"
    gguf_convert.dequantise(folder, name, out)
    assert len(parses) == 1, parses
    assert gguf.GGUFReader is counted  # the block puts back the reader it found
    text = "The nurse said she would be late."
    # transformers' own reading of the file, outside the conversion
    raw = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    assert AutoTokenizer.from_pretrained(out)(text)["input_ids"] == raw(text)["input_ids"]
    assert (out / "model.safetensors").exists() and json.loads((out / gguf_convert.MARKER).read_text())
