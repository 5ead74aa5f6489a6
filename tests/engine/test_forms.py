"""The sampling form chosen by timing (unstereo.engine.forms): hand-made timings give the expected pick, a form
over the memory budget is never picked, the verdict is remembered per machine, a forced form is not timed."""

from __future__ import annotations

import pytest

from unstereo.engine import forms
from unstereo.engine.forms import ModelShapes

# 3 layers of widths 4 (hidden), 8 (MLP), 2 heads of 2 with 1 key-value head, 10 words, tied head
TINY = ModelShapes(hidden=4, intermediate=8, heads=2, kv_heads=1, head_dim=2, layers=3, vocab=10, tied=True)


@pytest.fixture(autouse=True)
def _own_cache(tmp_path, monkeypatch):
    monkeypatch.setenv("UNSTEREO_CACHE_DIR", str(tmp_path / "cache"))


def test_weight_bytes_by_hand():
    # one layer: q 4x4 + k 2x4 + v 2x4 + o 4x4 + gate 8x4 + up 8x4 + down 4x8 = 144 weights; 3 layers 432; head 40
    assert TINY.layer_params == 144 and TINY.body_params == 432 and TINY.head_params == 40
    assert forms.weight_bytes(TINY, "float32") == 4 * (432 + 40)
    assert forms.weight_bytes(TINY, "float32-packed") == 2 * 4 * (432 + 40)
    assert forms.weight_bytes(TINY, "bfloat16") == 2 * 432 + 4 * 40
    # int8: the body once, the down projections' transposed copy (3 x 8 x 4), the fp32 tied head, its int8 form
    assert forms.weight_bytes(TINY, "int8") == 432 + 96 + 4 * 40 + 40
    untied = ModelShapes(4, 8, 2, 1, 2, 3, 10, tied=False)
    assert forms.weight_bytes(untied, "float32") == 4 * (432 + 80)
    assert forms.weight_bytes(untied, "bfloat16") == 2 * (432 + 80)
    # a head of its own and then the embedding in bf16
    assert forms.weight_bytes(untied, "int8") == 432 + 96 + 2 * 80 + 40
    with pytest.raises(ValueError, match="unknown form"):
        forms.weight_bytes(TINY, "float16")


def fake_timer(table, steady=True):
    calls = []

    def timer(shapes, forms_, rows):
        calls.extend((f, rows) for f in forms_)
        return forms.Timed({f: table[f] for f in forms_}, steady)

    timer.calls = calls
    return timer


TIMES = {"float32": 0.5, "float32-packed": 0.3, "bfloat16": 0.2, "int8": 0.1}


def test_the_fastest_that_fits_is_chosen(monkeypatch):
    monkeypatch.setattr(
        forms, "candidates", lambda allowed: [f for f in forms.FORMS if forms.FORMS[f][0] in allowed]
    )
    timer = fake_timer(TIMES)
    choice = forms.choose(TINY, ["float32", "bfloat16", "int8"], 16, None, timer=timer, memo=False)
    assert choice.form == "int8" and choice.products == "int8" and not choice.packed
    assert sorted(timer.calls) == sorted((f, 16) for f in forms.FORMS)
    # float32 only: the packed weights are faster and give the same numbers
    choice = forms.choose(TINY, ["float32"], 16, None, timer=fake_timer(TIMES), memo=False)
    assert (choice.form, choice.products, choice.packed) == ("float32-packed", "float32", True)


def test_a_form_over_the_budget_is_never_chosen(monkeypatch):
    monkeypatch.setattr(
        forms, "candidates", lambda allowed: [f for f in forms.FORMS if forms.FORMS[f][0] in allowed]
    )
    # 1,900 bytes: float32 (1,888) fits, its packed copy (3,776) does not, though it is the faster
    timer = fake_timer(TIMES)
    choice = forms.choose(TINY, ["float32"], 16, 1900, timer=timer, memo=False)
    assert choice.form == "float32" and timer.calls == []  # one form fits: nothing to time
    assert "float32-packed not timed (over the budget)" in forms.describe(choice, TINY, 16)
    # 1,100 bytes: bf16 (1,024) and int8 (432 + 96 + 160 + 40 = 728) fit, fp32 (1,888) does not: the faster of the
    # two, although fp32 is faster still
    fast_fp32 = {"float32": 0.05, "float32-packed": 0.04, "bfloat16": 0.2, "int8": 0.3}
    choice = forms.choose(
        TINY, ["float32", "bfloat16", "int8"], 16, 1100, timer=fake_timer(fast_fp32), memo=False
    )
    assert choice.form == "bfloat16"
    assert "float32-packed 40.0 ms a step (over the budget)" in forms.describe(choice, TINY, 16)
    # 800 bytes: int8 alone fits: taken untimed
    timer = fake_timer(fast_fp32)
    choice = forms.choose(TINY, ["float32", "bfloat16", "int8"], 16, 800, timer=timer, memo=False)
    assert choice.form == "int8" and timer.calls == []
    assert "bfloat16 not timed (over the budget)" in forms.describe(choice, TINY, 16)
    # nothing fits: the smallest, whatever its time
    choice = forms.choose(TINY, ["float32", "bfloat16", "int8"], 16, 10, timer=fake_timer(TIMES), memo=False)
    assert choice.form == "int8"
    choice = forms.choose(TINY, ["float32", "bfloat16"], 16, 10, timer=fake_timer(TIMES), memo=False)
    assert choice.form == "bfloat16"


def test_a_form_that_cannot_run_is_skipped(monkeypatch):
    monkeypatch.setattr(forms, "candidates", lambda allowed: ["float32", "float32-packed", "int8"])
    timer = fake_timer({"float32": 0.5, "float32-packed": 0.3, "int8": None})
    assert forms.choose(TINY, ["float32", "int8"], 8, None, timer=timer, memo=False).form == "float32-packed"


def test_the_timings_are_remembered_per_machine_and_candidates(monkeypatch):
    monkeypatch.setattr(
        forms, "candidates", lambda allowed: [f for f in forms.FORMS if forms.FORMS[f][0] in allowed]
    )
    first = fake_timer(TIMES)
    assert forms.choose(TINY, ["float32", "int8"], 16, None, timer=first).form == "int8"
    assert len(first.calls) == 3

    def never(*args):
        raise AssertionError("timed again")

    again = forms.choose(TINY, ["float32", "int8"], 16, None, timer=never)
    assert again.form == "int8" and again.remembered and again.timings["int8"] == 0.1
    # the budget applies to remembered timings too
    assert forms.choose(TINY, ["float32"], 16, None, timer=first).form == "float32-packed"
    assert forms.choose(TINY, ["float32"], 16, 1900, timer=never).form == "float32"
    assert len(first.calls) == 5
    # timings whose passes varied (a busy machine) are timed again by the next processes, each form keeping its
    # fastest figure, UNSTEADY_TRIES times at most
    busy = fake_timer({"float32": 0.5, "float32-packed": 0.3}, steady=False)
    assert forms.choose(TINY, ["float32"], 64, None, timer=busy).form == "float32-packed"
    quieter = fake_timer({"float32": 0.2, "float32-packed": 0.9}, steady=False)
    choice = forms.choose(TINY, ["float32"], 64, None, timer=quieter)
    assert choice.form == "float32" and choice.timings == {"float32": 0.2, "float32-packed": 0.3}
    forms.choose(TINY, ["float32"], 64, None, timer=quieter)
    assert forms.choose(TINY, ["float32"], 64, None, timer=never).remembered  # three tries: no more
    assert len(busy.calls) + len(quieter.calls) == 3 * 2
    # other candidates, rows or shapes: timed anew
    other = fake_timer(TIMES)
    forms.choose(TINY, ["float32", "bfloat16"], 16, None, timer=other)
    forms.choose(TINY, ["float32", "int8"], 32, None, timer=other)
    assert len(other.calls) == 3 + 3
    # another machine (its key): timed anew
    monkeypatch.setattr(forms, "machine_key", lambda: "another CPU")
    third = fake_timer(TIMES)
    forms.choose(TINY, ["float32", "int8"], 16, None, timer=third)
    assert len(third.calls) == 3


def test_candidates_are_only_the_allowed_products():
    assert set(forms.candidates(["float32"])) <= {"float32", "float32-packed"}
    assert "float32" in forms.candidates(["float32"])
    assert all(forms.FORMS[f][0] in ("float32", "int8") for f in forms.candidates(["int8", "float32"]))


def test_time_forms_runs_every_form_on_small_shapes():
    small = ModelShapes(hidden=64, intermediate=128, heads=4, kv_heads=2, head_dim=16, layers=2, vocab=300)
    todo = forms.candidates(["float32", "bfloat16", "int8"])
    timed = forms.time_forms(small, todo, 4, passes=2)
    assert set(timed.seconds) == set(todo) and all(t > 0 for t in timed.seconds.values())
    assert forms.time_form(small, "float32", 4, passes=1) > 0


def test_rows_class():
    assert [forms.rows_class(n) for n in (1, 2, 3, 16, 17, 128)] == [2, 2, 4, 16, 32, 128]


def test_memory_budget(monkeypatch):
    assert forms.memory_budget(4) == 4_000_000_000
    import unstereo.engine.memory as memory

    monkeypatch.setattr(memory, "available_bytes", lambda: 10_000)
    assert forms.memory_budget(None) == forms.memory_budget("auto") == int(forms.AUTO_MEMORY_SHARE * 10_000)
    monkeypatch.setattr(memory, "available_bytes", lambda: None)
    assert forms.memory_budget(None) is None


def test_shapes_from_a_gguf_header(tmp_path):
    gguf = pytest.importorskip("gguf")
    import numpy as np

    path = tmp_path / "m.gguf"
    w = gguf.GGUFWriter(str(path), "llama")
    w.add_embedding_length(64)
    w.add_block_count(3)
    w.add_feed_forward_length(160)
    w.add_head_count(4)
    w.add_head_count_kv(2)
    w.add_token_list([f"t{i}" for i in range(300)])
    w.add_tensor("token_embd.weight", np.zeros((300, 64), dtype=np.float32))
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    meta, tensors = forms.gguf_metadata(path)
    assert meta["general.architecture"] == "llama" and meta["tokenizer.ggml.tokens"] == 300
    assert tensors["token_embd.weight"] == (64, 300)  # GGUF lists the innermost dimension first
    assert forms.shapes_of_gguf(path) == ModelShapes(64, 160, 4, 2, 16, 3, 300, tied=True)
    (tmp_path / "bad.gguf").write_bytes(b"GGUF\x03\x00")
    with pytest.raises(ValueError, match="cut short"):
        forms.gguf_metadata(tmp_path / "bad.gguf")


def test_a_forced_product_is_not_timed(monkeypatch):
    from unstereo.llm import local
    from unstereo.models.request import ModelRequest, parse_products
    from unstereo.models.spec import ModelSpec

    def never(*args, **kwargs):
        raise AssertionError("timed")

    monkeypatch.setattr(forms, "choose", never)
    request = ModelRequest(spec=ModelSpec(path="x"), device="cpu", sampling_products=parse_products("int8"))
    products, pack, choice = local.choose_form(request)
    assert choice is None and pack is None and products in ("int8", "float32")
    assert parse_products("bfloat16,int8") == ("bfloat16", "int8")
    assert parse_products(["float32"]) == ("float32",) and parse_products("auto") == "float32"
    from unstereo.errors import ConfigError

    with pytest.raises(ConfigError, match="generate.sampling_products"):
        parse_products(["float16"], "generate.sampling_products")


def test_a_list_is_timed_on_the_model_shapes(monkeypatch):
    from unstereo.llm import local
    from unstereo.models.request import ModelRequest
    from unstereo.models.spec import ModelSpec

    seen = {}

    def fake_choose(shapes, allowed, rows, budget, label=""):
        seen.update(shapes=shapes, allowed=allowed, rows=rows, budget=budget)
        return forms.Choice("float32-packed", {}, budget)

    monkeypatch.setattr(forms, "choose", fake_choose)
    monkeypatch.setattr(forms, "shapes_of_spec", lambda spec: TINY)
    request = ModelRequest(spec=ModelSpec(path="x"), device="cpu", batch_size=12, sampling_products=("float32",),
                           sampling_memory=2.5)  # fmt: skip
    assert local.choose_form(request)[:2] == ("float32", True)
    assert seen == {"shapes": TINY, "allowed": ["float32"], "rows": 16, "budget": 2_500_000_000}
