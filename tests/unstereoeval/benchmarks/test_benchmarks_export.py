"""`unstereo benchmarks export`: a generated benchmark as a folder `datasets.load_dataset` reads, offline."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
from click.testing import CliRunner

from unstereo.cli import cli
from unstereo.tables import PAIRS, write_table
from unstereo.templates import fill_template
from unstereo.unstereoeval.generate import GenerateSettings, summarize

TEMPLATES = ["{pronoun} ate an apple.", "{pronoun} read {pronoun1} book quietly."]


def generated_run(tmp_path):
    """A hand-made generate folder (full.parquet, pairs.parquet, summary.json as `generate run` writes them)."""
    gdir = tmp_path / "results" / "generate" / "USE-5"
    gdir.mkdir(parents=True)
    full = pd.DataFrame(
        {
            "benchmark": "USE-5", "k": 5, "word": ["apple", "apple", "quietly"], "target_word": ["he", "she", "he"],
            "sample": 0, "item": [0, 0, 0], "template": [TEMPLATES[0], TEMPLATES[0], TEMPLATES[1]],
            "status": ["kept", "discarded", "kept"], "reason": [None, "duplicate: same template as row 0", None],
            "pairing": ["identity", "direct", "identity"], "is_revised": False, "likely_under": ["x", None, "x"],
            "gendered_words": None, "pair_id": ["USE-5:0", None, "USE-5:2"],
        }
    )  # fmt: skip
    full.to_parquet(gdir / "full.parquet")
    settings = GenerateSettings(seed=7, top_p=0.9)
    summary = summarize(full, 2) | {"benchmark": "USE-5", "k": 5, "model": "local:qwen.gguf", "seconds": 12.5}
    summary["settings"] = settings.__dict__ | {"prompts_dir": ""}
    (gdir / "summary.json").write_text(json.dumps(summary))
    pairs = pd.DataFrame(
        {
            "pair_id": ["USE-5:0", "USE-5:2"], "benchmark": "USE-5", "template": TEMPLATES,
            "sentence_female": [fill_template(t, "female") for t in TEMPLATES],
            "sentence_male": [fill_template(t, "male") for t in TEMPLATES],
            "seed_word": ["apple", "quietly"], "max_pmi": [0.1, float("nan")], "max_pmi_word": ["apple", None],
            "source": "generate:local:qwen.gguf",
        }
    )  # fmt: skip
    write_table(pairs, gdir / "pairs.parquet", PAIRS)
    return gdir


def test_export_card_and_provenance(tmp_path):
    gdir = generated_run(tmp_path)
    out = tmp_path / "hf"
    res = CliRunner().invoke(
        cli, ["benchmarks", "export", str(gdir / "pairs.parquet"), "-o", str(out), "--generated", str(gdir)]
    )
    assert res.exit_code == 0, res.output
    card = (out / "README.md").read_text()
    assert card.startswith("---\n") and "path: data/test-00000-of-00001.parquet" in card
    assert "generator model: `local:qwen.gguf`" in card and "2 seed words: apple, quietly" in card
    assert "top_p 0.9; seed 7" in card and "dedup: True" in card and "| duplicates | 1 |" in card
    assert "Your task is to generate {num_sentences} diverse sentences" in card  # the prompts, as sent
    prov = json.loads((out / "provenance.json").read_text())
    assert prov["n_pairs"] == 2 and prov["status_counts"] == {"discarded": 1, "kept": 2}
    assert set(prov["prompts"]) == {"generation", "revision_1", "revision_2", "revision_3", "revision_4",
                                    "editing", "semantic_filter"}  # fmt: skip


def test_export_loads_with_datasets_offline(tmp_path, monkeypatch):
    datasets = pytest.importorskip("datasets", reason="`datasets` not installed (pip install '.[export]')")
    gdir = generated_run(tmp_path)
    out = tmp_path / "hf"
    res = CliRunner().invoke(
        cli, ["benchmarks", "export", str(gdir / "pairs.parquet"), "-o", str(out), "--generated", str(gdir)]
    )
    assert res.exit_code == 0, res.output
    monkeypatch.setenv("HF_DATASETS_OFFLINE", "1")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    ds = datasets.load_dataset(str(out), cache_dir=str(tmp_path / "cache"))
    assert list(ds) == ["test"]
    test = ds["test"]
    assert test.num_rows == 2 and test.column_names == list(PAIRS.names)
    assert test["sentence_female"] == ["She ate an apple.", "She read her book quietly."]
    assert test["max_pmi"][0] == 0.1 and test["max_pmi"][1] is None
    assert os.environ["HF_DATASETS_OFFLINE"] == "1"
