"""The content-addressed score cache: a text scored once under a model costs no forward pass again, anywhere."""

from __future__ import annotations

import math
import sqlite3
import threading

import pandas as pd
import pytest
from _float_tolerance import approx_scores
from _scoring_models import Bigram, bigram_tokenizer, tiny_gpt2, word_tokenizer
from click.testing import CliRunner
from test_scoring_chunks import RUN, bigram_pairs

from unstereo.scoring import CausalScorer, score_pairs, score_texts
from unstereo.scoring.cache import (
    CachedScorer,
    ScoreCache,
    model_description,
    model_key,
    resolve_cache_path,
)
from unstereo.tables import SCORES, read_table, write_table

LN = math.log
VERSIONS = {"torch_version": "t", "transformers_version": "x"}


class Counting:
    """Bigram scorer factory counting models built and sequences run through the model (forward passes)."""

    def __init__(self):
        self.models: list[Bigram] = []

    def __call__(self):
        self.models.append(Bigram())
        return CausalScorer(self.models[-1], bigram_tokenizer(), batch_size=3)

    @property
    def passes(self) -> int:
        return sum(sum(m.batch_sizes) for m in self.models)


def as_benchmark(pairs: pd.DataFrame, name: str, max_pmi: float) -> pd.DataFrame:
    """The same sentences as another benchmark (as USE-5-demo is USE-5 with another MaxPMI column)."""
    out = pairs.copy()
    out["pair_id"] = [p.replace("T:", f"{name}:") for p in out["pair_id"]]
    out["benchmark"], out["max_pmi"] = name, max_pmi
    return out


def test_second_benchmark_with_the_same_sentences_costs_no_forward_pass(tmp_path):
    pairs = bigram_pairs(9)
    cache = ScoreCache(tmp_path / "cache.sqlite")
    first = Counting()
    use5 = score_pairs(
        as_benchmark(pairs, "USE-5", 0.1),
        first,
        tmp_path / "a.parquet",
        model_name="m",
        run=RUN,
        chunk_size=4,
        cache=cache,
    )
    distinct = len(set(pairs["sentence_female"]) | set(pairs["sentence_male"]))
    assert first.passes == distinct  # each distinct text once, across chunks too
    demo = Counting()
    got = score_pairs(
        as_benchmark(pairs, "USE-5-demo", 0.7),
        demo,
        tmp_path / "b.parquet",
        model_name="m",
        run=RUN,
        chunk_size=3,
        cache=ScoreCache(tmp_path / "cache.sqlite"),  # another job: its own connection
    )
    assert demo.models == [] and demo.passes == 0  # no model loaded, no forward pass
    for col in ("logp_female", "logp_male", "ntok_female", "ntok_male"):
        assert got[col].tolist() == use5[col].tolist()
    assert set(got["bos_policy"]) == {"bos:<s>"}  # metadata of the run that computed the scores
    # hand value: "a" = ln 2/9
    assert got.loc[got["pair_id"] == "USE-5-demo:0", "logp_female"].item() == pytest.approx(LN(2 / 9))


def test_hits_equal_recomputed_scores_and_only_new_texts_reach_the_model(tmp_path):
    tok = word_tokenizer()
    model = tiny_gpt2(len(tok))
    seen: list[list[str]] = []

    def make():
        scorer = CausalScorer(model, tok, batch_size=2)
        inner = scorer.score
        scorer.score = lambda s: (seen.append(list(s)), inner(s))[1]
        return scorer

    a = ["she went to the store .", "he barked .", "i gave him a book ."]
    b = ["a dog barked .", "he barked .", "she went to the store .", "mary said hi ."]
    cache = ScoreCache(None)
    score_texts(
        pd.DataFrame({"id": ["1", "2", "3"], "text": a}), make, tmp_path / "a.parquet", run=RUN, cache=cache
    )
    tb = pd.DataFrame({"id": list("wxyz"), "text": b})
    cached = score_texts(tb, make, tmp_path / "b.parquet", run=RUN, cache=cache)
    assert seen[-1] == ["a dog barked .", "mary said hi ."]
    fresh = score_texts(tb, lambda: CausalScorer(model, tok, batch_size=4), tmp_path / "c.parquet", run=RUN)
    assert cached["logp"].tolist() == approx_scores(zip(fresh["logp"], fresh["ntok"], strict=True))
    assert cached["ntok"].tolist() == fresh["ntok"].tolist()


@pytest.mark.parametrize(
    "change",
    [
        {"model_revision": "step1000"},
        {"dtype": "bfloat16"},
        {"bos_policy_requested": "eos"},
        {"scorer": "masked-pll"},
        {"model_id": "other"},
        {"gguf_file": "x.Q8.gguf"},
    ],
)
def test_a_changed_revision_or_setting_misses(tmp_path, change):
    cache = ScoreCache(tmp_path / "c.sqlite")
    pairs = bigram_pairs(3)
    score_pairs(pairs, Counting(), tmp_path / "a.parquet", model_name="m", run=RUN, cache=cache)
    again = Counting()
    score_pairs(pairs, again, tmp_path / "b.parquet", model_name="m", run={**RUN, **change}, cache=cache)
    assert again.passes == len(set(pairs["sentence_female"]) | set(pairs["sentence_male"]))


def test_key_ignores_device_batch_and_chunking_but_follows_weights_and_versions(tmp_path, monkeypatch):
    base = {**RUN, "bos_policy_requested": "auto"}
    key = model_key(model_description(base, VERSIONS))
    same = {**base, "device": "cuda", "batch_size": 7, "chunk_size": 3, "reference_quirks": True}
    assert model_key(model_description(same, VERSIONS)) == key
    assert model_key(model_description(base, {**VERSIONS, "transformers_version": "y"})) != key
    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "model.safetensors").write_bytes(b"weights-1")
    (folder / "config.json").write_text("{}")
    local = {**base, "model_id": str(folder)}
    k1 = model_key(model_description(local, VERSIONS))
    assert model_key(model_description(local, VERSIONS)) == k1
    (folder / "model.safetensors").write_bytes(b"weights-2")  # same size, other content
    assert model_key(model_description(local, VERSIONS)) != k1
    gguf = {**base, "model_id": str(folder), "gguf_file": "m.gguf"}
    (folder / "m.gguf").write_bytes(b"g" * 10)
    k2 = model_key(model_description(gguf, VERSIONS))
    (folder / "m.gguf").write_bytes(b"g" * 11)
    k3 = model_key(model_description(gguf, VERSIONS))
    assert k3 != k2
    monkeypatch.setattr(
        "unstereo.models.gguf_convert.CONVERSION_VERSION", 99
    )  # a new GGUF conversion misses too
    assert model_key(model_description(gguf, VERSIONS)) != k3
    with pytest.raises(ValueError, match="model_id"):
        model_description({"scorer": "causal"}, VERSIONS)


def test_concurrent_writers_keep_one_score_per_text(tmp_path):
    path = tmp_path / "c.sqlite"
    errors: list[BaseException] = []

    def job(offset: float):
        try:
            cache = ScoreCache(path)
            for i in range(20):
                cache.put_many(
                    "k", {f"t{j}": (-1.0 - offset, 2) for j in range(i, i + 5)}, {}, {"job": offset}
                )
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=job, args=(o,)) for o in (0.0, 0.5)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    with sqlite3.connect(path) as conn:
        assert conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 24
    got = ScoreCache(path).get_many("k", [f"t{j}" for j in range(24)] + ["absent"])
    assert len(got) == 24 and {v[0] for v in got.values()} <= {-1.0, -1.5}


def test_cached_scorer_loads_the_model_only_on_a_miss():
    cache = ScoreCache(None)
    cache.put_many(
        model_key(model_description(RUN, VERSIONS)),
        {"a": (-1.5, 1)},
        {},
        {"scorer": "causal", "device": "cpu"},
    )
    factory = Counting()
    scorer = CachedScorer(factory, cache, RUN, VERSIONS)
    assert scorer.score(["a", "a"]) == [(-1.5, 1), (-1.5, 1)] and factory.models == []
    assert scorer.metadata()["device"] == "cpu" and (scorer.hits, scorer.misses) == (2, 0)
    assert scorer.score(["b", "a"])[0][0] == pytest.approx(LN(3 / 9)) and len(factory.models) == 1
    assert (scorer.hits, scorer.misses) == (3, 1) and factory.passes == 1
    # released, the model goes; cached texts still need none, a new miss loads it again
    scorer.release()
    assert scorer.score(["a", "b"])[1][0] == pytest.approx(LN(3 / 9)) and len(factory.models) == 1
    assert scorer.score(["c"]) and len(factory.models) == 2


def test_cli_cache_option_and_default_location(tmp_path, monkeypatch):
    from unstereo.cli import cli

    monkeypatch.delenv("UNSTEREO_SCORE_CACHE", raising=False)
    assert resolve_cache_path(None, tmp_path / "o" / "s.parquet") == tmp_path / "o" / "score-cache.sqlite"
    monkeypatch.setenv("UNSTEREO_SCORE_CACHE", str(tmp_path / "env.sqlite"))
    assert resolve_cache_path(None, "x.parquet") == tmp_path / "env.sqlite"
    assert resolve_cache_path(str(tmp_path / "opt.sqlite"), "x.parquet") == tmp_path / "opt.sqlite"

    tok = word_tokenizer()
    model_dir = tmp_path / "gpt2"
    tiny_gpt2(len(tok)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    pairs = bigram_pairs(2).assign(
        sentence_female=["she went to the store .", "her dog barked ."],
        sentence_male=["he went to the store .", "his dog barked ."],
    )
    write_table(pairs, tmp_path / "p.parquet")
    runner = CliRunner()
    base = ["score", str(model_dir), str(tmp_path / "p.parquet"), "--device", "cpu"]
    cache = tmp_path / "shared.sqlite"
    for out in ("a", "b"):
        res = runner.invoke(cli, [*base, "-o", str(tmp_path / f"{out}.parquet"), "--cache", str(cache)])
        assert res.exit_code == 0, res.output
    assert ScoreCache(cache).count() == 4
    a, b = (read_table(tmp_path / f"{o}.parquet", SCORES) for o in "ab")
    assert a["logp_female"].tolist() == b["logp_female"].tolist()
    res = runner.invoke(cli, [*base, "-o", str(tmp_path / "n" / "c.parquet"), "--no-cache"])
    assert res.exit_code == 0, res.output
    assert not (tmp_path / "n" / "score-cache.sqlite").exists() and not (tmp_path / "env.sqlite").exists()


def test_rule_option_from_config():
    from unstereo.unstereoeval.score.rules import cache_option

    assert cache_option({"cache": None}, "results/score-cache.sqlite") == "--cache results/score-cache.sqlite"
    assert cache_option({"cache": True}, "r/c.sqlite") == "--cache r/c.sqlite"
    assert cache_option({"cache": "my dir/c.sqlite"}, "r/c.sqlite") == "--cache 'my dir/c.sqlite'"
    assert cache_option({"cache": False}, "r/c.sqlite") == "--no-cache"
