"""The decode step's LM head by vocabulary blocks (:mod:`unstereo.engine.kernels.decode_head`): the logits by hand
(scale and soft cap included), blocks laid side by side into the caller's buffer, the same numbers as the whole
product, and no blocks where the probe finds other numbers."""

from __future__ import annotations

import math

import pytest
import torch

import unstereo.engine.kernels.decode_head as decode_head
from unstereo.engine.kernels.decode_head import DecodeHead
from unstereo.engine.kernels.lm_head import LMHead
from unstereo.engine.kernels.onednn import available, linear, packing_works

pytestmark = pytest.mark.skipif(
    not available(torch.zeros(1)), reason="this PyTorch build has no oneDNN linear"
)


def test_blocked_logits_by_hand(monkeypatch):
    # hidden h = (1, 2); the head's 5 words have rows (1, 0), (0, 1), (1, 1), (2, 0), (0, -1), bias 0.5 each:
    # h W^T + b = (1.5, 2.5, 3.5, 2.5, -1.5); scale 2 then soft cap 4: 4 tanh(2 x / 4) = 4 tanh(x / 2)
    monkeypatch.setattr(decode_head, "BLOCK", 2)  # blocks of words 0-1, 2-3, 4
    w = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [2.0, 0.0], [0.0, -1.0]])
    head = LMHead(w, torch.full((5,), 0.5), scale=2.0, softcap=4.0)
    blocked = DecodeHead.build(head, packed=False)
    assert blocked is not None and blocked.blocks == [slice(0, 2), slice(2, 4), slice(4, 5)]
    out = torch.full((3, 5), float("nan"))
    got = blocked(torch.tensor([[1.0, 2.0]]), out[1:2])
    assert got.data_ptr() == out[1].data_ptr()  # written into the caller's buffer, no other row touched
    want = [4 * math.tanh(x / 2) for x in (1.5, 2.5, 3.5, 2.5, -1.5)]
    assert out[1].tolist() == pytest.approx(want, rel=1e-6)
    assert out[0].isnan().all() and out[2].isnan().all()


@pytest.mark.parametrize("rows", [1, 2, 5, 33, 70])
@pytest.mark.parametrize("packed", [False, True])
def test_blocks_give_the_whole_products_numbers(monkeypatch, rows, packed):
    monkeypatch.setattr(decode_head, "BLOCK", 64)  # 4 blocks, the last one narrower
    g = torch.Generator().manual_seed(1)
    head = LMHead(torch.randn(200, 48, generator=g), torch.randn(200, generator=g), softcap=30.0)
    blocked = DecodeHead.build(head, packed=packed)
    # four blocks where the probe (1, 2, 7, 32, 100 rows) finds their products equal to the whole one, which on the
    # x86-64 kinds measured they are; else the whole head. Either way, the numbers at other row counts equal it.
    four = DecodeHead(head, [slice(0, 64), slice(64, 128), slice(128, 192), slice(192, 200)])
    probe = decode_head._same(four, lambda v: linear(v, head.weight, head.bias))
    assert blocked.blocks == (four.blocks if probe else [slice(0, 200)])
    want_packed = packed and all(packing_works(head.weight[b]) for b in blocked.blocks)
    assert (blocked.packed is not None) == want_packed
    x = torch.randn(rows, 48, generator=g)
    whole = head.scale_and_cap_(linear(x, head.weight, head.bias))
    assert torch.equal(blocked(x), whole)
    assert torch.equal(blocked(x, packed=False), whole)


def test_no_blocks_where_the_probe_finds_other_numbers(monkeypatch):
    monkeypatch.setattr(decode_head, "BLOCK", 8)
    real = decode_head.linear

    def off_in_blocks(x, weight, bias=None):  # a kernel whose narrower products round otherwise
        out = real(x, weight, bias)
        return out + 1e-3 if weight.shape[0] == 8 else out

    monkeypatch.setattr(decode_head, "linear", off_in_blocks)
    head = LMHead(torch.randn(20, 16))
    assert DecodeHead.build(head).blocks == [slice(0, 20)]  # the whole head, one block


@pytest.mark.parametrize("rows", [1, 3, 40])
def test_int8_blocks_give_the_whole_int8_products_numbers(monkeypatch, rows):
    from unstereo.engine.kernels.int8 import Int8Linear, available

    if not available(torch.zeros(1)):
        pytest.skip("no int8 products in this PyTorch build")
    monkeypatch.setattr(decode_head, "BLOCK", 64)
    g = torch.Generator().manual_seed(2)
    head = LMHead(torch.randn(150, 32, generator=g), torch.randn(150, generator=g), scale=0.5)
    blocked = DecodeHead.build(head, int8=True)
    three = [slice(0, 64), slice(64, 128), slice(128, 150)]
    whole = Int8Linear(head.weight, head.bias, outliers=False)
    probe = decode_head._same(
        DecodeHead(
            head, three, int8=[Int8Linear(head.weight[b], head.bias[b], outliers=False) for b in three]
        ),
        whole,
    )
    assert blocked.blocks == (three if probe else [slice(0, 150)]) and blocked.packed is None
    x = torch.randn(rows, 32, generator=g)
    x[:, 3] *= 60  # a large column: the head quantises it with the rest (no fp32 outlier path)
    assert torch.equal(blocked(x), head.scale_and_cap_(whole(x)))
    assert not torch.equal(
        whole(x), Int8Linear(head.weight, head.bias)(x)
    )  # which the outlier path would change


def test_int8_head_stays_whole_where_the_probe_finds_other_numbers(monkeypatch):
    from unstereo.engine.kernels.int8 import Int8Linear, available

    if not available(torch.zeros(1)):
        pytest.skip("no int8 products in this PyTorch build")
    monkeypatch.setattr(decode_head, "BLOCK", 8)
    monkeypatch.setattr(decode_head, "_same", lambda blocked, whole: False)
    g = torch.Generator().manual_seed(4)
    head = LMHead(torch.randn(20, 16, generator=g))
    blocked = DecodeHead.build(head, int8=True)
    assert blocked.blocks == [slice(0, 20)] and len(blocked.int8) == 1
    x = torch.randn(3, 16, generator=g)
    assert torch.equal(blocked(x), Int8Linear(head.weight, outliers=False)(x))
