"""Counterfactual sentiment stage: template fill, classifiers, I.F./G.F. worked by hand, bootstrap, sampling."""

from __future__ import annotations

import json
import math
import tarfile
from io import BytesIO

import numpy as np
import pandas as pd
import pytest
from _float_tolerance import f32_prob_tol
from scipy.stats import wasserstein_distance

from unstereo.errors import ConfigError, InputError
from unstereo.llm import LLMClient
from unstereo.llm.types import ChatResult
from unstereo.sentiment import classifiers as C
from unstereo.sentiment.fairness import (
    bootstrap,
    fairness_table,
    group_fairness,
    individual_fairness,
    parity_table,
    w1_sorted,
)
from unstereo.sentiment.lexicon import extract_opinion_lexicon, load_opinion_lexicon
from unstereo.sentiment.sampling import run_sampling
from unstereo.sentiment.schemas import CONTINUATIONS, FAIRNESS
from unstereo.sentiment.settings import load_section
from unstereo.sentiment.templates import DATASET, fill_templates, load_templates, template_family
from unstereo.tables import read_table, validate


@pytest.fixture(scope="module")
def huang(reference_dir):
    folder = reference_dir / DATASET
    if not folder.is_dir():
        pytest.skip(f"{folder} missing (reference data without the Huang et al. templates)")
    return folder


# ---- templates -------------------------------------------------------------------------------------------------


def test_fill_reproduces_the_reference_templates_times_values(huang):
    templates, values = load_templates(huang)
    df = fill_templates(templates, values)
    ref = json.loads((huang / "templates.json").read_text())
    x = ref["placeholder"]
    expected = set()
    for t in ref["country"]["templates"]:
        expected |= {("country", t.replace(x, v)) for v in ref["country"]["values"]}
    for t in ref["occupation"]["templates"]:
        expected |= {("occupation", t.replace(x, v)) for v in ref["occupation"]["values_with_article"]}
    name = ref["name"]
    for t in name["templates_shared"]:
        expected |= {("name", t.replace(x, v)) for v in name["female"] + name["male"]}
    for t in name["templates_male_only"]:
        expected |= {("name", t.replace(x, v)) for v in name["male"]}
    for t in name["templates_female_only"]:
        expected |= {("name", t.replace(x, v)) for v in name["female"]}
    # 10 x 10 + 10 x 29 + 8 x 34 + 2 x 17 + 2 x 17
    assert len(df) == 730 == len(expected)
    assert set(zip(df["attribute"], df["prefix"], strict=True)) == expected
    assert df["template_id"].nunique() == 32 and df["prompt_id"].is_unique
    # every attribute has M = 10 template families; each family has every value once
    assert df.groupby("attribute")["family"].nunique().to_dict() == {
        "country": 10,
        "occupation": 10,
        "name": 10,
    }
    assert (df.groupby(["attribute", "family"])["value"].agg(lambda v: v.is_unique)).all()
    n9 = df[df["family"] == "N9"]
    assert len(n9) == 34 and set(n9["subgroup"]) == {"female", "male"}
    assert "Jake said he feels" in set(n9["prefix"]) and "Molly said she feels" in set(n9["prefix"])
    occ = df[df["attribute"] == "occupation"]
    assert (occ["subgroup"] == occ["value"]).all() and "My friend is a CEO, and we" in set(occ["prefix"])


def test_fill_selection_and_errors(huang):
    templates, values = load_templates(huang)
    df = fill_templates(templates, values, attributes=["name"], families={"name": ["N9", "N1"]})
    assert list(dict.fromkeys(df["family"])) == ["N1", "N9"] and len(df) == 68
    two = fill_templates(templates, values, attributes=["country", "occupation"], max_templates=2)
    assert len(two) == 2 * 10 + 2 * 29 and set(two["family"]) == {"C1", "C2", "O1", "O2"}
    with pytest.raises(InputError, match="no template"):
        fill_templates(templates, values, families={"name": ["N11"]})
    with pytest.raises(InputError, match="unknown attribute"):
        fill_templates(templates, values, attributes=["religion"])
    assert template_family("N10_F") == "N10" and template_family("C10") == "C10"


def test_bad_template_file_names_the_line(tmp_path):
    (tmp_path / "templates_long.tsv").write_text(
        "attribute\ttemplate_id\ttemplate\tapplies_to\nx\tX1\tno slot here\tall\n"
    )
    (tmp_path / "values_long.tsv").write_text("attribute\tvalue\tsubgroup\nx\tv\t\n")
    with pytest.raises(InputError, match=r"templates_long.tsv:2: .*exactly one"):
        load_templates(tmp_path)


# ---- I.F. and G.F. worked by hand --------------------------------------------------------------------------------


def cells(spec: dict[tuple[str, str], list[float]], subgroups: dict[str, str] | None = None) -> pd.DataFrame:
    """A continuations-like table: (family, value) -> scores of samples 0..m-1."""
    rows = []
    for (family, value), scores in spec.items():
        for j, s in enumerate(scores):
            rows.append(
                {
                    "attribute": "a",
                    "family": family,
                    "value": value,
                    "subgroup": (subgroups or {}).get(value, value),
                    "sample": j,
                    "score_x": s,
                }
            )
    return pd.DataFrame(rows)


# One template, values A = {0, .2}, B = {.4, .4}, C = {.6, 1}.
#   W1(A,B) = (|0-.4| + |.2-.4|)/2 = .3 ; W1(A,C) = (.6 + .8)/2 = .7 ; W1(B,C) = (.2 + .6)/2 = .4
#   I.F. = (.3 + .7 + .4) / 3 = 14/30
# G.F.: all = {0, .2, .4, .4, .6, 1}; W1 = integral of |F_a - F_all| over the steps [0,.2) [.2,.4) [.4,.6) [.6,1):
#   A: (1/2-1/6)*.2 + (1-2/6)*.2 + (1-4/6)*.2 + (1-5/6)*.4 = 1/15 + 2/15 + 1/15 + 1/15 = 5/15
#   B: (1/6)*.2 + (2/6)*.2 + (1-4/6)*.2 + (1-5/6)*.4 = 1/30 + 2/30 + 2/30 + 2/30 = 7/30
#   C: (1/6)*.2 + (2/6)*.2 + (4/6)*.2 + (5/6-1/2)*.4 = 1/30 + 2/30 + 4/30 + 4/30 = 11/30
#   G.F. = (10/30 + 7/30 + 11/30) / 3 = 28/90
HAND = {("T1", "A"): [0.0, 0.2], ("T1", "B"): [0.4, 0.4], ("T1", "C"): [1.0, 0.6]}


def test_individual_and_group_fairness_by_hand():
    df = cells(HAND)
    assert individual_fairness(df, "score_x") == pytest.approx(14 / 30)
    assert group_fairness(df, "score_x") == pytest.approx(28 / 90)


def test_if_averages_over_templates_and_pairs_and_gf_uses_subgroups():
    # a second template where every value gets the same scores: its 3 pairs have W1 = 0
    spec = {**HAND, ("T2", "A"): [0.5, 0.5], ("T2", "B"): [0.5, 0.5], ("T2", "C"): [0.5, 0.5]}
    df = cells(spec)
    assert individual_fairness(df, "score_x") == pytest.approx((14 / 30 * 3 + 0) / 6)
    # subgroups: g1 = {A, B}, g2 = {C}; all = T1 and T2 scores (12 points), worked with scipy's definition:
    d = cells(spec, {"A": "g1", "B": "g1", "C": "g2"})
    allv = d["score_x"].to_numpy()
    g1 = d.loc[d["subgroup"] == "g1", "score_x"].to_numpy()
    g2 = d.loc[d["subgroup"] == "g2", "score_x"].to_numpy()
    expected = (wasserstein_distance(g1, allv) + wasserstein_distance(g2, allv)) / 2
    assert group_fairness(d, "score_x") == pytest.approx(expected)
    # by hand: g2 = {1, .6, .5, .5}, all = {0,.2,.4,.4,.6,1,.5 x6}: steps of F_g2 - F_all
    #   [0,.2): 1/12 ; [.2,.4): 2/12 ; [.4,.5): 4/12 ; [.5,.6): 2/4 - 10/12 = -4/12 ; [.6,1): 3/4 - 11/12 = -2/12
    hand_g2 = (1 / 12) * 0.2 + (2 / 12) * 0.2 + (4 / 12) * 0.1 + (4 / 12) * 0.1 + (2 / 12) * 0.4
    assert wasserstein_distance(g2, allv) == pytest.approx(hand_g2)


def test_equal_size_w1_matches_scipy():
    rng = np.random.default_rng(3)
    a, b = rng.random(17), rng.random(17)
    assert w1_sorted(np.sort(a), np.sort(b)) == pytest.approx(wasserstein_distance(a, b))


def test_bootstrap_interval():
    df = cells(HAND)
    ci = bootstrap(df, "score_x", n_boot=300, seed=1)
    # with 2 samples per cell the resamples are {0,0},{.2,.2},{0,.2} for A etc.: I.F. stays within [0, 1]
    assert 0 <= ci["IF"][0] <= ci["IF"][1] <= 1 and 0 <= ci["GF"][0] <= ci["GF"][1] <= 1
    flat = cells({("T", v): [0.3] * 5 for v in "ABC"})
    assert bootstrap(flat, "score_x", 50) == {"IF": (0.0, 0.0), "GF": (0.0, 0.0)}
    # paired resampling: values with identical samples stay at distance 0 in every replicate
    same = cells({("T", "A"): [0.1, 0.5, 0.9], ("T", "B"): [0.1, 0.5, 0.9]})
    assert bootstrap(same, "score_x", 50)["IF"] == (0.0, 0.0)


def test_fairness_and_parity_tables():
    df = cells(HAND)
    table = fairness_table(df, ["x"], n_boot=20, seed=0)
    validate(table, FAIRNESS)
    row = table.set_index("metric").loc["IF"]
    assert row["value"] == pytest.approx(14 / 30) and row["ci_low"] <= row["ci_high"]
    par = parity_table(df, ["x"], [0.3, 0.5])
    got = par.set_index(["subgroup", "threshold"])["positive_rate"].to_dict()
    assert got == {("A", 0.3): 0.0, ("A", 0.5): 0.0, ("B", 0.3): 1.0, ("B", 0.5): 0.0,
                   ("C", 0.3): 1.0, ("C", 0.5): 1.0}  # fmt: skip


# ---- classifiers -------------------------------------------------------------------------------------------------


def test_classifier_scores_in_unit_interval():
    texts = ["a good and happy day", "terrible, awful and bad", "the table"]
    for name in ("vader", "textblob", "afinn"):
        s = C.make_classifier(name)(texts)
        assert s.shape == (3,) and ((s >= 0) & (s <= 1)).all()
        assert s[0] > 0.5 > s[1] and s[2] == 0.5, name
    assert C.afinn_squash(0) == 0.5 and C.afinn_squash(3) == pytest.approx((3 / math.sqrt(24) + 1) / 2)
    with pytest.raises(ConfigError, match="unknown sentiment classifier"):
        C.make_classifier("bert")


def test_opinion_classifier_by_hand(tmp_path):
    (tmp_path / "positive-words.txt").write_text(";comment\ngood\nwell-known\na+\n")
    (tmp_path / "negative-words.txt").write_text("bad\n2-faced\n")
    pos, neg = load_opinion_lexicon(tmp_path)
    assert pos == {"good", "well-known", "a+"} and neg == {"bad", "2-faced"}
    clf = C.make_classifier("opinion", opinion_dir=tmp_path)
    got = clf(["Good, good and BAD.", "the table", "a well-known 2-faced man", "an A+ result"])
    assert list(got) == [2 / 3, 0.5, 0.5, 1.0]
    with pytest.raises(Exception, match="opinion-lexicon"):
        C.make_classifier("opinion", opinion_dir=None)


def test_opinion_lexicon_extracted_from_the_npm_tarball(tmp_path):
    tgz = tmp_path / "datasets.tgz"
    with tarfile.open(tgz, "w:gz") as tf:
        for kind, words in (("positive", ["good", "nice"]), ("negative", ["bad"])):
            for name, data in (("data/words.json", json.dumps(words).encode()), ("LICENSE", b"CC-BY-4.0")):
                info = tarfile.TarInfo(f"package/liu-{kind}-opinion-words-en/{name}")
                info.size = len(data)
                tf.addfile(info, BytesIO(data))
    extract_opinion_lexicon(tgz, tmp_path / "lex", expected={"positive": 2, "negative": 1})
    assert load_opinion_lexicon(tmp_path / "lex") == ({"good", "nice"}, {"bad"})
    with pytest.raises(Exception, match="expected 2006"):
        extract_opinion_lexicon(tgz, tmp_path / "lex2")


def test_label_values():
    assert list(C.label_values({0: "NEGATIVE", 1: "POSITIVE"})) == [0.0, 1.0]
    assert list(C.label_values({0: "negative", 1: "neutral", 2: "positive"})) == [0.0, 0.5, 1.0]
    assert list(C.label_values({0: "LABEL_0", 1: "LABEL_1"})) == [0.0, 1.0]
    assert list(C.label_values({0: "1 star", 1: "5 stars"}, {"1 star": 0, "5 stars": 1})) == [0.0, 1.0]
    with pytest.raises(ConfigError, match="cannot map the labels"):
        C.label_values({0: "1 star", 1: "2 stars", 2: "5 stars"})


def test_transformers_classifier_is_the_expected_label_value(tmp_path):
    import torch
    from _scoring_models import tiny_bert
    from transformers import BertForSequenceClassification

    _, tok = tiny_bert(tmp_path)
    torch.manual_seed(0)
    model = BertForSequenceClassification(
        __import__("transformers").BertConfig(
            vocab_size=tok.vocab_size, hidden_size=16, num_hidden_layers=1, num_attention_heads=2,
            intermediate_size=32, max_position_embeddings=64, num_labels=3,
            id2label={0: "negative", 1: "neutral", 2: "positive"}, label2id={"negative": 0, "neutral": 1, "positive": 2},
        )
    ).eval()  # fmt: skip
    model.save_pretrained(tmp_path / "clf")
    tok.save_pretrained(tmp_path / "clf")
    texts = ["she went to the store", "a dog barked"]
    got = C.make_classifier({"model": str(tmp_path / "clf")}, device="cpu")(texts)
    with torch.no_grad():
        p = torch.softmax(model(**tok(texts, padding=True, return_tensors="pt")).logits, -1)
    # a float32 softmax-weighted mean in [0, 1], padded batch there and here: float32's error of probabilities
    # from logits of size < 10 (tests/_float_tolerance.py)
    assert got == pytest.approx((p @ torch.tensor([0.0, 0.5, 1.0])).numpy(), abs=f32_prob_tol(10.0))


# ---- sampling through the shared client --------------------------------------------------------------------------


class EchoBackend:
    """Continues a prompt with a text that depends on the seed only (so counterfactuals share their draws) and,
    for prompts naming 'Iran', turns negative."""

    name, model, batch_size = "echo", "echo-1", 4

    def __init__(self):
        self.calls = 0

    def continue_batch(self, reqs, on_retry=None):
        self.calls += len(reqs)
        words = ["good", "happy", "fine", "nice"]
        out = []
        for r in reqs:
            text = f" a {words[r.seed % 4]} day" if "Iran" not in r.prompt else " a terrible day"
            out.append(ChatResult(text, 3, 3, "stop"))
        return out


def test_run_sampling_writes_the_continuations_table(huang, tmp_path):
    section = load_section(
        {"attributes": ["country", "name"], "templates": {"name": ["N9"]}, "max_templates": 1, "samples": 3,
         "classifiers": ["vader", "afinn"], "bootstrap": 0}
    )  # fmt: skip
    backend = EchoBackend()
    out = tmp_path / "m" / "continuations.parquet"
    df = run_sampling(LLMClient(backend), section, huang, out, seed=10)
    assert backend.calls == (10 + 34) * 3 and (tmp_path / "m" / "samples.parquet").exists()
    table = read_table(out, CONTINUATIONS)
    assert len(table) == len(df) == 132
    assert {"score_vader", "score_afinn"} <= set(table.columns)
    # sample j of every value of a template has the same seed, hence here the same text
    same = table[table["value"] != "Iran"].groupby(["family", "sample"])["continuation"].nunique()
    assert (same == 1).all()
    assert table.loc[table["value"] == "Iran", "score_vader"].max() < 0.5 < table["score_vader"].max()
    fair = fairness_table(table, ["vader"], n_boot=0).set_index(["attribute", "metric"])["value"]
    # only Iran differs: country is unfair, the names (identical texts) are perfectly fair
    assert fair["country"].min() > 0 and (fair["name"] == 0).all()
    # the same seed gives the same table (sampling and scoring are deterministic)
    again = run_sampling(
        LLMClient(EchoBackend()), section, huang, tmp_path / "n" / "continuations.parquet", seed=10
    )
    pd.testing.assert_frame_equal(again.reset_index(drop=True), df.reset_index(drop=True))


def test_settings_errors_name_the_key():
    with pytest.raises(ConfigError, match="sentiment.classifiers"):
        load_section({"classifiers": ["bert"]})
    with pytest.raises(ConfigError, match="sentiment.debias.lambdas"):
        load_section({"debias": {"lambdas": []}})
    assert load_section({})["samples"] == 100


def test_settings_json_keeps_exponent_numbers(tmp_path):
    from unstereo.config import read_section_arg
    from unstereo.sentiment.settings import resource_path

    def read_settings(value):  # what the commands read: the --settings text, validated with defaults
        return load_section(read_section_arg(value, "sentiment"))

    assert read_settings('{"debias": {"lr": 1e-05}}')["debias"]["lr"] == 1e-05
    (tmp_path / "s.yaml").write_text("sentiment:\n  samples: 3\n")
    assert read_settings(str(tmp_path / "s.yaml"))["samples"] == 3
    assert resource_path("resource:minilm", "ext") == __import__("pathlib").Path("ext/minilm")


def test_fairness_html_states_its_convention_and_warns_on_small_samples(tmp_path):
    """country: prefixes with 3 and 12 continuations -> fewest 3 < 10, warned; occupation: 12 and 10 -> fine."""
    import html

    from unstereo.sentiment.figures import fairness_html, fewest_per_prefix

    df = pd.DataFrame({"attribute": ["country"] * 15 + ["occupation"] * 22,
                       "prefix": ["a"] * 3 + ["b"] * 12 + ["c"] * 12 + ["d"] * 10})  # fmt: skip
    assert fewest_per_prefix(df) == {"country": 3, "occupation": 10}
    fairness = pd.DataFrame({"attribute": ["country", "country"], "classifier": ["vader", "vader"],
                             "metric": ["IF", "GF"], "value": [0.1, 0.2], "ci_low": [0.05, 0.1],
                             "ci_high": [0.15, 0.3], "n_continuations": [15, 15]})  # fmt: skip
    text = html.unescape(
        fairness_html(fairness, tmp_path / "f.html", per_prefix=fewest_per_prefix(df)).read_text()
    )
    assert "Convention: sentiment scores in [0, 1] and I.F., G.F. per attribute" in text
    assert "VADER's compound in [-1, 1]" in text
    assert "fewer than 10 continuations per prefix for country (3)" in text and "occupation (" not in text
    assert (
        "Warning" not in fairness_html(fairness, tmp_path / "g.html", per_prefix={"country": 10}).read_text()
    )


def test_metrics_command_thresholds_from_schema_section_and_flag(huang, tmp_path):
    """The parity table's thresholds: the schema's nine (0.1 .. 0.9), the section's (--settings: 0.3), a flag over
    it (--thresholds 0.5 --thresholds 0.7); one parity row per (attribute, classifier, subgroup, threshold)."""
    from click.testing import CliRunner

    from unstereo.cli import cli

    section = load_section(
        {
            "attributes": ["country"],
            "max_templates": 1,
            "samples": 2,
            "classifiers": ["vader"],
            "bootstrap": 0,
        }
    )
    out = tmp_path / "continuations.parquet"
    run_sampling(LLMClient(EchoBackend()), section, huang, out, seed=10)

    def thresholds(*args):
        fair, parity = tmp_path / "f.parquet", tmp_path / "p.parquet"
        cmd = ["sentiment", "metrics", str(out), "-o", str(fair), "--parity", str(parity), *args]
        res = CliRunner().invoke(cli, cmd)
        assert res.exit_code == 0, res.output
        return sorted(set(pd.read_parquet(parity)["threshold"].round(6)))

    settings = json.dumps({"classifiers": ["vader"], "bootstrap": 0, "thresholds": [0.3]})
    assert thresholds("--settings", settings) == [0.3]
    assert thresholds("--settings", settings, "--thresholds", "0.5", "--thresholds", "0.7") == [0.5, 0.7]
    assert thresholds("--bootstrap", "0") == [round(0.1 * k, 6) for k in range(1, 10)]
