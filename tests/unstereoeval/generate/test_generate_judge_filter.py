"""The judge of sense inside the generate pipeline (step 5, last filter), with a fake judge: it sees only the
survivors of every cheaper filter, both sentences of each pair; its rejections are counted and shown; the config
keys validate."""

from __future__ import annotations

import json

import pytest
from test_generate_naturalness import FakeClient, FakeScorer

from unstereo.errors import ConfigError
from unstereo.unstereoeval.generate import GenerateSettings, generate_benchmark, load_prompts, summarize
from unstereo.unstereoeval.generate.judge import DEFAULT_THRESHOLD
from unstereo.unstereoeval.generate.pipeline import judge_threshold
from unstereo.unstereoeval.generate.settings import load_section
from unstereo.unstereoeval.report.generation import filter_table, generation_html

PROMPTS = load_prompts()


class FakeJudge:
    """P(Yes) from a table (0.9 for a sentence not in it); records every sentence it was asked about."""

    def __init__(self, p: dict[str, float]):
        self.p = p
        self.seen: list[str] = []

    def p_yes(self, sentences):
        self.seen += list(sentences)
        return [self.p.get(s, 0.9) for s in sentences]


LISTS = {
    ("apple", "he"): [
        "He ate an apple.",  # kept (0.9 / 0.9)
        "He was an apple.",  # judge: both sentences below 0.5
        "I gave him an apple.",  # chat reply: never reaches the judge
        "He apple pear plum.",  # log-likelihood: never reaches the judge
        "He peeled the apple.",  # judge: only the female sentence below (0.45)
    ],
    ("apple", "she"): ["She ate an apple.", "She shared her apple."],  # a duplicate; kept (edited: his)
}
P_YES = {"He was an apple.": 0.2, "She was an apple.": 0.3, "She peeled the apple.": 0.45}


def _run(judge=None, threshold=0.5):
    client = FakeClient(LISTS)
    scorer = FakeScorer({"He apple pear plum.": -5.0, "She apple pear plum.": -5.0})
    s = GenerateSettings(
        n_sentences=5,
        revision_max_tries=0,
        min_token_logprob=-3.0,
        start_logprob=0.0,
        judge_threshold=threshold,
    )
    full = generate_benchmark(["apple"], 5, client, PROMPTS, s, scorer=scorer, judge=judge)
    return full, client


def test_judge_sees_only_survivors_both_sentences_and_rejections_are_counted():
    judge = FakeJudge(P_YES)
    full, client = _run(judge)
    # the survivors of chat reply, log-likelihood and the semantic filter, male then female, one batch
    assert judge.seen == [
        "He ate an apple.", "She ate an apple.",
        "He was an apple.", "She was an apple.",
        "He peeled the apple.", "She peeled the apple.",
        "He shared his apple.", "She shared her apple.",
    ]  # fmt: skip
    assert client.tags.count("semantic_filter") == 2 * 4  # the semantic filter ran before the judge
    got = dict(zip(full["sentence"], zip(full["status"], full["reason"], strict=True), strict=True))
    assert got["He ate an apple."] == ("kept", None)
    assert got["She shared her apple."] == ("kept", None)
    assert got["He was an apple."] == ("unnatural", "judge: male P(Yes) 0.20 < 0.5, female P(Yes) 0.30 < 0.5")
    assert got["He peeled the apple."] == ("unnatural", "judge: female P(Yes) 0.45 < 0.5")
    assert got["I gave him an apple."][1].startswith("chat reply")
    row = full[full["sentence"] == "He was an apple."].iloc[0]
    assert (row["judge_p_yes_male"], row["judge_p_yes_female"]) == (0.2, 0.3)
    # no P(Yes) on a row the judge never saw
    assert full.loc[full["sentence"] == "I gave him an apple.", "judge_p_yes_male"].isna().all()
    summ = summarize(full, 1)
    assert (summ["judge_checked"], summ["judge_rejected"]) == (4, 2)
    assert summ["kept"]["total"] == 2 and summ["unnatural"]["total"] == 4
    assert (summ["chat_reply"], summ["low_log_likelihood"], summ["semantic_filter_rejected"]) == (1, 1, 0)


def test_threshold_is_inclusive():
    # P(Yes) == threshold passes (SenseJudge.judge: p >= threshold)
    full, _ = _run(FakeJudge(P_YES), threshold=0.45)
    assert full.loc[full["sentence"] == "He peeled the apple.", "status"].item() == "kept"


def test_no_judge_configured_changes_nothing():
    judge = FakeJudge(P_YES)
    full, _ = _run(judge, threshold=None)
    assert judge.seen == []
    assert full["judge_p_yes_male"].isna().all() and full["judge_p_yes_female"].isna().all()
    assert (full["status"] == "kept").sum() == 4
    assert summarize(full, 1)["judge_rejected"] == 0


def test_a_threshold_without_a_judge_fails_before_any_filter_call():
    with pytest.raises(ValueError, match="needs a judge"):
        _run(None)


def test_judge_with_no_survivor_is_not_called():
    class Refuses:
        def p_yes(self, sentences):
            raise AssertionError("called")

    client = FakeClient({("apple", "he"): ["I ate an apple."], ("apple", "she"): ["I ate her apple."]})
    s = GenerateSettings(n_sentences=1, revision_max_tries=0, judge_threshold=0.5)
    full = generate_benchmark(["apple"], 5, client, PROMPTS, s, judge=Refuses())
    assert (full["status"] == "kept").sum() == 0


def test_judge_threshold_from_config():
    assert judge_threshold(None) is None
    assert judge_threshold({"model": "m", "threshold": None}) == DEFAULT_THRESHOLD
    assert judge_threshold({"model": "m"}) == DEFAULT_THRESHOLD
    assert judge_threshold({"model": "m", "threshold": 0.7}) == 0.7
    nat = {"chat_reply": True, "min_token_logprob": None, "llm_filter": True, "model": None, "cache": None}
    assert GenerateSettings.from_config({"naturalness": nat}).judge_threshold is None
    judged = nat | {"judge": {"model": "m", "threshold": None}}
    assert GenerateSettings.from_config({"naturalness": judged}).judge_threshold == DEFAULT_THRESHOLD


def test_schema_judge_keys():
    assert load_section({})["naturalness"]["judge"] is None  # off by default: other configs unchanged
    model = {"resource": "qwen-coder-1.5b", "gguf_file": "qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"}
    judge = load_section({"naturalness": {"judge": {"model": model}}})["naturalness"]["judge"]
    assert judge == {"model": model, "threshold": None, "batch_size": 16, "dtype": "auto"}
    assert load_section({"naturalness": {"judge": {"model": model, "threshold": 0.6}}})["naturalness"]["judge"][
        "threshold"
    ] == 0.6  # fmt: skip
    for bad in ({"threshold": 0.5}, {"model": model, "threshold": 1.5}, {"model": model, "extra": 1}):
        with pytest.raises(ConfigError, match="generate.naturalness.judge"):
            load_section({"naturalness": {"judge": bad}})


def test_the_default_config_judges_with_the_1_5b():
    from unstereo.config import load_config

    cfg = load_config("config/config.yaml")
    judge = cfg["generate"]["naturalness"]["judge"]
    # 0.5, not the balanced DEFAULT_THRESHOLD: the default keeps for precision (config comment, docs/methods.md)
    assert judge["model"]["resource"] == "qwen-coder-1.5b" and judge["threshold"] == 0.5
    assert "qwen-coder-1.5b" in cfg["resources"]


def test_summary_and_page_show_the_judge(tmp_path):
    full, _ = _run(FakeJudge(P_YES))
    summary = summarize(full, 1) | {"benchmark": "USE-5", "model": "m", "seconds": 1.0, "judge_model": "j15"}
    summary["settings"] = {"judge_threshold": 0.5, "min_token_logprob": -3.0}
    t = filter_table({"USE-5": json.loads(json.dumps(summary))})
    assert t.value("judge of sense (P(Yes) below threshold)", "USE-5") == 2
    page = generation_html({"USE-5": (summary, full)})
    assert "judge of sense: P(Yes) &gt;= 0.5 for both sentences under j15" in page
    assert "judge: worse P(Yes)" in page and "<td>0.90</td>" in page
    assert "judge: female P(Yes) 0.45 &lt; 0.5" in page  # the rejected list
    summary["settings"] = {"judge_threshold": None}
    assert "judge of sense: off" in generation_html({"USE-5": (summary, None)})


def test_the_judge_takes_the_generators_weights_when_it_is_the_generator(tmp_path, monkeypatch):
    from types import SimpleNamespace

    from test_generate_judge import chat_tokenizer

    import unstereo.unstereoeval.generate.judge as judge_mod
    from unstereo.models.request import model_request
    from unstereo.unstereoeval.generate.cli import _load_judge

    tok, lm = chat_tokenizer(), SimpleNamespace(device="cpu")
    loaded = []

    class Backend:
        def loaded(self):
            loaded.append(1)
            return lm, tok

    monkeypatch.setattr(judge_mod, "load_judge", lambda request, settings: ("loaded", request.spec, settings))
    (tmp_path / "gen").mkdir()
    (tmp_path / "other").mkdir()
    generator = model_request({"model": str(tmp_path / "gen")})
    client = SimpleNamespace(backend=Backend())
    s = GenerateSettings(judge_threshold=0.6)
    cfg = {"device": "auto"}
    request, judge, _ = _load_judge({"model": str(tmp_path / "gen"), "batch_size": 4}, cfg, s, None, generator,
                                    client)  # fmt: skip
    assert loaded == [1] and judge.judge.model is lm and judge.judge.tok is tok
    assert (judge.judge.settings.threshold, judge.judge.settings.batch_size) == (0.6, 4)
    assert request.spec == generator.spec and judge.seconds == 0.0
    # another model, or the same one in another dtype, is loaded on its own
    for other in ({"model": str(tmp_path / "other")}, {"model": str(tmp_path / "gen"), "dtype": "bfloat16"}):
        _, judge, _ = _load_judge(other, cfg, s, None, generator, client)
        assert judge.judge[0] == "loaded" and judge.judge[2].threshold == 0.6
    assert loaded == [1]
