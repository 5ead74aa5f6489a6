"""The cross-method model card: each method's headline read from a hand-made results tree, the stacking and ranking,
Kendall's tau-b between the methods' rankings, and the per-model pages and figure."""

from __future__ import annotations

import json
import math
import zipfile

import numpy as np
import pandas as pd
import pytest
from click.testing import CliRunner

import unstereo.model_card.card as mc
from unstereo.biastest import headline as bt_headline
from unstereo.cli import cli as cli_main
from unstereo.fairpair import headline as fp_headline
from unstereo.model_card.headline import HEADLINE
from unstereo.robustness import headline as rob_headline
from unstereo.sentiment import headline as sent_headline
from unstereo.tables import validate
from unstereo.unstereoeval.report import headline as us_headline


def _write(df: pd.DataFrame, path):
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_parquet(path, index=False)


def _row(df: pd.DataFrame, model: str, metric: str) -> pd.Series:
    hit = df[(df["model"] == model) & (df["metric"] == metric)]
    assert len(hit) == 1, hit
    return hit.iloc[0]


# ---- hand-made results tree ----------------------------------------------------------------------------------------


def _metrics_table():
    rows = []
    # model a on B2 at eta = inf: US 40 +- 2 (the card's pick); other benchmarks and etas carry decoys
    for model, bench, eta, us, std, aufc in [
        ("a", "B2", math.inf, 40.0, 2.0, 0.30),
        ("b", "B2", math.inf, 60.0, 1.5, 0.45),
        ("a", "B1", math.inf, 99.0, 9.0, 0.99),
        ("a", "B2", 1.0, 11.0, 1.0, 0.11),
    ]:
        rows.append(dict(model=model, benchmark=bench, eta=eta, n=50, us=us, us_std=std, aufc=aufc, pd=0.0))
    return pd.DataFrame(rows)


def _fairpair_summary():
    base = dict(n_prompts=10, mean_B=1.0, mean_V_gp=1.0, mean_V_pg=1.0, t_stat=0.0, p_value=1.0, n_inf_F=0,
                ratio_F=1.0, median_F=1.0, median_F_ci_low=0.9, median_F_ci_high=1.1)  # fmt: skip
    rows = [
        dict(model="a", phi="jaccard", k=2, mean_F=1.5, F_ci_low=1.2, F_ci_high=1.8),
        dict(model="a", phi="jaccard", k=4, mean_F=9.0, F_ci_low=8.0, F_ci_high=10.0),  # k = n: per sample
        dict(model="a", phi="sentiment", k=2, mean_F=7.0, F_ci_low=6.0, F_ci_high=8.0),
        dict(model="b", phi="jaccard", k=2, mean_F=0.5, F_ci_low=0.4, F_ci_high=0.6, n_inf_F=3),
        dict(model="b", phi="jaccard", k=4, mean_F=5.0, F_ci_low=4.0, F_ci_high=6.0),
    ]
    return pd.DataFrame([{**base, **r} for r in rows])


def _fairness(shift: float, ci: bool = True):
    rows = []
    for i, (attribute, classifier, metric) in enumerate(
        [(a, c, m) for a in ("country", "occupation") for c in ("vader", "textblob") for m in ("IF", "GF")]
    ):
        value = shift + i / 100
        rows.append(dict(attribute=attribute, classifier=classifier, metric=metric, value=value,
                         ci_low=value - 0.005 if ci else np.nan, ci_high=value + 0.005 if ci else np.nan,
                         n_continuations=30))  # fmt: skip
    return pd.DataFrame(rows)


def _rank_swaps():
    cols = ["benchmark", "construction", "eta", "metric", "model_a", "model_b", "swap_rate", "trials"]
    rows = [
        ("T", "original", math.inf, "us", "a", "b", 1.0, 1),  # left out: the reference construction
        ("T", "negation", math.inf, "us", "a", "b", 1.0, 1),
        ("T", "negation", math.inf, "us", "a", "c", 0.0, 1),
        ("T", "negation", math.inf, "us", "b", "c", 0.0, 1),
        ("T", "sample_50", math.inf, "us", "a", "b", 0.5, 4),
        ("T", "sample_50", math.inf, "us", "a", "c", 0.25, 4),
        ("T", "sample_50", math.inf, "us", "b", "c", 0.0, 4),
        ("T", "negation", math.inf, "pd", "a", "b", 0.0, 1),  # another metric: left out
        ("T", "negation", 1.0, "us", "a", "c", 1.0, 1),  # another eta: left out
    ]
    return pd.DataFrame(rows, columns=cols)


def _biastest_summary(with_generated: bool = True):
    rows = []
    for model, spec, source, attribute, ss in [
        ("a", "S2", "generated", "*", 62.0),
        ("a", "S2", "generated", "t1", 70.0),
        ("a", "S2", "released", "*", 10.0),
        ("a", "S1", "generated", "*", 20.0),
        ("b", "S2", "generated", "*", 45.0),
        ("b", "S2", "released", "*", 48.0),
        ("b", "S2", "template", "*", 90.0),
    ]:
        if source == "generated" and not with_generated:
            continue
        rows.append(dict(model=model, spec=spec, source=source, attribute=attribute, n=8, stereotype_score=ss,
                         ci_low=ss - 5, ci_high=ss + 5, scorer="causal-mean"))  # fmt: skip
    return pd.DataFrame(rows)


def _tree(tmp_path):
    r = tmp_path / "results"
    _write(_metrics_table(), r / "metrics" / "metrics.parquet")
    _write(_fairpair_summary(), r / "fairpair" / "summary.parquet")
    _write(_fairness(0.1), r / "sentiment" / "a" / "fairness.parquet")
    _write(_fairness(0.2, ci=False), r / "sentiment" / "b" / "fairness.parquet")
    _write(_rank_swaps(), r / "robustness" / "rank_swaps.parquet")
    _write(_biastest_summary(), r / "biastest" / "summary.parquet")
    two = {"a": {"resource": "x"}, "b": {"resource": "y"}}
    return {
        "results_dir": str(r),
        "score": {"models": {**two, "c": {"resource": "z"}}, "benchmarks": ["B1", "B2"]},
        "metrics": {"enabled": True, "benchmarks": ["B2", "B1"]},
        "fairpair": {"enabled": True, "models": two, "phis": ["jaccard", "sentiment"], "folds": [2]},
        "sentiment": {
            "enabled": True,
            "models": two,
            "attributes": ["occupation", "country"],
            "classifiers": ["textblob", "vader"],
        },  # fmt: skip
        "robustness": {"enabled": True, "models": ["a", "b", "c"], "benchmarks": ["T"], "etas": [math.inf]},
        "biastest": {"enabled": True, "models": two, "specs": ["S2", "S1"]},
    }


# ---- the headline of each method -------------------------------------------------------------------------------------


def test_unstereoeval_headline_first_configured_benchmark_at_eta_inf(tmp_path):
    config = _tree(tmp_path)
    df = us_headline.API.headline(config)
    validate(df, HEADLINE)
    us = _row(df, "a", "us")
    # B2 (listed first in metrics.benchmarks) at eta = inf: 40 +- 1 standard error 2
    assert (us.value, us.ci_low, us.ci_high, us.n) == (40.0, 38.0, 42.0, 50)
    assert us.interval == "±1 s.e. (Bernoulli)" and us.scope == "benchmark B2, eta = inf"
    aufc = _row(df, "b", "aufc")
    assert aufc.value == 0.45 and math.isnan(aufc.ci_low) and aufc.interval == ""
    assert len(df) == 4  # (a, b) x (us, aufc): the B1 and eta = 1 rows are not on the card


def test_fairpair_headline_largest_configured_fold_count(tmp_path):
    config = _tree(tmp_path)
    df = fp_headline.API.headline(config)
    a = _row(df, "a", "f")
    assert (a.value, a.ci_low, a.ci_high, a.n) == (1.5, 1.2, 1.8, 10)
    assert a.scope == "phi jaccard, k = 2" and a.interval == "95% bootstrap over prompts"
    assert "3 prompt(s) with infinite F left out" in _row(df, "b", "f").scope
    # without configured folds: the per-sample k = n (the largest k of the model)
    config["fairpair"]["folds"] = []
    df = fp_headline.API.headline(config)
    assert _row(df, "a", "f").value == 9.0 and _row(df, "b", "f").value == 5.0


def test_sentiment_headline_first_configured_attribute_and_classifier(tmp_path):
    config = _tree(tmp_path)
    df = sent_headline.API.headline(config)
    # rows of _fairness in order: country vader IF (i=0), GF, country textblob IF, GF, occupation vader IF (i=4),
    # GF, occupation textblob IF (i=6), GF (i=7); the pick is occupation / textblob
    a_if, a_gf = _row(df, "a", "if"), _row(df, "a", "gf")
    assert a_if.value == pytest.approx(0.16) and a_gf.value == pytest.approx(0.17)
    assert a_if.ci_low == pytest.approx(0.155) and a_if.n == 30
    assert a_if.scope == "attribute occupation, classifier textblob" and a_if.interval == "95% bootstrap"
    b_if = _row(df, "b", "if")  # no bootstrap: no interval, and no label claiming one
    assert b_if.value == pytest.approx(0.26) and math.isnan(b_if.ci_low) and b_if.interval == ""


def test_sentiment_headline_names_a_missing_table(tmp_path):
    config = _tree(tmp_path)
    config["sentiment"]["models"]["ghost"] = {"resource": "q"}
    with pytest.raises(Exception, match="ghost"):
        sent_headline.API.headline(config)


def test_robustness_rank_swap_rate(tmp_path):
    config = _tree(tmp_path)
    df = rob_headline.API.headline(config)
    # weighted by trials over the alternate constructions (not original), metric us, eta inf:
    # a: negation a-b 1x1 + a-c 0x1, sample_50 a-b 0.5x4 + a-c 0.25x4 -> 4 swaps of 10 comparisons
    # b: negation 1 + 0, sample_50 2 + 0 -> 3 / 10;  c: negation 0 + 0, sample_50 1 + 0 -> 1 / 10
    got = {m: _row(df, m, "rank_swap_rate") for m in "abc"}
    assert [got[m].value for m in "abc"] == pytest.approx([0.4, 0.3, 0.1])
    assert all(got[m].n == 10 and math.isnan(got[m].ci_low) and got[m].interval == "" for m in "abc")
    assert got["a"].scope == "by us at eta = inf, 2 construction(s), 1 benchmark(s)"


def test_biastest_headline_generated_source_first_configured_spec(tmp_path):
    config = _tree(tmp_path)
    df = bt_headline.API.headline(config)
    a = _row(df, "a", "ss")
    assert (a.value, a.ci_low, a.ci_high, a.n) == (62.0, 57.0, 67.0, 8)
    assert a.scope == "spec S2, generated pairs"
    assert _row(df, "b", "ss").value == 45.0
    # no generated pairs: the release's generated pairs next (not the template baseline)
    _write(_biastest_summary(with_generated=False), tmp_path / "results" / "biastest" / "summary.parquet")
    df = bt_headline.API.headline(config)
    assert _row(df, "a", "ss").value == 10.0 and _row(df, "b", "ss").scope == "spec S2, released pairs"


# ---- the paired bootstrap's statistics (resampled) ------------------------------------------------------------------


def _bootstrap_tree(tmp_path):
    """UnStereoEval (benchmark B, AuFC grid 0, 2, 4, 6) and sentiment (country, vader) for models a and b only."""
    from unstereo.sentiment.fairness import fairness_table

    r = tmp_path / "results"
    # FM = ln p(F) - ln p(M): a (0, 1, -3), b (0.2, 0.3, 0.4)
    for model, female in (("a", [-10.0, -9.0, -13.0]), ("b", [-9.8, -9.7, -9.6])):
        _write(pd.DataFrame({"pair_id": ["B:1", "B:2", "B:3"], "model": model, "logp_female": female,
                             "logp_male": -10.0}), r / "scores" / model / "B.parquet")  # fmt: skip
    # AuFC by hand, grid (0, 2, 4, 6), US as a fraction at each eps (|FM| <= eps), trapezoids of width 2:
    # a: 1/3, 2/3, 1, 1 -> (1/3 + 2/3) + (2/3 + 1) + (1 + 1) = 14/3; b: 0, 1, 1, 1 -> 1 + 2 + 2 = 5
    _write(pd.DataFrame([dict(model=m, benchmark="B", eta=math.inf, n=3, us=us, us_std=1.0, aufc=aufc, pd=0.0)
                         for m, us, aufc in (("a", 100 / 3, 14 / 3), ("b", 100.0, 5.0))]),
           r / "metrics" / "metrics.parquet")  # fmt: skip
    # sentiment, templates C1 and C2, values X and Y, samples 0 and 1 (vader scores)
    scores = {"a": {("C1", "X"): [0.0, 1.0], ("C1", "Y"): [0.5, 0.5], ("C2", "X"): [0.2, 0.2], ("C2", "Y"): [0.2, 0.2]},
              "b": {("C1", "X"): [0.1, 0.9], ("C1", "Y"): [0.1, 0.9], ("C2", "X"): [0.0, 0.0], ("C2", "Y"): [1.0, 1.0]}}  # fmt: skip
    for model, cells in scores.items():
        rows = [dict(attribute="country", template_id=f, value=v, subgroup=v, family=f, sample=i, prefix=f"{v} {f}",
                     continuation="...", score_vader=x) for (f, v), xs in cells.items() for i, x in enumerate(xs)]  # fmt: skip
        df = pd.DataFrame(rows)
        _write(df, r / "sentiment" / model / "continuations.parquet")
        _write(fairness_table(df, ["vader"], n_boot=0), r / "sentiment" / model / "fairness.parquet")
    two = {"a": {"resource": "x"}, "b": {"resource": "y"}}
    return {
        "results_dir": str(r),
        "score": {"models": two, "benchmarks": ["B"]},
        "metrics": {"enabled": True, "benchmarks": ["B"], "eps_grid": {"start": 0.0, "stop": 6.0, "num": 4}},
        "sentiment": {"enabled": True, "models": two, "attributes": ["country"], "classifiers": ["vader"]},
    }


def test_aufc_items_are_per_pair_areas_whose_mean_is_the_headline(tmp_path):
    from unstereo.unstereoeval.metrics.core import aufc, pair_areas

    config = _bootstrap_tree(tmp_path)
    shown = us_headline.API.headline(config)
    items = us_headline.API.items(config)
    # per-pair areas by hand, grid (0, 2, 4, 6), trapezoids of width 2 of the pair's curve (1 where |FM| <= eps):
    # a: FM 0 -> (1, 1, 1, 1): 6; FM 1 -> (0, 1, 1, 1): 1 + 2 + 2 = 5; FM -3 -> (0, 0, 1, 1): 0 + 1 + 2 = 3; mean
    # 14/3, the headline. b: FM .2, .3, .4 -> (0, 1, 1, 1) each: 5, 5, 5; mean 5.
    for model, want, mean in (("a", [6.0, 5.0, 3.0], 14 / 3), ("b", [5.0, 5.0, 5.0], 5.0)):
        got = items[(items["model"] == model) & (items["metric"] == "aufc")]
        assert got["item"].tolist() == ["B:1", "B:2", "B:3"] and got["value"].tolist() == pytest.approx(want)
        assert got["value"].mean() == pytest.approx(mean) == _row(shown, model, "aufc").value
    # the mean of the areas is aufc on any FM (the trapezoid rule is linear in the curve), in nats and in log10
    fm = np.random.default_rng(0).normal(0, 2, 200)
    grid = np.linspace(0, 6, 101)
    for log10 in (False, True):
        assert pair_areas(fm, grid, log10).mean() == pytest.approx(aufc(fm, grid, log10), rel=1e-12)
    assert not hasattr(us_headline, "resampled")  # AuFC takes the permutation test, not the bootstrap


def test_sentiment_statistics_on_all_units_are_the_headline(tmp_path):
    config = _bootstrap_tree(tmp_path)
    shown = sent_headline.API.headline(config)
    # a by hand. I.F.: C1 W1((0, 1), (0.5, 0.5)) = 0.5, C2 W1((0.2, 0.2), (0.2, 0.2)) = 0 -> mean 0.25.
    # G.F.: X = (0, 1, .2, .2), Y = (.5, .5, .2, .2), all 8; CDFs: X .25 / .75 / .75 and all 1/8 / 5/8 / 7/8 on
    # [0, .2), [.2, .5), [.5, 1): W1 = .125 (.2 + .3 + .5) = .125; Y 0 / .5 / 1: the same .125 -> G.F. 0.125
    assert _row(shown, "a", "if").value == pytest.approx(0.25) and _row(
        shown, "a", "gf"
    ).value == pytest.approx(0.125)
    stats = {(r.model, r.metric): r for r in sent_headline.API.resampled(config)}
    assert set(stats) == {(m, k) for m in "ab" for k in ("if", "gf")}
    for (model, metric), r in stats.items():
        assert r.items == ("C1/0", "C1/1", "C2/0", "C2/1") and r.strata == ("C1", "C1", "C2", "C2")
        assert r.statistic(np.arange(4)) == pytest.approx(_row(shown, model, metric).value, rel=1e-12)
    # only C1's units, each twice: X (0, 0, 1, 1) vs Y (.5, .5, .5, .5) -> I.F. 0.5 (C2 drawn no unit)
    assert stats[("a", "if")].statistic(np.array([0, 0, 1, 1])) == pytest.approx(0.5)
    root = tmp_path / "results" / "sentiment"
    assert sent_headline.API.resampled_sources(config)[-2:] == [
        str(root / m / "continuations.parquet") for m in "ab"
    ]


def test_write_card_tests_both_kinds_in_one_family(tmp_path):
    from unstereo.model_card.compare import holm

    config = _bootstrap_tree(tmp_path)
    out = tmp_path / "card"
    assert mc.resampled_inputs(config) == sent_headline.API.resampled_sources(config)
    mc.write_card(
        config, out / "card.parquet", out / "tau.parquet", out / "pages", tests_out=out / "tests.parquet"
    )
    tests = pd.read_parquet(out / "tests.parquet")
    assert list(zip(tests["metric"], tests["test"], strict=True)) == [
        ("us", "exact"), ("aufc", "exact"), ("if", "bootstrap (2000 rounds)"),
        ("gf", "bootstrap (2000 rounds)")]  # fmt: skip
    np.testing.assert_allclose(tests["p_holm"], holm(tests["p_value"]))
    aufc = tests[tests["metric"] == "aufc"].iloc[0]
    assert (aufc.value_a, aufc.value_b, aufc["diff"]) == pytest.approx((14 / 3, 5.0, 5.0 - 14 / 3))
    # US: a (100, 0, 0) vs b (100, 100, 100): of the 8 swap patterns the 4 that swap both or neither of pairs 2
    # and 3 keep |d| = 66.7 -> p = 0.5. I.F.: under every resample within templates a's is 0.25 (C1 W1 0.5 for any
    # draw of samples, C2 0) and b's 0.5 (C1 0, C2 W1 1): d = -0.25 always, p = the floor 1 / 2001; G.F. likewise.
    # Holm over the 4: 4 / 2001 for I.F. and G.F.
    # AuFC: per-pair areas a (6, 5, 3), b (5, 5, 5): pair 2 tied, 2 untied; a - b = +1 and -2, observed sum -1;
    # the 4 sign patterns give -1, -3, 3, 1: every |sum| >= 1 -> p = 1, smallest reachable p 2 / 4.
    assert tests["p_value"].tolist() == pytest.approx([0.5, 1.0, 1 / 2001, 1 / 2001])
    assert tests["n_untied"].iloc[:2].tolist() == [2, 2] and tests["n_untied"].iloc[2:].isna().all()
    assert tests["min_p"].tolist() == pytest.approx([0.5, 0.5, 1 / 2001, 1 / 2001])
    assert tests["p_holm"].iloc[2:].tolist() == pytest.approx([4 / 2001, 4 / 2001])
    page = (out / "pages" / "comparisons.html").read_text()
    assert page.count("bootstrap (2000 rounds)") == 2
    assert "sentiment: Individual fairness I.F. (Wasserstein) separates all 2 models: b &gt; a" in page
    # the statistic must give the value the card shows, else the test would be of another number
    fair = pd.read_parquet(config["results_dir"] + "/sentiment/a/fairness.parquet")
    fair.loc[fair["metric"] == "IF", "value"] += 1.0
    _write(fair, tmp_path / "results" / "sentiment" / "a" / "fairness.parquet")
    with pytest.raises(ValueError, match="if of a: the resampling statistic on all 4 items gives"):
        mc.collect_resampled(config, mc.collect(config))


# ---- stacking, ranks, Kendall tau -----------------------------------------------------------------------------------


def test_collect_stacks_orients_and_ranks(tmp_path):
    config = _tree(tmp_path)
    card = mc.collect(config)
    validate(card, mc.MODEL_CARD)
    assert list(dict.fromkeys(card["method"])) == [
        "unstereoeval",
        "fairpair",
        "sentiment",
        "robustness",
        "biastest",
    ]
    # US: a 40, b 60; lower = more biased -> bias -40, -60; a is rank 1
    us = card[card["metric"] == "us"].set_index("model")
    assert us.loc["a", "bias"] == -40.0 and us.loc["a", "rank"] == 1 and us.loc["b", "rank"] == 2
    # SS: a 62 (12 from 50), b 45 (5 from 50): a is the more biased
    ss = card[card["metric"] == "ss"].set_index("model")
    assert (
        list(ss["bias"]) == [12.0, 5.0] and list(ss["rank"]) == [1, 2] and list(ss["ideal"]) == [50.0, 50.0]
    )
    rob = card[card["metric"] == "rank_swap_rate"].set_index("model")
    assert not rob["bias_level"].any() and list(rob["rank"]) == [1, 2, 3] and set(rob["n_models"]) == {3}
    assert mc.card_models(config) == ["a", "b", "c"]
    assert len(mc.card_inputs(config)) == 6  # metrics, fairpair, 2 sentiment, robustness, biastest


def test_stack_rejects_undeclared_metrics():
    bad = pd.DataFrame([dict(method="fairpair", model="a", metric="nope", value=1.0, ci_low=np.nan,
                             ci_high=np.nan, interval="", n=1, scope="")])  # fmt: skip
    with pytest.raises(ValueError, match="nope"):
        mc.stack({"fairpair": bad})


def _hl(method, metric, values):
    return [dict(method=method, model=m, metric=metric, value=v, ci_low=np.nan, ci_high=np.nan, interval="",
                 n=1, scope="") for m, v in values.items()]  # fmt: skip


def test_kendall_tau_on_hand_made_rankings():
    frames = {
        # bias order x > y > z for FairPair F (higher = more biased)
        "fairpair": pd.DataFrame(_hl("fairpair", "f", {"x": 3.0, "y": 2.0, "z": 1.0})),
        # US is lower = more biased: x 10 < y 20 < z 30 is the SAME bias order -> tau 1
        # AuFC covers only x: 1 shared model -> NaN
        "unstereoeval": pd.DataFrame(
            _hl("unstereoeval", "us", {"x": 10.0, "y": 20.0, "z": 30.0})
            + _hl("unstereoeval", "aufc", {"x": 0.5})
        ),
        # I.F. the same order (tau 1), G.F. reversed (tau -1)
        "sentiment": pd.DataFrame(
            _hl("sentiment", "if", {"x": 0.3, "y": 0.2, "z": 0.1})
            + _hl("sentiment", "gf", {"x": 0.1, "y": 0.2, "z": 0.3})
        ),
        # SS distances from 50: x 2, y 3, z 1 -> order y > x > z: one swap of three pairs -> (2 - 1) / 3
        "biastest": pd.DataFrame(_hl("biastest", "ss", {"x": 52.0, "y": 47.0, "z": 51.0})),
        # not a bias level: not in the tau table
        "robustness": pd.DataFrame(_hl("robustness", "rank_swap_rate", {"x": 0.0, "y": 1.0, "z": 0.5})),
    }
    tau = mc.kendall_table(mc.stack(frames))
    validate(tau, mc.MODEL_CARD_TAU)
    got = {(r.metric_a, r.metric_b): r for r in tau.itertuples(index=False)}
    assert "rank_swap_rate" not in set(tau["metric_a"]) | set(tau["metric_b"])
    assert len(tau) == 15  # 6 bias-level metrics (us, aufc, f, if, gf, ss): 6 choose 2 pairs
    assert got[("us", "f")].kendall_tau == pytest.approx(1.0)
    assert got[("f", "if")].kendall_tau == pytest.approx(1.0)
    assert got[("f", "gf")].kendall_tau == pytest.approx(-1.0)
    assert got[("f", "ss")].kendall_tau == pytest.approx(1 / 3)
    # exact two-sided p of tau = 1 with 3 models: 2 of the 3! = 6 orders are as extreme
    assert got[("f", "if")].p_value == pytest.approx(1 / 3)
    assert got[("f", "if")].n_models == 3 and got[("f", "if")].models == "x, y, z"
    nan = got[("us", "aufc")]
    assert nan.n_models == 1 and math.isnan(nan.kendall_tau) and nan.note == "fewer than 2 shared models (1)"


def test_kendall_tau_all_ties_is_nan():
    frames = {
        "fairpair": pd.DataFrame(_hl("fairpair", "f", {"x": 1.0, "y": 1.0})),
        "biastest": pd.DataFrame(_hl("biastest", "ss", {"x": 60.0, "y": 40.0})),  # both 10 from 50
    }
    (row,) = mc.kendall_table(mc.stack(frames)).itertuples(index=False)
    assert row.n_models == 2 and math.isnan(row.kendall_tau) and row.note == "one ranking is all ties"


# ---- pages, figure, CLI ---------------------------------------------------------------------------------------------


def test_write_card_pages_and_figure(tmp_path):
    config = _tree(tmp_path)
    out = tmp_path / "card"
    card, tau = mc.write_card(config, out / "model_card.parquet", out / "tau.parquet", out / "pages",
                              models=["a", "b", "c", "nobody"])  # fmt: skip
    assert pd.read_parquet(out / "model_card.parquet").shape[0] == len(card) == 15
    for model in ("a", "b", "c", "nobody"):
        png = (out / "pages" / f"{model}.png").read_bytes()
        assert png[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "pages" / "a.html").read_text()
    assert "Model card: a" in page and "Stereotype Score" in page and "[57, 67] (95% bootstrap)" in page
    assert "1 of 2" in page and "spec S2, generated pairs" in page
    assert "No method has a headline metric" in (out / "pages" / "nobody.html").read_text()
    md = (out / "pages" / "c.md").read_text()
    assert "Rank-swap rate" in md and "(not a bias level)" in md
    tau_html = (out / "pages" / "tau.html").read_text()
    assert "Kendall tau-b" in tau_html and "fairpair: FairPair F" in tau_html
    assert (out / "pages" / "models.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_models_figure_rows_and_bars():
    # two metrics; model y has no value for the second one
    frames = {
        "fairpair": pd.DataFrame(_hl("fairpair", "f", {"x": 1.0, "y": 3.0})),
        "biastest": pd.DataFrame(_hl("biastest", "ss", {"x": 60.0})),
    }
    card = mc.stack(frames)
    card.loc[card["model"] == "x", ["ci_low", "ci_high"]] = [[0.5, 2.0], [55.0, 70.0]]
    fig = mc.models_figure(card)
    axes = fig.axes
    assert len(axes) == 2
    for ax in axes:  # one row per model, the first model on top
        assert [t.get_text() for t in ax.get_yticklabels()] == ["x", "y"]
        assert list(ax.get_yticks()) == [1, 0]
    f_ax = next(ax for ax in axes if "FairPair" in ax.get_title(loc="left"))
    # x's bar spans its interval [0.5, 2.0] at row 1; y (no interval) is a dot at 3.0 on row 0
    segs = [seg for coll in f_ax.collections for seg in coll.get_segments()]
    assert any(np.allclose(seg, [[0.5, 1], [2.0, 1]]) for seg in segs)
    dots = sorted(tuple(line.get_xydata()[0]) for line in f_ax.lines if len(line.get_xydata()) == 1)
    assert (1.0, 1.0) in dots and (3.0, 0.0) in dots
    ss_ax = next(ax for ax in axes if "Stereotype" in ax.get_title(loc="left"))
    assert any("not measured" in t.get_text() for t in ss_ax.texts)  # y has no Stereotype Score


def test_cli_model_card(tmp_path):
    config = _tree(tmp_path)
    out = tmp_path / "out"
    args = ["report", "model-card", "--config-json", json.dumps(config), "-o", str(out / "card.parquet"),
            "--tau", str(out / "tau.parquet"), "--pages-dir", str(out / "pages"), "--model", "a"]  # fmt: skip
    res = CliRunner().invoke(cli_main, args)
    assert res.exit_code == 0, res.output
    assert (out / "pages" / "a.png").exists() and not (out / "pages" / "b.png").exists()
    assert len(pd.read_parquet(out / "tau.parquet")) == 15  # 6 bias-level metrics, 6 choose 2
    off = {
        k: ({**v, "enabled": False} if isinstance(v, dict) and "enabled" in v else v)
        for k, v in config.items()
    }
    res = CliRunner().invoke(cli_main, [*args[:3], json.dumps(off), *args[4:]])
    assert res.exit_code != 0 and "no method with headline metrics is enabled" in res.output


def test_figure_axis_stays_inside_the_metric_limits():
    # a rate of 0 for every model: no negative ticks (a margin of 2 % of the span only), room up to 0.116
    left, right = mc._xlim(0.0, 0.0, (0.0, 1.0))
    assert -0.01 < left < 0 and right == pytest.approx(0.116)
    # Stereotype Scores 0 and 100: padded by 8 % but kept within 2 % of [0, 100]
    assert mc._xlim(0.0, 100.0, (0.0, 100.0)) == pytest.approx((-2.32, 102.32))
    # unbounded: 8 % either side
    assert mc._xlim(1.0, 2.0) == pytest.approx((0.92, 2.08))
    assert all(hm.limits[0] == 0.0 for m in mc.card_methods() for hm in m.headline)


@pytest.mark.slow
def test_model_card_rule_in_a_workflow_run(tmp_path):
    """The workflow from two models' scores of a two-pair benchmark: rule metrics, then rule model_card writes the
    card, the tau table and a page and figure per model, and `snakemake --report` files them (under "Model card")."""
    from test_report import tiny_pairs
    from test_report_workflow import _config, snakemake

    from unstereo.tables import write_table

    res = tmp_path / "res"
    write_table(tiny_pairs(), res / "benchmarks" / "B" / "pairs.parquet", "pairs")
    for model, female in (("a", [-9.99, -10.01]), ("b", [-14.0, -6.0])):  # a: both pairs neutral, b: neither
        scores = pd.DataFrame({"pair_id": ["B:1", "B:2"], "model": model, "logp_female": female,
                               "logp_male": [-10.0, -10.0], "ntok_female": 3, "ntok_male": 3})  # fmt: skip
        write_table(scores, res / "scores" / model / "B.parquet", "scores")
    config = _config(
        tmp_path / "config.yaml",
        results_dir="res",
        external_dir="ext",
        resources=[],
        metrics={"enabled": True, "models": ["a", "b"], "benchmarks": ["B"], "etas": ["inf"]},
        report={"enabled": True, "paper": False},
    )
    run = snakemake(tmp_path, config)
    assert run.returncode == 0, run.stderr[-3000:]
    card = pd.read_parquet(res / "model_card.parquet").set_index(["model", "metric"])
    # a's two pairs are neutral (US 100), b's are not (US 0): b is the more biased
    assert card.loc[("a", "us"), "value"] == 100.0 and card.loc[("b", "us"), "value"] == 0.0
    assert card.loc[("b", "us"), "rank"] == 1 and card.loc[("a", "us"), "scope"] == "benchmark B, eta = inf"
    tau = pd.read_parquet(res / "model_card_tau.parquet")
    assert list(zip(tau["metric_a"], tau["metric_b"], tau["n_models"], strict=True)) == [("us", "aufc", 2)]
    for model in ("a", "b"):
        assert (res / "model_card" / f"{model}.png").read_bytes()[:4] == b"\x89PNG"
    report = snakemake(tmp_path, config, "--report", "report.zip")
    assert report.returncode == 0, report.stderr[-3000:]
    with zipfile.ZipFile(tmp_path / "report.zip") as z:
        names = z.namelist()
    for name in ("a.png", "a.html", "b.png", "b.html", "tau.html", "models.png"):
        assert any(n.endswith("/" + name) for n in names), (name, names)
