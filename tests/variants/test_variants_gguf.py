"""A GGUF base (the offline SmolLM2-135M) fine-tuned into a variant through the project's loaders: one CDA step, a
Hugging Face folder that loads as a causal LM and differs from its base."""

from __future__ import annotations

import json

import pytest
import torch

from unstereo.config import load_section
from unstereo.models.load import load_causal_lm
from unstereo.variants.build import build_variant

pytestmark = [pytest.mark.slow, pytest.mark.models]

GGUF = "SmolLM2-135M-Instruct.Q4_1.gguf"


def test_a_gguf_base_becomes_a_folder_variant(tmp_path, resource):
    folder = resource("smollm2")
    text = ["She read her book.", "He gave him a pen.", "The girl met her mother.", "His father saw the man."]
    (tmp_path / "text.txt").write_text("\n".join(text) + "\n")
    entry = {"base": {"path": str(folder), "gguf_file": GGUF}, "intervention": "cda", "strength": 1.0}
    sec = load_section("variants", {"models": {"s-cda": entry}, "text": [str(tmp_path / "text.txt")],
                                    "heldout_sentences": 1, "steps": 1, "batch_size": 2, "max_length": 16,
                                    "lr": 1e-3, "device": "cpu"})  # fmt: skip
    record = build_variant(sec, "s-cda", tmp_path / "s-cda", seed=0)
    assert record["base_model"] == str(folder / GGUF) and record["sentences"]["swapped"] == 3
    assert json.loads((tmp_path / "s-cda" / "config.json").read_text())["model_type"] == "llama"
    variant, tok = load_causal_lm(str(tmp_path / "s-cda"), dtype="float32", device="cpu")
    base, base_tok = load_causal_lm(str(folder / GGUF), dtype="float32", device="cpu")
    assert tok("She read her book.")["input_ids"] == base_tok("She read her book.")["input_ids"]
    changed = [not torch.equal(a, b) for a, b in zip(variant.parameters(), base.parameters(), strict=True)]
    assert any(changed)
