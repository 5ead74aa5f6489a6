"""Corpus config keys and the shard table the rules are built from."""

from __future__ import annotations

import pytest
import yaml

from unstereo.config import validate_config
from unstereo.corpus.shards import shard_inputs, shards
from unstereo.errors import ConfigError


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
