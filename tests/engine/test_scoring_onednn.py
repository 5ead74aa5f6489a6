"""Linear layers through oneDNN (:mod:`unstereo.engine.kernels.onednn`): the product by hand, which layers are routed and
that they get their own ``forward`` back, the gated MLPs fused (activation and product as oneDNN post-ops), and the
scorer's fast paths on it against PyTorch's default."""

from __future__ import annotations

import platform

import pytest
import torch
from _float_tolerance import approx_scores
from _scoring_models import word_tokenizer
from test_scoring import SENTENCES
from test_scoring_fastpath import tiny_model

import unstereo.engine.kernels.onednn as onednn
from unstereo.scoring import CausalScorer

pytestmark = pytest.mark.skipif(
    not torch.backends.mkldnn.is_available(), reason="this PyTorch build has no oneDNN"
)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="measured on x86-64 only")
def test_this_pytorch_has_the_op():
    # a PyTorch that renames or drops the op would silently lose the speed (the scorer falls back): say so here
    assert onednn._works()


def test_linear_by_hand():
    # x = [[1, 2], [3, 4]], rows of W = (1, 0), (0, 1), (1, 1), b = (0, 0, 1):
    # x W^T + b = [[1, 2, 1 + 2 + 1], [3, 4, 3 + 4 + 1]]
    x = torch.tensor([[1.0, 2.0], [3.0, 4.0]])
    w = torch.tensor([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
    b = torch.tensor([0.0, 0.0, 1.0])
    assert onednn.linear(x, w, b).tolist() == [[1.0, 2.0, 4.0], [3.0, 4.0, 8.0]]
    assert onednn.linear(x, w).tolist() == [[1.0, 2.0, 3.0], [3.0, 4.0, 7.0]]
    # leading dimensions, as a transformer body gives them: [batch, length, hidden]
    assert onednn.linear(x[None], w, b).tolist() == [[[1.0, 2.0, 4.0], [3.0, 4.0, 8.0]]]


def test_available_only_for_fp32_on_the_cpu():
    assert onednn.available(torch.zeros(2, 2))
    assert not onednn.available(torch.zeros(2, 2, dtype=torch.float64))
    assert not onednn.available(torch.zeros(2, 2, dtype=torch.bfloat16))
    assert not onednn.available(torch.zeros(2, 2, device="meta"))


class Scaled(torch.nn.Linear):
    """A Linear subclass (as quantised layers are): its forward is its own, never routed."""

    def forward(self, x):
        return 2 * super().forward(x)


def test_linears_routed_while_the_block_runs_and_given_back(monkeypatch):
    torch.manual_seed(0)
    plain, scaled, hooked = torch.nn.Linear(4, 4), Scaled(4, 4), torch.nn.Linear(4, 4)
    hooked.forward = lambda x: torch.zeros_like(x)  # something (a hook library) already replaced its forward
    fp64 = torch.nn.Linear(4, 4).double()
    model = torch.nn.ModuleDict({"plain": plain, "scaled": scaled, "hooked": hooked, "fp64": fp64})
    calls = []
    real = onednn.linear
    monkeypatch.setattr(onednn, "linear", lambda *a: calls.append(a[1]) or real(*a))
    x = torch.randn(3, 4)
    want = torch.nn.functional.linear(x, plain.weight, plain.bias)
    with torch.inference_mode(), onednn.linears_through_onednn(model) as routed:
        assert routed == 1
        got = plain(x)
        scaled(x), hooked(x), fp64(x.double())
    assert len(calls) == 1 and calls[0] is plain.weight  # only the plain fp32 Linear went through oneDNN
    assert torch.allclose(got, want, atol=1e-6)
    assert "forward" not in vars(plain) and "forward" not in vars(scaled) and "forward" in vars(hooked)
    # given back when the block raises too
    with pytest.raises(RuntimeError, match="inside"), onednn.linears_through_onednn(model):
        raise RuntimeError("inside")
    assert "forward" not in vars(plain)
    plain(x)
    assert len(calls) == 1


def test_packed_weights_give_the_plain_products_and_one_row_keeps_the_plain_weight(monkeypatch):
    torch.manual_seed(0)
    # 32 -> 64 -> 32 -> 24 and an fp64 layer (a layer the probe rejects keeps its plain weight: next test; on AMD
    # Zen 5 it rejects inputs 24 and 40 wide, off oneDNN's blocks of 16)
    model = torch.nn.Sequential(
        torch.nn.Linear(32, 64),
        torch.nn.Linear(64, 32),
        torch.nn.Linear(32, 24),
        torch.nn.Linear(24, 8).double(),
    )
    packed = onednn.packed_weights(model)
    # fp32 only, and only where the probe finds the same products
    assert set(packed) == {m for m in model[:3] if onednn.packing_works(m.weight)}
    assert all(w is not m.weight for m, w in packed.items())  # copies
    used = []
    real = onednn.linear
    monkeypatch.setattr(onednn, "linear", lambda x, w, b=None: used.append(w) or real(x, w, b))
    for rows in (1, 2, 5, 32, 256, 257):
        x = torch.randn(rows, 32)
        with torch.inference_mode():
            with onednn.linears_through_onednn(model):  # the plain weights through oneDNN
                plain = model[2](model[1](model[0](x)))
            with onednn.linears_through_onednn(model, packed=packed):
                used.clear()
                got = model[2](model[1](model[0](x)))
        assert torch.equal(got, plain)  # the same products bit for bit
        want = [packed[m] if m in packed and 2 <= rows <= 256 else m.weight for m in model[:3]]
        assert all(a is b for a, b in zip(used, want, strict=True))
    assert "forward" not in vars(model[0])


def test_a_weight_whose_packed_products_differ_is_not_packed(monkeypatch):
    torch.manual_seed(0)
    layer = torch.nn.Linear(32, 64)
    # a "packed" copy one float32 step off: the probe finds it and the layer keeps its plain weight
    monkeypatch.setattr(onednn, "pack", lambda w: w * (1 + 2.0**-20))
    assert not onednn.packing_works(layer.weight)
    assert onednn.packed_weights(torch.nn.Sequential(layer)) == {}
    assert not onednn.packing_works(layer.weight.double())


def test_fused_activation_and_product_by_hand():
    # x = [[1, -1]], rows of W = (2, 0), (0, 3), (1, 1): x W^T = [2, -3, 0].
    # SiLU(z) = z / (1 + e^-z): 2 / (1 + e^-2) = 2 x 0.88079708 = 1.76159416; -3 / (1 + e^3) = -3 x 0.04742587
    # = -0.14227762; SiLU(0) = 0. GELU's tanh form, 0.5 z (1 + tanh(0.79788456 (z + 0.044715 z^3))): at 2,
    # 0.79788456 x (2 + 0.044715 x 8) = 0.79788456 x 2.35772 = 1.8811884; tanh = (e^3.7623768 - 1) / (e^3.7623768
    # + 1) = 42.050626 / 44.050626 = 0.9545977; 0.5 x 2 x 1.9545977 = 1.9545977
    x = torch.tensor([[1.0, -1.0]])
    w = torch.tensor([[2.0, 0.0], [0.0, 3.0], [1.0, 1.0]])
    silu = onednn.fused_linear(x, w, None, ("swish", ""))
    assert silu[0].tolist() == pytest.approx([1.76159416, -0.14227762, 0.0], abs=1e-6)
    gelu = onednn.fused_linear(x, w, None, ("gelu", "tanh"))
    assert gelu[0, 0].item() == pytest.approx(1.9545977, abs=1e-6)
    # (x W^T) * other with other = [[1, 2, 5]]: [2, -6, 0]; with a bias (1, 1, 1): [3, -4, 5]
    other = torch.tensor([[1.0, 2.0, 5.0]])
    assert onednn.linear_mul(x, other, w).tolist() == [[2.0, -6.0, 0.0]]
    assert onednn.linear_mul(x, other, w, torch.ones(3)).tolist() == [[3.0, -4.0, 5.0]]


class Gated(torch.nn.Module):
    """A gated MLP written as Llama writes it (the bytecode :func:`~unstereo.engine.kernels.onednn.gated_mlp_activation`
    looks for), with the activation given."""

    def __init__(self, act, hidden=8, inner=12):
        super().__init__()
        self.gate_proj = torch.nn.Linear(hidden, inner, bias=False)
        self.up_proj = torch.nn.Linear(hidden, inner, bias=False)
        self.down_proj = torch.nn.Linear(inner, hidden, bias=False)
        self.act_fn = act

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))
        return down_proj


class Swapped(Gated):
    """The gate and up projections' roles swapped: another computation, never fused."""

    def forward(self, x):
        down_proj = self.down_proj(self.act_fn(self.up_proj(x)) * self.gate_proj(x))
        return down_proj


def test_which_mlps_are_fused():
    from transformers.activations import ACT2FN

    assert onednn.gated_mlp_activation(Gated(torch.nn.SiLU())) == ("swish", "")
    assert onednn.gated_mlp_activation(Gated(ACT2FN["silu"])) == ("swish", "")
    assert onednn.gated_mlp_activation(Gated(ACT2FN["gelu_pytorch_tanh"])) == ("gelu", "tanh")
    assert onednn.gated_mlp_activation(Gated(torch.nn.ReLU())) is None  # no post-op mapped for it
    assert onednn.gated_mlp_activation(Gated(ACT2FN["gelu"])) is None  # exact GELU: not the tanh form
    assert onednn.gated_mlp_activation(Swapped(torch.nn.SiLU())) is None  # other bytecode
    assert onednn.gated_mlp_activation(Gated(torch.nn.SiLU()).double()) is None  # fp64: not oneDNN's fp32
    replaced = Gated(torch.nn.SiLU())
    replaced.forward = lambda x: x
    assert onednn.gated_mlp_activation(replaced) is None
    quantised = Gated(torch.nn.SiLU())
    quantised.up_proj = Scaled(8, 12, bias=False)  # a Linear subclass
    assert onednn.gated_mlp_activation(quantised) is None


@pytest.mark.parametrize("act", ["silu", "gelu_pytorch_tanh"])
def test_fused_mlp_equals_the_module_and_gives_its_forward_back(act, monkeypatch):
    from transformers.activations import ACT2FN

    torch.manual_seed(0)
    mlp = Gated(ACT2FN[act])
    x = torch.randn(1, 5, 8)
    want = mlp(x)
    calls = []
    real = onednn.fused_linear
    monkeypatch.setattr(onednn, "fused_linear", lambda *a: calls.append(a[3]) or real(*a))
    with torch.inference_mode(), onednn.linears_through_onednn(mlp, fuse_mlp=True) as routed:
        assert routed == 3 and "forward" in vars(mlp)
        got = mlp(x)
    assert calls == [onednn.gated_mlp_activation(mlp)]
    assert got.shape == want.shape
    # float32 rounding only: other summation orders and oneDNN's own exp/tanh (a few eps of values of order 1)
    assert torch.allclose(got, want, atol=1e-6, rtol=1e-5)
    assert "forward" not in vars(mlp)
    # a router entered inside the block (int8's, say) wins: up_proj giving zeros makes down(act(gate(x)) * 0) = 0
    with torch.inference_mode(), onednn.linears_through_onednn(mlp, fuse_mlp=True):
        mlp.up_proj.forward = lambda h: torch.zeros(*h.shape[:-1], 12)
        assert mlp(x).abs().max().item() == 0.0
        del mlp.up_proj.forward
        assert torch.allclose(mlp(x), want, atol=1e-6, rtol=1e-5)
    assert len(calls) == 2  # the fused path once more, after the inner router left
    # without fuse_mlp: the module's own forward
    with torch.inference_mode(), onednn.linears_through_onednn(mlp):
        assert "forward" not in vars(mlp)
        mlp(x)
    assert len(calls) == 2


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer()


@pytest.mark.parametrize("path", ["tree", "padded"])
def test_scorer_fast_paths_run_on_onednn(tok, path, monkeypatch):
    # the body's linears and the head through oneDNN, the same scores as PyTorch's default and the full pass; the
    # model's layers have their own forward back after each batch
    model = tiny_model("llama", len(tok))
    calls, fused = [], []
    real, real_fused = onednn.linear, onednn.fused_linear
    monkeypatch.setattr(onednn, "linear", lambda *a: calls.append(1) or real(*a))
    monkeypatch.setattr(onednn, "fused_linear", lambda *a: fused.append(1) or real_fused(*a))
    full = CausalScorer(model, tok, batch_size=3, path="full").score(SENTENCES)
    assert not calls  # the full path (the probe's reference) keeps PyTorch's default
    scorer = CausalScorer(model, tok, batch_size=3, path=path)
    got = scorer.score(SENTENCES)
    assert calls and fused and scorer.onednn and scorer.metadata()["matmul"] == "onednn"  # the MLPs fused too
    assert not any("forward" in vars(m) for m in model.modules())
    calls.clear(), fused.clear()
    default = CausalScorer(model, tok, batch_size=3, path=path, onednn=False)
    plain = default.score(SENTENCES)
    assert not calls and not fused and default.metadata()["matmul"] == "default"
    assert [x for x, _ in got] == approx_scores(plain)  # other products: float32 rounding of each sum
    assert [x for x, _ in got] == approx_scores(full)
    assert [n for _, n in got] == [n for _, n in full]


def test_fp64_model_keeps_the_default(tok, monkeypatch):
    model = tiny_model("llama", len(tok)).double()
    calls = []
    monkeypatch.setattr(onednn, "linear", lambda *a: calls.append(1))
    scorer = CausalScorer(model, tok, batch_size=3, path="tree")
    scorer.score(SENTENCES)
    assert not calls and not scorer.onednn and scorer.metadata()["matmul"] == "default"
