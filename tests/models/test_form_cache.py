"""The cached forms of a GGUF file loaded straight into bf16, int8 or fp32 layers (:mod:`unstereo.models.form_cache`):
a second load reads the cache instead of the GGUF file and gives the same model to the bit; a damaged entry is set
aside and the file read again; a changed file is another entry."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from _scoring_models import tiny_qwen2_gguf, word_tokenizer

from unstereo.engine.kernels import bf16, int8, quantised
from unstereo.io import CACHE_ENV
from unstereo.models import form_cache, gguf_direct

pytestmark = pytest.mark.skipif(not int8.works(), reason="this PyTorch has no int8 dynamic linear")

IDS = torch.tensor([[2, 4, 5, 6, 7, 8], [2, 9, 10, 11, 12, 13], [2, 14, 15, 16, 17, 18]])


@pytest.fixture
def cache(tmp_path, monkeypatch):
    root = tmp_path / "cache"
    monkeypatch.setenv(CACHE_ENV, str(root))
    monkeypatch.delenv(form_cache.ENV, raising=False)
    return root


@pytest.fixture(scope="module", params=[True, False], ids=["tied", "untied"])
def gguf_file(request, tmp_path_factory):
    return tiny_qwen2_gguf(tmp_path_factory.mktemp("gguf"), tie=request.param)


@pytest.fixture
def reads(monkeypatch):
    """How many times the GGUF file's tensors and metadata were read."""
    counts = {"tensors": 0, "parse": 0}
    read, direct = gguf_direct._read, gguf_direct._load_direct

    def counted_read(fd, tensor):
        counts["tensors"] += 1
        return read(fd, tensor)

    def counted_direct(*a, **k):
        counts["parse"] += 1
        return direct(*a, **k)

    monkeypatch.setattr(gguf_direct, "_read", counted_read)
    monkeypatch.setattr(gguf_direct, "_load_direct", counted_direct)
    return counts


def _load(file: Path, form: str):
    return gguf_direct.load_gguf(file.parent, file.name, form)


def _logits(model):
    # no_grad, not inference_mode: bf16.widened keeps one scratch buffer for the process (bf16._scratch), and one
    # made in inference mode cannot be written outside it (a later test of tests/engine/test_bf16.py)
    with torch.no_grad():
        plain = model(input_ids=IDS).logits
        with quantised.exact_products(model):
            exact = model(input_ids=IDS).logits
    return plain, exact


def _entries(root: Path) -> list[Path]:
    return sorted(p for p in (root / form_cache.FOLDER).glob("*") if p.is_dir())


def _same_model(a, b) -> None:
    """The attributes the engine and its probe memo read, and every tensor the model holds, equal."""
    assert (a.name_or_path, a.unstereo_form, a.training) == (b.name_or_path, b.unstereo_form, b.training)
    assert a.config.to_json_string(use_diff=False) == b.config.to_json_string(use_diff=False)
    assert type(a) is type(b) and a.config._attn_implementation == b.config._attn_implementation
    tied = a.config.tie_word_embeddings
    for m in (a, b):
        assert (getattr(m.lm_head, "weight", None) is m.model.embed_tokens.weight) == tied
    assert type(a.lm_head) is type(b.lm_head)
    hooks = [list(m.model.embed_tokens._forward_hooks.values()) for m in (a, b)]
    assert hooks[0] == hooks[1]
    pa, pb = dict(a.named_parameters()), dict(b.named_parameters())
    assert pa.keys() == pb.keys()
    for name in pa:
        assert pa[name].dtype == pb[name].dtype and torch.equal(pa[name], pb[name]), name
        assert not pb[name].requires_grad
    la = {n: m for n, m in a.named_modules() if isinstance(m, quantised.quantised_linear_class())}
    lb = {n: m for n, m in b.named_modules() if isinstance(m, quantised.quantised_linear_class())}
    assert la.keys() == lb.keys()
    for name, m in la.items():
        q, r = m.q, lb[name].q
        assert type(q) is type(r) and (m.in_features, m.out_features, m.form) == (
            lb[name].in_features,
            lb[name].out_features,
            lb[name].form,
        )
        if isinstance(q, int8.Int8Linear):
            (wa, ba), (wb, bb) = (torch.ops.quantized.linear_unpack(x.packed) for x in (q, r))
            assert torch.equal(wa.int_repr(), wb.int_repr())
            assert torch.equal(wa.q_per_channel_scales(), wb.q_per_channel_scales())
            assert torch.equal(q.scale, r.scale)
            # what the layer makes lazily (the outlier columns' rows) is unmade in both, as __init__ leaves it
            lazy = set(getattr(int8.Int8Linear, "__slots__", ())) - {"packed", "scale", "outliers"}
            assert lazy and all(getattr(x, s, None) is None for s in lazy for x in (q, r))
            # the fp32 outlier path where the loader keeps it: the down projections (input wider than hidden)
            assert q.outliers is r.outliers is name.endswith("down_proj"), name
            assert (ba is None and bb is None) or torch.equal(ba, bb)
        else:
            assert q.weight.dtype == r.weight.dtype == torch.bfloat16 and torch.equal(q.weight, r.weight)
            assert (q.bias is None and r.bias is None) or torch.equal(q.bias, r.bias)


@pytest.mark.parametrize("form", gguf_direct.FORMS)
def test_the_second_load_reads_the_cached_form_and_gives_the_same_model(gguf_file, cache, reads, form):
    first = _load(gguf_file, form)
    assert reads["parse"] == 1 and reads["tensors"] > 0 and len(_entries(cache)) == 1
    reads.update(tensors=0, parse=0)
    second = _load(gguf_file, form)
    assert reads == {"tensors": 0, "parse": 0}  # no tensor of the GGUF file read, no parse of it
    _same_model(first, second)
    for want, got in zip(_logits(first), _logits(second), strict=True):
        assert torch.equal(want, got)  # to the bit, in the form's products and in the probe's exact ones


@pytest.mark.parametrize("form", ["int8", "bfloat16"])
def test_every_repacked_layer_multiplies_to_the_bit_as_the_first_load(gguf_file, cache, form):
    first, second = _load(gguf_file, form), _load(gguf_file, form)
    g = torch.Generator().manual_seed(1)
    cls = quantised.quantised_linear_class()
    layers = [(n, m) for n, m in first.named_modules() if isinstance(m, cls)]
    assert layers
    for name, layer in layers:
        x = torch.randn(5, 3, layer.in_features, generator=g)
        x[1, 2, 3] = 40.0  # an outlier column: int8's fp32 route over the transposed weight
        other = second.get_submodule(name)
        assert torch.equal(layer.q(x), other.q(x)) and torch.equal(layer.q.exact(x), other.q.exact(x)), name
        if isinstance(layer.q, int8.Int8Linear):  # (an untied head is held in bf16 in both forms)
            assert torch.equal(layer.q(x, threshold=1e9), other.q(x, threshold=1e9))


def test_the_engine_and_its_probe_memo_see_the_same_model(gguf_file, cache):
    from unstereo.engine.engine import SamplingEngine

    tok = word_tokenizer()
    tok.padding_side = "left"
    for form in gguf_direct.FORMS:
        first, second = _load(gguf_file, form), _load(gguf_file, form)
        keys = [SamplingEngine(m, tok, slots=2, products=form).probe_key() for m in (first, second)]
        assert keys[0] == keys[1]


@pytest.mark.skipif(not Path("/proc/self/maps").exists(), reason="no /proc/self/maps here")
def test_the_cached_tensors_are_pages_of_the_file(gguf_file, cache):
    _load(gguf_file, "bfloat16")
    model = _load(gguf_file, "bfloat16")
    (entry,) = _entries(cache)
    maps = [line.split() for line in Path("/proc/self/maps").read_text().splitlines()]
    ranges = [
        tuple(int(x, 16) for x in m[0].split("-")) for m in maps if m[-1] == str(entry / form_cache.TENSORS)
    ]
    tensors = [model.model.layers[0].mlp.down_proj.q.weight, model.model.norm.weight]
    for t in tensors:
        assert any(lo <= t.data_ptr() < hi for lo, hi in ranges)  # mapped from the file, no copy


def test_an_entry_is_a_safetensors_file(gguf_file, cache):
    from safetensors import safe_open

    _load(gguf_file, "int8")
    (entry,) = _entries(cache)
    meta = json.loads((entry / form_cache.META).read_text())
    assert meta["form"] == "int8" and meta["gguf"]["size"] == gguf_file.stat().st_size
    with safe_open(str(entry / form_cache.TENSORS), "pt") as fh:
        names = set(fh.keys())
        down = fh.get_tensor("model.layers.0.mlp.down_proj.int8")
    assert "model.layers.0.mlp.down_proj.scale" in names and down.dtype == torch.int8
    model = _load(gguf_file, "int8")
    q, _ = torch.ops.quantized.linear_unpack(model.model.layers[0].mlp.down_proj.q.packed)
    assert torch.equal(q.int_repr(), down)


def _truncate(entry: Path) -> None:
    path = entry / form_cache.TENSORS
    os.truncate(path, path.stat().st_size - 100)


def _garbage_meta(entry: Path) -> None:
    (entry / form_cache.META).write_bytes(b"\x00\xff not json")


def _no_tensors(entry: Path) -> None:
    (entry / form_cache.TENSORS).unlink()


def _other_shapes(entry: Path) -> None:
    meta = json.loads((entry / form_cache.META).read_text())
    meta["config"]["hidden_size"] = 32  # a header that does not fit the model the entry describes
    (entry / form_cache.META).write_text(json.dumps(meta))


def _cut_header(entry: Path) -> None:
    path = entry / form_cache.TENSORS
    os.truncate(path, 5)


@pytest.mark.parametrize("damage", [_truncate, _garbage_meta, _no_tensors, _other_shapes, _cut_header])
@pytest.mark.parametrize("form", ["int8", "bfloat16"])
def test_a_damaged_entry_is_set_aside_and_the_gguf_read_again(gguf_file, cache, reads, caplog, damage, form):
    want = _logits(_load(gguf_file, form))
    (entry,) = _entries(cache)
    damage(entry)
    reads.update(tensors=0, parse=0)
    with caplog.at_level("WARNING"):
        model = _load(gguf_file, form)
    assert reads["parse"] == 1 and reads["tensors"] > 0  # read from the GGUF file again
    assert any("is damaged" in r.getMessage() and str(entry) in r.getMessage() for r in caplog.records)
    aside = [p for p in entry.parent.iterdir() if p.name.startswith(f"{entry.name}.damaged-")]
    assert len(aside) == 1 and aside[0].is_dir()  # kept for inspection, never deleted
    for a, b in zip(want, _logits(model), strict=True):
        assert torch.equal(a, b)
    reads.update(tensors=0, parse=0)
    again = _load(gguf_file, form)  # and a sound entry took its place
    assert reads["parse"] == 0 and torch.equal(_logits(again)[0], want[0])


def test_a_changed_gguf_file_does_not_use_the_old_entry(tmp_path, cache, reads):
    file = tiny_qwen2_gguf(tmp_path / "m", seed=0)
    old = _logits(_load(file, "int8"))[0]
    reads.update(tensors=0, parse=0)
    st = file.stat()
    os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # the same bytes, another modification time
    first = _entries(cache)
    _load(file, "int8")
    assert (
        reads["parse"] == 1 and len(_entries(cache)) == 1 and _entries(cache) != first
    )  # the old one removed
    tiny_qwen2_gguf(tmp_path / "m", seed=1, tie=False)  # other weights, another size, at the same path
    assert file.stat().st_size != st.st_size
    reads.update(tensors=0, parse=0)
    second = _entries(cache)
    new = _logits(_load(file, "int8"))[0]
    assert reads["parse"] == 1 and len(_entries(cache)) == 1 and _entries(cache) != second
    direct = _logits(gguf_direct._load_direct(file, "int8"))[0]
    assert torch.equal(new, direct) and not torch.equal(new, old)


def test_the_tokenizer_is_cached_with_the_model(gguf_file, cache, reads, monkeypatch):
    parsed = []

    def read_tokenizer(path, name):
        parsed.append(name)
        return word_tokenizer()

    monkeypatch.setattr(gguf_direct, "read_gguf_tokenizer", read_tokenizer)
    model, tok = gguf_direct.load_gguf_with_tokenizer(gguf_file.parent, gguf_file.name, "int8")
    assert parsed == [gguf_file.name]
    reads.update(tensors=0, parse=0)
    again, tok2 = gguf_direct.load_gguf_with_tokenizer(gguf_file.parent, gguf_file.name, "int8")
    assert parsed == [gguf_file.name] and reads == {"tensors": 0, "parse": 0}  # neither parsed again
    text = "she went to the store . nobody expected it"
    assert tok(text)["input_ids"] == tok2(text)["input_ids"] and type(tok) is type(tok2)
    assert (tok.bos_token, tok.eos_token, tok.pad_token) == (tok2.bos_token, tok2.eos_token, tok2.pad_token)
    # another form of the same file: the tokenizer is the file's, read from the cache too
    gguf_direct.load_gguf_with_tokenizer(gguf_file.parent, gguf_file.name, "bfloat16")
    assert parsed == [gguf_file.name]
    # a damaged tokenizer entry is set aside and the tokenizer read from the file again
    (folder,) = [p for p in _entries(cache) if p.name.endswith("-tokenizer")]
    (folder / "tokenizer.json").write_text("{ cut")
    _, tok3 = gguf_direct.load_gguf_with_tokenizer(gguf_file.parent, gguf_file.name, "int8")
    assert len(parsed) == 2 and tok3(text)["input_ids"] == tok(text)["input_ids"]
    assert any(p.name.startswith(f"{folder.name}.damaged-") for p in folder.parent.iterdir())


def test_a_cache_that_cannot_be_written_costs_nothing_but_the_time(gguf_file, tmp_path, monkeypatch, reads):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv(CACHE_ENV, str(tmp_path / "file" / "cache"))  # under a file: no folder can go there
    for _ in range(2):
        model = _load(gguf_file, "bfloat16")
    assert reads["parse"] == 2 and quantised.is_quantised(model)


def test_a_failed_write_leaves_no_entry(gguf_file, cache, monkeypatch, caplog):
    def full(self, data, offset):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(form_cache.Writer, "_pwrite", full)
    with caplog.at_level("WARNING"):
        model = _load(gguf_file, "int8")
    assert quantised.is_quantised(model) and _entries(cache) == []
    assert any("cannot cache the int8 form" in r.getMessage() for r in caplog.records)
    assert not list((cache / form_cache.FOLDER).glob("*.tmp*"))


def test_a_failed_load_leaves_no_entry(gguf_file, cache, monkeypatch):
    def broken(fd, tensor):
        raise OSError("the disk went away")

    monkeypatch.setattr(gguf_direct, "_read", broken)
    with pytest.raises(OSError, match="went away"):
        _load(gguf_file, "bfloat16")
    assert list((cache / form_cache.FOLDER).iterdir()) == [
        cache / form_cache.FOLDER / f"{_key(gguf_file)}.lock"
    ]


def _key(file: Path) -> str:
    return form_cache.form_folder(file, "bfloat16").name


def test_the_switch_turns_the_cache_off(gguf_file, cache, monkeypatch, reads):
    monkeypatch.setenv(form_cache.ENV, "0")
    _load(gguf_file, "int8")
    _load(gguf_file, "int8")
    assert reads["parse"] == 2 and not cache.exists()


def test_bf16_products_are_unchanged_by_the_cache_where_the_cpu_widens(gguf_file, cache, monkeypatch):
    # the cached bf16 weight is the held weight: a CPU without native bf16 widens it the same way
    monkeypatch.setattr(bf16, "native", lambda: False)
    first, second = _load(gguf_file, "bfloat16"), _load(gguf_file, "bfloat16")
    assert torch.equal(_logits(first)[0], _logits(second)[0])


def test_the_temporary_folder_of_a_killed_writer_is_removed(gguf_file, cache):
    folder = form_cache.form_folder(gguf_file, "int8")
    stale = folder.with_name(f"{folder.name}.tmp999999")
    stale.mkdir(parents=True)
    (stale / form_cache.TENSORS).write_bytes(b"\0" * 64)
    _load(gguf_file, "int8")
    assert not stale.exists() and folder.is_dir()


def test_a_changed_kernel_is_another_entry_of_its_form_only(gguf_file, cache, monkeypatch):
    from unstereo.engine.kernels import probe_memo

    before = {form: form_cache.form_folder(gguf_file, form) for form in gguf_direct.FORMS}
    source = probe_memo._source
    monkeypatch.setattr(
        probe_memo, "_source", lambda m: source(m) + ("# changed" if m.endswith("kernels.int8") else "")
    )
    after = {form: form_cache.form_folder(gguf_file, form) for form in gguf_direct.FORMS}
    assert [f for f in gguf_direct.FORMS if before[f] != after[f]] == ["int8"]


def test_entries_made_stale_are_removed(tmp_path, cache, monkeypatch):
    from unstereo.engine.kernels import probe_memo

    file, other = tiny_qwen2_gguf(tmp_path / "m"), tiny_qwen2_gguf(tmp_path / "o", seed=2)
    _load(other, "int8")
    others = _entries(cache)
    bf16_entry = (_load(file, "bfloat16"), form_cache.form_folder(file, "bfloat16"))[1]
    source = probe_memo._source
    made = []
    for n in range(3):  # three versions of the loader: each its own entry of the int8 form
        monkeypatch.setattr(probe_memo, "_source", lambda m, n=n: source(m) + f"# version {n}")
        _load(file, "int8")
        made.append(form_cache.form_folder(file, "int8"))
    assert len(set(made)) == 3
    # the newest and the one most recently used before it stay (KEEP = 1); the oldest is gone
    assert [m.exists() for m in made] == [False, True, True]
    assert bf16_entry.exists() and all(e.exists() for e in others)  # another form, another file: kept
    st = file.stat()
    os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))  # another version of the file
    _load(file, "int8")
    assert not any(m.exists() for m in made) and not bf16_entry.exists()  # no load can read them again
    assert all(e.exists() for e in others)
    other.unlink()
    _load(file, "float32")
    assert not any(e.exists() for e in others)  # entries of a file that is gone
    left = {p.name for p in _entries(cache)}
    assert left == {form_cache.form_folder(file, f).name for f in ("int8", "float32")}
    assert not list((cache / form_cache.FOLDER).glob("*.tmp*"))


def test_the_tokenizer_entry_of_an_older_file_is_removed(tmp_path, cache, monkeypatch):
    monkeypatch.setattr(gguf_direct, "read_gguf_tokenizer", lambda path, name: word_tokenizer())
    file = tiny_qwen2_gguf(tmp_path / "m")
    gguf_direct.load_gguf_with_tokenizer(file.parent, file.name, "int8")
    old = form_cache.tokenizer_folder(file)
    st = file.stat()
    os.utime(file, ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
    gguf_direct.load_gguf_with_tokenizer(file.parent, file.name, "int8")
    assert old.name != form_cache.tokenizer_folder(file).name and not old.exists()
    assert form_cache.tokenizer_folder(file).is_dir()
