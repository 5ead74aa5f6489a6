"""Corpus config keys and the shard table the rules are built from."""

from __future__ import annotations

import pytest
import yaml

from unstereo.config import validate_config
from unstereo.errors import ConfigError
from unstereo.unstereoeval.corpus.shards import shard_inputs, shards


def test_shards_from_inputs(tmp_path):
    table = shards(["resource:demo-corpus/brown.jsonl", "/data/pile/00.jsonl.zst", "notes.txt"], "ext")
    assert list(table) == ["brown", "00", "notes"]
    assert table["brown"].path == "ext/demo-corpus/brown.jsonl" and table["brown"].resource == "demo-corpus"
    assert shard_inputs(table["00"], "ext") == {"shard": "/data/pile/00.jsonl.zst"}
    # a resource file that does not exist yet: only the manifest (the fetch rule makes it)
    assert shard_inputs(table["brown"], "ext") == {"manifest": "ext/demo-corpus/RESOURCE.json"}
    with pytest.raises(ConfigError, match="shard name 'x'"):
        shards(["a/x.jsonl", "b/x.jsonl.zst"], "ext")
    with pytest.raises(ConfigError, match="not a .jsonl"):
        shards(["a/x.parquet"], "ext")


def test_config_defaults_and_bad_keys(repo_dir):
    config = yaml.safe_load((repo_dir / "config" / "config.yaml").read_text())
    validate_config(config, schema_dir=repo_dir / "workflow" / "schemas")
    c = config["corpus"]
    assert c["enabled"] is True and c["window"] == 10 and c["stopwords"] == "spacy"
    assert c["inputs"] == ["resource:demo-corpus/brown.jsonl", "resource:demo-corpus/nlp-corpus.jsonl"]
    assert (
        c["on_bad_line"] == "error" and c["eq4_missing"] == "skip" and c["pairs"] == "data/gendered_pairs.csv"
    )
    config["corpus"]["on_bad_line"] = "ignore"
    with pytest.raises(ConfigError, match="corpus.on_bad_line"):
        validate_config(config, schema_dir=repo_dir / "workflow" / "schemas")
    config["corpus"]["on_bad_line"] = "skip"
    config["corpus"]["windw"] = 5
    with pytest.raises(ConfigError, match="corpus.windw"):
        validate_config(config, schema_dir=repo_dir / "workflow" / "schemas")


def test_count_mem_mb_by_hand():
    from unstereo.unstereoeval.corpus.shards import count_mem_mb

    d = (2_000_000, 20_000_000)  # the default spill limits: 600 + 300 + 1200 = 2100 MB, below the 5500 cap
    assert count_mem_mb(0, *d) == 1500
    assert count_mem_mb(521, *d) == 1500 + 1042
    assert count_mem_mb(14_000, *d) == 5500  # a PILE file: capped, as before
    assert all(count_mem_mb(s, *d) == 1500 + min(4000, 2 * s) for s in range(0, 5000, 7))  # the old rule
    # raised limits raise the cap: 600 + 150 * 20M / 1e6 + 60 * 200M / 1e6 = 600 + 3000 + 12000
    assert count_mem_mb(14_000, 20_000_000, 200_000_000) == 15_600
    assert count_mem_mb(1000, 20_000_000, 200_000_000) == 3500  # a small shard stays small


def test_merge_mem_mb_by_hand():
    from unstereo.unstereoeval.corpus.shards import merge_mem_mb

    assert merge_mem_mb(5_000_000) == 1_000 + 2_000  # the default partition
    assert merge_mem_mb(1_000_000) == 1_400
    assert merge_mem_mb(0) == 1_000  # (at least one row a partition: 0.4 MB rounds away)
