"""Linear layers through oneDNN (:mod:`unstereo.models.onednn`): the product by hand, which layers are routed and
that they get their own ``forward`` back, and the scorer's fast paths on it against PyTorch's default."""

from __future__ import annotations

import platform

import pytest
import torch
from _float_tolerance import approx_scores
from _scoring_models import word_tokenizer
from test_scoring import SENTENCES
from test_scoring_fastpath import tiny_model

import unstereo.models.onednn as onednn
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


@pytest.fixture(scope="module")
def tok():
    return word_tokenizer()


@pytest.mark.parametrize("path", ["tree", "padded"])
def test_scorer_fast_paths_run_on_onednn(tok, path, monkeypatch):
    # the body's linears and the head through oneDNN, the same scores as PyTorch's default and the full pass; the
    # model's layers have their own forward back after each batch
    model = tiny_model("llama", len(tok))
    calls = []
    real = onednn.linear
    monkeypatch.setattr(onednn, "linear", lambda *a: calls.append(1) or real(*a))
    full = CausalScorer(model, tok, batch_size=3, path="full").score(SENTENCES)
    assert not calls  # the full path (the probe's reference) keeps PyTorch's default
    scorer = CausalScorer(model, tok, batch_size=3, path=path)
    got = scorer.score(SENTENCES)
    assert calls and scorer.onednn and scorer.metadata()["matmul"] == "onednn"
    assert not any("forward" in vars(m) for m in model.modules())
    calls.clear()
    default = CausalScorer(model, tok, batch_size=3, path=path, onednn=False)
    plain = default.score(SENTENCES)
    assert not calls and default.metadata()["matmul"] == "default"
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
