"""The variants' rules on a tiny random GPT-2: a method's rule that runs a variant waits for the variant's record and
gets its folder (a dry run), and a real run of the stage (two variants, then the perplexity table, checked against
its schema as the outputs check does)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
import yaml
from _scoring_models import save_tiny_gpt2

from unstereo.tables import read_table
from unstereo.variants.schemas import PERPLEXITY
from unstereo.workflow.outputs_check import check_file

TEXT = ["she went to the store .", "he gave her a book yesterday .", "a dog barked because nobody asked him .",
        "mary said hi to the champion .", "i expected his dog to win .", "the dog went to the city ."] * 2  # fmt: skip


def snakemake(tmp_path, repo_dir, config, *args):
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    exe = shutil.which("snakemake", path=os.path.dirname(sys.executable)) or "snakemake"
    env = {**os.environ, "PYTHONPATH": str(repo_dir / "src"),
           "PATH": os.path.dirname(sys.executable) + ":" + os.environ["PATH"]}  # fmt: skip
    cmd = [exe, "-s", str(repo_dir / "Snakefile"), "-d", str(tmp_path), "--configfile",
           str(tmp_path / "config.yaml"), "--cores", "1", *args]  # fmt: skip
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def config(tmp_path, **sections):
    base = save_tiny_gpt2(tmp_path / "tiny")
    (tmp_path / "text.txt").write_text("\n".join(TEXT) + "\n")
    cfg = {"resources": [], "reference_mirror": None, "external_dir": str(tmp_path / "ext"),
           "variants": {"enabled": True, "text": [str(tmp_path / "text.txt")], "heldout_sentences": 2, "steps": 2,
                        "batch_size": 2, "max_length": 16, "device": "cpu", "threads": 1,
                        "models": {"tiny-cda": {"base": {"path": str(base)}, "intervention": "cda", "strength": 1.0},
                                   "tiny-control": {"base": {"path": str(base)}, "intervention": "control"}}},
           **sections}  # fmt: skip
    for stage in ("corpus", "vocabulary", "benchmarks", "generate", "score", "metrics", "report"):
        cfg.setdefault(stage, {"enabled": False})
    return cfg


@pytest.mark.slow
def test_a_method_running_a_variant_waits_for_it(tmp_path, repo_dir):
    cfg = config(tmp_path, sentiment={"enabled": True, "models": {"tiny-cda": {"variant": "tiny-cda"}}})
    res = snakemake(
        tmp_path, repo_dir, cfg, "-n", "-p", "--", "results/sentiment/tiny-cda/continuations.parquet"
    )
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout
    assert "rule variants_train:" in out and "wildcards: variant=tiny-cda" in out
    sample = out[out.index("rule sentiment_sample:") :]
    assert "results/variants/tiny-cda/variant.json" in sample.splitlines()[1]  # its input line
    assert "unstereo sentiment sample results/variants/tiny-cda -o" in out
    cfg["sentiment"]["models"] = {"x": {"variant": "tiny-dpo"}}
    res = snakemake(tmp_path, repo_dir, cfg, "-n")
    assert res.returncode != 0 and "sentiment.models.x.variant" in res.stderr + res.stdout


@pytest.mark.slow
def test_snakemake_builds_the_variants_and_their_perplexity(tmp_path, repo_dir):
    res = snakemake(tmp_path, repo_dir, config(tmp_path), "--quiet", "rules")
    assert res.returncode == 0, res.stderr[-3000:]
    folder = tmp_path / "results" / "variants"
    for name in ("tiny-cda", "tiny-control"):
        assert (folder / name / "model.safetensors").is_file() and (folder / name / "variant.json").is_file()
    df = read_table(folder / "perplexity.parquet", PERPLEXITY)
    assert list(df["variant"]) == ["tiny-cda", "tiny-control"] and list(df["intervention"]) == [
        "cda",
        "control",
    ]
    assert check_file(folder / "perplexity.parquet", tmp_path / "results") is None
