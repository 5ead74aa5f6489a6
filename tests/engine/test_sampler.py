"""The sampler's definitions (unstereo.engine.sampler): the counter-based uniform stream (Philox4x32-10 in int64
tensor arithmetic) against Random123's published answers and a plain-integer reference written here, a row's
numbers independent of its batch; the two strategies of finding a nucleus (topk, sort) giving the same tokens."""

from __future__ import annotations

import math

import pytest
import torch

from unstereo.engine import sampler
from unstereo.engine.sampler import RowSampler, philox4x32, sample_rows, stream

M32 = 0xFFFFFFFF


def philox_reference(counter, key, rounds=10):
    """Philox4x32 as Salmon et al. define it, on Python integers (a full 64-bit product, no splitting): shares
    nothing with the tensor implementation but the published constants."""
    c0, c1, c2, c3 = counter
    k0, k1 = key
    for r in range(rounds):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = (p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32
    return c0, c1, c2, c3


# Random123's known-answer vectors for Philox4x32-10 (its tests/kat_vectors): counter, key -> output
KAT = [
    ((0, 0, 0, 0), (0, 0), (0x6627E8D5, 0xE169C58D, 0xBC57AC4C, 0x9B00DBD8)),
    ((M32,) * 4, (M32,) * 2, (0x408F276D, 0x41C83B0E, 0xA20BC7C6, 0x6D5451FD)),
    ((0x243F6A88, 0x85A308D3, 0x13198A2E, 0x03707344), (0xA4093822, 0x299F31D0),
     (0xD16CFE09, 0x94FDCCEB, 0x5001E420, 0x24126EA1)),
]  # fmt: skip


@pytest.mark.parametrize("counter, key, want", KAT)
def test_philox_gives_random123s_known_answers(counter, key, want):
    assert philox_reference(counter, key) == want
    got = philox4x32(tuple(torch.tensor(c) for c in counter), tuple(torch.tensor(k) for k in key))
    assert tuple(int(w) for w in got) == want


def test_the_tensor_philox_equals_the_integer_reference_on_random_words():
    g = torch.Generator().manual_seed(1)
    words = torch.randint(0, 2**32, (6, 200), generator=g, dtype=torch.long)
    got = philox4x32(tuple(words[:4]), tuple(words[4:]))
    for j in range(words.shape[1]):
        want = philox_reference(tuple(int(w) for w in words[:4, j]), tuple(int(w) for w in words[4:, j]))
        assert tuple(int(w[j]) for w in got) == want


def test_stream_hand_worked_values():
    # u(0, 0): key (0, 0), counter (0, 0, 0, 0): Random123's first vector's first word 0x6627E8D5; its top 24
    # bits 0x6627E8 = 6,694,888, / 2**24 = 0.39904451...
    assert stream([0], 1)[0, 0].item() == 0x6627E8 / 2**24 == 6694888 / 16777216
    # u(-1, 2**32 + 7): the seed mod 2**64 = 2**64 - 1 gives key (0xFFFFFFFF, 0xFFFFFFFF); the step gives counter
    # (7, 1, 0, 0); the reference's first word, top 24 bits
    w = philox_reference((7, 1, 0, 0), (M32, M32))[0]
    assert stream([-1], 1, start=2**32 + 7)[0, 0].item() == (w >> 8) / 2**24
    # u(5 * 2**32 + 3, 2): key (3, 5), counter (2, 0, 0, 0)
    w = philox_reference((2, 0, 0, 0), (3, 5))[0]
    assert stream([5 * 2**32 + 3], 3)[0, 2].item() == (w >> 8) / 2**24


def test_a_rows_stream_depends_on_its_seed_and_step_only():
    seeds = [0, 1, 2, 41, 2**40 + 3, 7]
    whole = stream(seeds, 40)
    assert whole.dtype == torch.float32 and whole.shape == (6, 40)
    for i, s in enumerate(seeds):
        assert torch.equal(stream([s], 40)[0], whole[i])  # alone
        assert torch.equal(
            stream([9, s, 3], 30, start=10)[1], whole[i, 10:]
        )  # other neighbours, a later start
    assert len({tuple(r.tolist()) for r in whole}) == len(seeds)  # the seeds differ


def test_uniforms_are_24_bit_fractions_in_0_1_and_look_uniform():
    u = stream(range(200), 500).flatten()
    assert float(u.min()) >= 0 and float(u.max()) < 1
    assert torch.equal(u * 2**24, torch.floor(u * 2**24))  # k / 2**24 exactly
    # 100,000 draws: mean 0.5 (sd 0.29 / sqrt(1e5) = 0.0009), tenths hold 10% each (sd 0.1%)
    assert abs(float(u.mean()) - 0.5) < 0.005
    counts = torch.histc(u, bins=10, min=0, max=1) / u.numel()
    assert float((counts - 0.1).abs().max()) < 0.006


# ---- the two strategies --------------------------------------------------------------------------------------


def _case(rows, vocab, scale, seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(rows, vocab, generator=g) * scale
    top_ps = torch.rand(rows, generator=g) * 0.98 + 0.01
    return logits, top_ps, torch.rand(rows, generator=g)


@pytest.mark.parametrize("scale", [0.3, 2.0, 6.0])  # flat (nuclei of thousands of tokens) to peaked (a few)
def test_topk_and_sort_strategies_give_the_same_tokens(scale):
    logits, top_ps, u = _case(48, 4000, scale, seed=int(scale * 10))
    temps = torch.ones(48)
    a = sample_rows(logits, temps, top_ps, u, strategy="topk")
    b = sample_rows(logits, temps, top_ps, u, strategy="sort")
    assert torch.equal(a, b)


def test_nucleus_rows_of_every_stage_in_one_batch_give_what_they_give_alone(monkeypatch):
    # TOP_K 8 over 2,000 tokens at top_p 0.9: the peaked rows (scale 8: nuclei of 1-2 tokens) end in the first
    # look, the four others (nuclei of 137 to 1,793 tokens) in the second (their candidates); rows that fall short
    # there (float rounding; here made to, the candidates cut to one token) sort their whole rows
    monkeypatch.setattr(sampler, "TOP_K", 8)
    looks = []
    top, candidates, whole = sampler._top, sampler._candidates, sampler._sorted
    monkeypatch.setattr(sampler, "_top", lambda p, k: looks.append(("top", len(p), k)) or top(p, k))
    monkeypatch.setattr(
        sampler, "_candidates", lambda p, t: looks.append(("candidates", len(p))) or candidates(p, t)
    )
    monkeypatch.setattr(sampler, "_sorted", lambda p: looks.append(("sort", len(p))) or whole(p))
    scales = torch.tensor([8.0, 0.02, 3.0, 8.0, 2.0, 1.5])[:, None]
    logits = torch.randn(6, 2000, generator=torch.Generator().manual_seed(3)) * scales
    top_ps, u, temps = torch.full((6,), 0.9), torch.linspace(0.05, 0.95, 6), torch.ones(6)
    batch = sample_rows(logits, temps, top_ps, u, strategy="topk")
    assert looks == [("top", 6, 8), ("candidates", 4)]
    alone = [sample_rows(logits[i : i + 1], temps[:1], top_ps[:1], u[i : i + 1], strategy="topk").item()
             for i in range(6)]  # fmt: skip
    assert batch.tolist() == alone
    assert torch.equal(batch, sample_rows(logits, temps, top_ps, u, strategy="sort"))
    looks.clear()
    monkeypatch.setattr(sampler, "_candidates", lambda p, t: tuple(x[:, :1] for x in candidates(p, t)))
    assert torch.equal(sample_rows(logits, temps, top_ps, u, strategy="topk"), batch)
    assert looks == [("top", 6, 8), ("sort", 4)]


def test_tied_probabilities_are_ordered_by_id_in_both_strategies(monkeypatch):
    # p = 0.1, 0.2, 0.2, 0.2, 0.2, 0.1 (ids 0..5), top_p 0.7: the nucleus is the four 0.2s (the mass above the
    # 4th is 0.6 < 0.7, above the 5th 0.8), each 1/4 of it, in id order 1 2 3 4: u = 0.3 -> target 0.24 of 0.8
    # (cumulative 0.2 0.4 ...) -> id 2; u = 0.8 -> target 0.64 -> id 4. topk(5) returns the tied ids 1 4 3 2 here:
    # the strategy puts them in id order (TOP_K 5: the top-k look, not a sort)
    monkeypatch.setattr(sampler, "TOP_K", 5)
    logits = torch.tensor([[math.log(p) for p in (0.1, 0.2, 0.2, 0.2, 0.2, 0.1)]] * 2)
    for strategy in ("topk", "sort"):
        got = sample_rows(logits, [1.0, 1.0], [0.7, 0.7], torch.tensor([0.3, 0.8]), strategy=strategy)
        assert got.tolist() == [2, 4]


def test_a_plan_takes_rows_of_every_kind_without_reading_them_per_row():
    # rows: greedy, full (top_p 1), nucleus; the plan's groups come from the host settings
    plan = RowSampler([0.0, 1.0, 0.7], [1.0, 1.0, 0.5], "cpu", "sort")
    assert [kind for kind, *_ in plan.groups] == ["greedy", "full", "nucleus"]
    logits = torch.log(torch.tensor([[0.15, 0.5, 0.05, 0.3]] * 3))
    # greedy: id 1; full at u 0.68: cdf 0.15 0.65 0.70 1 -> id 2; nucleus 0.5 at T 0.7: the top token, id 1
    assert plan(logits, torch.tensor([0.9, 0.68, 0.99])).tolist() == [1, 2, 1]
    with pytest.raises(ValueError, match="unknown sampling strategy"):
        RowSampler([1.0], [1.0], "cpu", "fast")


def test_the_probabilities_go_into_the_given_buffer_and_change_no_token():
    g = torch.Generator().manual_seed(3)
    logits = torch.randn(6, 500, generator=g) * 4
    u = stream(range(6), 1)[:, 0]
    for temps, tops in (
        ([1.0] * 6, [0.9] * 6),
        ([0.7] * 6, [1.0] * 6),
        ([1.0, 0.0, 0.5, 1.0, 1.0, 2.0], [0.9] * 6),
    ):
        sampler = RowSampler(temps, tops)
        work = torch.full_like(logits, float("nan"))
        assert torch.equal(sampler(logits, u, work=work), sampler(logits, u))
        if (
            len(set(temps)) == 1
        ):  # one kind of row: its probabilities are softmax's own numbers, in the buffer
            assert torch.equal(work, torch.softmax(logits / temps[0], -1))
