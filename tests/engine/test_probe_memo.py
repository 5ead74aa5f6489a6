"""Probe verdicts remembered per machine (unstereo.engine.kernels.probe_memo) and the causal scorer that reads them back."""

from __future__ import annotations

import pytest
import torch
from _scoring_models import tiny_gpt2, word_tokenizer

from unstereo.engine.kernels import probe_memo
from unstereo.scoring.causal import CausalScorer


@pytest.fixture
def machine(tmp_path, monkeypatch):
    monkeypatch.setenv("UNSTEREO_CACHE_DIR", str(tmp_path / "machine"))
    return tmp_path / "machine"


@pytest.fixture(scope="module")
def loaded():
    tok = word_tokenizer()
    return tiny_gpt2(len(tok)), tok


def test_digest_changes_with_what_the_verdict_depends_on(loaded):
    model, _ = loaded
    key = probe_memo.digest(model, ["unstereo.engine.kernels.onednn"], extra=("a",))
    assert len(key) == 64 and key == probe_memo.digest(
        model, ["unstereo.engine.kernels.onednn"], extra=("a",)
    )
    assert key != probe_memo.digest(model, ["unstereo.engine.kernels.onednn"], extra=("b",))
    assert key != probe_memo.digest(model, ["unstereo.engine.kernels.lm_head"], extra=("a",))
    other = tiny_gpt2(model.config.vocab_size + 1)  # another configuration
    assert key != probe_memo.digest(other, ["unstereo.engine.kernels.onednn"], extra=("a",))
    half = tiny_gpt2(model.config.vocab_size).to(torch.bfloat16)  # another dtype
    assert key != probe_memo.digest(half, ["unstereo.engine.kernels.onednn"], extra=("a",))


def test_recall_what_was_remembered(machine):
    assert probe_memo.recall("engine", "k") is None
    probe_memo.remember("engine", "k", {"passed": True})
    assert probe_memo.recall("engine", "k") == {"passed": True}
    assert [p.name for p in (machine / "probes" / "engine").iterdir()] == ["k.json"]
    (machine / "probes" / "engine" / "k.json").write_text("{half")
    assert probe_memo.recall("engine", "k") is None  # unreadable: probe again


def test_an_unwritable_cache_only_means_probing_again(tmp_path, monkeypatch):
    (tmp_path / "file").write_text("")
    monkeypatch.setenv("UNSTEREO_CACHE_DIR", str(tmp_path / "file"))  # a file: no folder can go under it
    probe_memo.remember("engine", "k", {"passed": True})
    assert probe_memo.recall("engine", "k") is None


SENTENCES = ["she went to the store", "he", "the dog barked because"]


def test_the_scorer_remembers_the_path_its_checks_chose(loaded, machine, monkeypatch):
    model, tok = loaded
    checks = []
    check = CausalScorer._check
    monkeypatch.setattr(CausalScorer, "_check", lambda self, path: checks.append(path) or check(self, path))
    first = CausalScorer(model, tok, remember_probe=True)
    want = first.score(SENTENCES)
    assert first.path in ("tree", "padded") and checks
    probed = len(checks)
    second = CausalScorer(model, tok, remember_probe=True)
    # no probe: the same path, the same scores
    assert second.score(SENTENCES) == want and len(checks) == probed
    assert (second.path, second._segment, second.onednn) == (first.path, first._segment, first.onednn)
    # other settings, or not asked to remember: probed
    CausalScorer(model, tok, remember_probe=True, bos_policy="none").score(SENTENCES)
    assert len(checks) > probed
    probed = len(checks)
    CausalScorer(model, tok).score(SENTENCES)
    assert len(checks) > probed
    # a fallback is remembered too (with the segment setting it fell back to)
    probed = len(checks)
    monkeypatch.setattr(CausalScorer, "_check", lambda self, path: checks.append(path) or "no")
    monkeypatch.setattr(CausalScorer, "_probe_key", lambda self: "broken")
    assert CausalScorer(model, tok, remember_probe=True)._resolve_path() == "full"
    assert checks[probed:] == ["tree", "tree", "padded"]
    assert probe_memo.recall("scorer", "broken") == {"path": "full", "segment": 0}
    assert CausalScorer(model, tok, remember_probe=True)._resolve_path() == "full"
    assert len(checks) == probed + 3


def test_a_module_without_source_enters_by_name_and_version(monkeypatch):
    from unstereo import __version__

    assert "def linear" in probe_memo._source("unstereo.engine.kernels.onednn")

    def no_source(obj):
        raise OSError("could not get source code")

    monkeypatch.setattr(probe_memo.inspect, "getsource", no_source)
    assert (
        probe_memo._source("unstereo.engine.kernels.onednn")
        == f"unstereo.engine.kernels.onednn {__version__}"
    )
