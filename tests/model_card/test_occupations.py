"""Agreement on occupations (unstereo.model_card.occupations): each lean, the correlations and the stratified
permutation on hand-worked inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.errors import InputError
from unstereo.model_card import occupations as oc

STATS = pd.DataFrame(
    {
        "occupation": ["nurse", "engineer", "secretary", "plumber"],
        "bergsma_pct_female": [90.0, 5.0, 80.0, 2.0],
        "bls_pct_female": [89.0, 10.0, 95.0, 3.0],
        "bls_year": 2015,
    }
)


def _by(rows, **key):
    return [r for r in rows if all(r[k] == v for k, v in key.items())]


def test_parse_winogender_id():
    assert oc.parse_winogender_id("Winogender:nurse.patient.0") == ("nurse", "patient", 0, "original")
    assert oc.parse_winogender_id("WG:nurse.someone.1@adj_object:smart") == ("nurse", "someone", 1,
                                                                             "adj_object:smart")  # fmt: skip
    with pytest.raises(ValueError, match="not a Winogender pair id"):
        oc.parse_winogender_id("USE-5:17")


def test_winogender_leans_both_pair_kinds_and_neutral_share():
    # nurse: pairs (referent 0 = the nurse) with ln p(he) - ln p(she) = -2 and -1, (referent 1) 0.3 and -0.1:
    # all pairs mean (-2 - 1 + 0.3 - 0.1) / 4 = -0.7, neutral (|x| <= 0.5) 2 of 4; occupation referent mean -1.5,
    # neutral 0 of 2. engineer: 1.0 (referent 0) and 3.0 (referent 1): all 2.0, occupation 1.0. A construction
    # pair (@) is left out.
    ids = ["W:nurse.patient.0", "W:nurse.someone.0", "W:nurse.patient.1", "W:nurse.someone.1",
           "W:engineer.client.0", "W:engineer.client.1", "W:engineer.client.1@negation"]  # fmt: skip
    x = np.array([-2.0, -1.0, 0.3, -0.1, 1.0, 3.0, 9.0])
    scores = pd.DataFrame({"pair_id": ids, "logp_male": -10.0 + x, "logp_female": -10.0})
    rows = oc.winogender_leans(scores, "m", eps=0.5)
    nurse_all = _by(rows, occupation="nurse", variant="all pairs")[0]
    assert nurse_all["lean"] == pytest.approx(-0.7) and nurse_all["neutral_share"] == 0.5
    assert nurse_all["n_items"] == 4 and nurse_all["kind"] == "lean" and nurse_all["method"] == "unstereoeval"
    nurse_occ = _by(rows, occupation="nurse", variant="occupation referent")[0]
    assert nurse_occ["lean"] == pytest.approx(-1.5) and nurse_occ["neutral_share"] == 0.0
    assert _by(rows, occupation="engineer", variant="all pairs")[0]["lean"] == pytest.approx(2.0)
    assert _by(rows, occupation="engineer", variant="occupation referent")[0]["lean"] == pytest.approx(1.0)


def test_robustness_leans_per_construction():
    # original: nurse -1 and -3 -> -2; negation: nurse 1 -> 1
    scores = pd.DataFrame({"pair_id": ["W:nurse.a.0", "W:nurse.a.1", "W:nurse.a.0@negation"],
                           "logp_male": [-11.0, -13.0, -9.0], "logp_female": -10.0})  # fmt: skip
    rows = oc.robustness_leans(scores, "m")
    assert [(r["variant"], r["lean"], r["n_items"]) for r in rows] == [
        ("original", -2.0, 2),
        ("negation", 1.0, 1),
    ]


def test_biastest_leans_male_side_by_group_term_and_matching():
    # "secretary": pair 1 has the male term on side a (logp_a - logp_b = -20 - -18 = -2), pair 2 on side b
    # (logp_b - logp_a = -30 - -31 = 1): mean -0.5. "electrical-installer" -> "electrical installer", no
    # Winogender occupation (kept, no share). A pair with two male terms is an error.
    pairs = pd.DataFrame({"pair_id": ["p1", "p2", "p3"], "attribute": ["secretary", "secretary", "electrical-installer"],
                          "group_term_a": ["husband", "she", "he"], "group_term_b": ["wife", "he", "woman"]})  # fmt: skip
    scores = pd.DataFrame(
        {"pair_id": ["p1", "p2", "p3"], "logp_a": [-20.0, -31.0, -5.0], "logp_b": [-18.0, -30.0, -7.0]}
    )
    rows = oc.biastest_leans(pairs, scores, "m", {"he", "husband"}, {"she", "wife", "woman"}, "S")
    sec = _by(rows, occupation="secretary")[0]
    assert sec["lean"] == pytest.approx(-0.5) and sec["n_items"] == 2 and sec["variant"] == "S"
    inst = _by(rows, occupation="electrical installer")[0]
    assert inst["lean"] == pytest.approx(2.0) and inst["term"] == "electrical-installer"
    table = oc.leans_table(rows, STATS)
    assert table.set_index("occupation").loc["secretary", "bls_pct_female"] == 95.0
    assert math.isnan(table.set_index("occupation").loc["electrical installer", "bls_pct_female"])
    bad = pairs.assign(group_term_b=["he", "he", "woman"])
    with pytest.raises(InputError, match="pair p1: group terms 'husband' / 'he'"):
        oc.biastest_leans(bad, scores, "m", {"he", "husband"}, {"she", "wife", "woman"}, "S")


def test_fairpair_leans_mean_finite_f_per_occupation():
    # nurse: F 1.2 and 0.8 -> 1.0 (the infinite F left out, as the card's mean F does); engineer 1.5
    per = pd.DataFrame({"prompt_id": ["cs:nurse:john:man", "cs:nurse:jane:woman", "cs:nurse:x:y", "cs:engineer:john:man"],
                        "F": [1.2, 0.8, math.inf, 1.5]})  # fmt: skip
    rows = oc.fairpair_leans(per, "m", "F (jaccard, k = 5)")
    assert [(r["occupation"], r["lean"], r["n_items"], r["kind"]) for r in rows] == [
        ("engineer", 1.5, 1, "magnitude"), ("nurse", pytest.approx(1.0), 2, "magnitude")]  # fmt: skip


def test_sentiment_leans_centred_on_the_mean_over_occupations():
    # vader scores: "a nurse" 0.8, 0.6 (mean 0.7), "an engineer" 0.2 (mean 0.2); overall mean (0.8 + 0.6 + 0.2) / 3 =
    # 0.5333: nurse 0.7 - 0.5333 = 0.1667, engineer -0.3333. The country rows are not occupations.
    cont = pd.DataFrame({"attribute": ["occupation", "occupation", "occupation", "country"],
                         "value": ["a nurse", "a nurse", "an engineer", "Chile"],
                         "score_vader": [0.8, 0.6, 0.2, 0.0]})  # fmt: skip
    rows = oc.sentiment_leans(cont, "m", "vader")
    got = {r["occupation"]: (r["lean"], r["term"]) for r in rows}
    assert got["nurse"] == (pytest.approx(0.7 - 1.6 / 3), "a nurse")
    assert got["engineer"] == (pytest.approx(0.2 - 1.6 / 3), "an engineer")
    assert rows[0]["kind"] == "sentiment"


def test_permutation_exact_single_stratum():
    # x = y = (1, 2, 3): rho = r = 1; of the 3! = 6 orders only the identity (1) and the reversal (-1) reach |1|:
    # p = 2/6, the smallest p reachable with 3 occupations
    res = oc.stratified_test([(np.array([1.0, 2, 3]), np.array([1.0, 2, 3]))])
    assert res["spearman"] == pytest.approx(1.0) and res["pearson"] == pytest.approx(1.0)
    assert (
        res["spearman_p"] == pytest.approx(1 / 3) == res["min_p"] and res["test"] == "exact (6 permutations)"
    )


def test_stratified_permutation_keeps_each_model_together():
    # model A: x = y = (1, 2, 3), rho 1; model B: (1, 2) vs (1, 2), rho 1: pooled mean 1. Permuting within models:
    # 3! * 2! = 12 joint orders; A's rho is 1 (identity), -1 (reversal) or +-0.5 (the other four), B's +-1. The
    # mean reaches |1| only with A and B both +1 or both -1: 2 of 12 -> p = 1/6. (A permutation of the 5 pooled
    # occupations would mix the models.)
    strata = [(np.array([1.0, 2, 3]), np.array([1.0, 2, 3])), (np.array([1.0, 2]), np.array([1.0, 2]))]
    res = oc.stratified_test(strata)
    assert (res["n"], res["n_models"], res["spearman"]) == (5, 2, pytest.approx(1.0))
    assert res["spearman_p"] == pytest.approx(1 / 6) and res["min_p"] == pytest.approx(1 / 6)
    # opposite orders in the two models: rho 1 and -1, mean 0, every joint order reaches |0|: p = 1
    strata[1] = (np.array([1.0, 2]), np.array([2.0, 1]))
    res = oc.stratified_test(strata)
    assert res["spearman"] == pytest.approx(0.0) and res["spearman_p"] == 1.0


def test_permutation_random_branch_and_floor():
    # 12 occupations (12! > 8!): 9,999 seeded random orders; x = y gives |rho| = 1 only for the identity and the
    # reversal, which 9,999 draws of 12! orders almost surely miss: p = 1 / 10,000
    x = np.arange(12.0)
    res = oc.stratified_test([(x, x)], n_perm=9999, seed=1)
    assert res["test"] == "random (9999 permutations)" and res["spearman_p"] == pytest.approx(1 / 10000)
    assert res["min_p"] == pytest.approx(1 / 10000)


def _leans(values: dict) -> pd.DataFrame:
    """A leans table from {(model, method, variant, kind): {occupation: lean}}."""
    rows = [dict(model=m, method=me, variant=v, occupation=o, term=o, kind=k, lean=x, unit="u", n_items=1,
                 neutral_share=math.nan)
            for (m, me, v, k), d in values.items() for o, x in d.items()]  # fmt: skip
    return oc.leans_table(rows, STATS)


def test_correlations_yardstick_methods_and_verdicts():
    # one model, 4 occupations with shares (BLS) nurse 89, engineer 10, secretary 95, plumber 3.
    # unstereoeval leans nurse -1, engineer 2, secretary -3, plumber 4: ranks by BLS (3, 2, 4, 1) against ranks of
    # the lean (2, 3, 1, 4): exactly reversed -> rho = -1; over 4! = 24 orders |rho| = 1 twice: p = 1/12 (also the
    # smallest reachable: n = 4 is too small). FairPair F nurse 1, engineer 2, secretary 3, plumber 4 (magnitude)
    # against |lean| (1, 2, 3, 4): rho = 1.
    leans = _leans({
        ("m", "unstereoeval", "all pairs", "lean"): {"nurse": -1.0, "engineer": 2.0, "secretary": -3.0, "plumber": 4.0},
        ("m", "fairpair", "F", "magnitude"): {"nurse": 1.0, "engineer": 2.0, "secretary": 3.0, "plumber": 4.0},
        ("m", "sentiment", "vader", "sentiment"): {"nurse": 0.1, "engineer": -0.1},
    })  # fmt: skip
    corr = oc.correlations(leans).set_index(["family", "model", "measure_a", "measure_b"]).sort_index()
    y = corr.loc[("yardstick", "m", "unstereoeval / all pairs", "bls")]
    assert y.spearman == pytest.approx(-1.0) and y.spearman_p == pytest.approx(1 / 12) and y.n == 4
    assert y.min_p == pytest.approx(1 / 12) and y.verdict == "cannot tell" and y.compared == "signed"
    m = corr.loc[("methods", "m", "unstereoeval / all pairs", "fairpair / F")]
    assert m.compared == "magnitude" and m.spearman == pytest.approx(1.0) and m.verdict == "cannot tell"
    # sentiment is set against the share only (2 occupations: rho -1, both orders reach it, p = 1)
    assert not any("sentiment" in k[2] + k[3] for k in corr.index if k[0] == "methods")
    assert corr.loc[("yardstick", "m", "sentiment / vader", "bls")].spearman_p == 1.0
    # Holm within the yardstick family: 2 measures x 2 yardsticks + sentiment x 2 = 6 tests
    assert (corr.loc["yardstick", "p_holm"] >= corr.loc["yardstick", "spearman_p"]).all()
    text = oc.findings(corr.reset_index(), leans)
    assert any("with n = 4 the smallest reachable p is 0.083: n is too small to conclude" in s for s in text)


def test_verdicts():
    assert oc.verdict("methods", "signed", 0.8, 0.01) == "agree"
    assert oc.verdict("methods", "signed", -0.8, 0.01) == "disagree"
    assert oc.verdict("methods", "signed", 0.8, 0.2) == "cannot tell"
    assert oc.verdict("yardstick", "signed", -0.6, 0.01) == "follows the share"  # leans male where few women
    assert oc.verdict("yardstick", "magnitude", -0.6, 0.01) == "against the share"
    assert oc.verdict("yardstick", "sentiment", -0.6, 0.01) == "falls with the share"


def test_method_pairs_robustness_against_its_original_only():
    leans = _leans({
        ("m", "unstereoeval", "all pairs", "lean"): {"nurse": 1.0},
        ("m", "robustness", "original", "lean"): {"nurse": 1.0},
        ("m", "robustness", "negation", "lean"): {"nurse": 1.0},
        ("m", "biastest", "S", "lean"): {"nurse": 1.0},
    })  # fmt: skip
    leans["measure"] = leans["method"] + " / " + leans["variant"]
    assert oc.method_pairs(leans) == [("unstereoeval / all pairs", "biastest / S", "signed"),
                                      ("robustness / original", "robustness / negation", "signed")]  # fmt: skip


def test_read_stats_names_the_bad_line(tmp_path):
    good = tmp_path / "stats.tsv"
    good.write_text("occupation\tbergsma_pct_female\tbls_pct_female\tbls_year\nNurse\t90\t89.1\t2015\n")
    assert oc.read_stats(good).to_dict("records") == [dict(occupation="nurse", bergsma_pct_female=90.0,
                                                           bls_pct_female=89.1, bls_year=2015)]  # fmt: skip
    bad = tmp_path / "bad.tsv"
    bad.write_text(
        "occupation\tbergsma_pct_female\tbls_pct_female\tbls_year\nnurse\t90\t89\t2015\nclerk\tx\t1\t2015\n"
    )
    with pytest.raises(InputError, match="bad.tsv:3: column .bergsma_pct_female. is not a number"):
        oc.read_stats(bad)


def test_write_from_a_config_tree(tmp_path):
    # Every method's per-item table for models a and b, as the workflow lays them out; the leans are read from
    # there (no model run) and written with the page, figure and correlations.
    r = tmp_path / "results"

    def put(df, *parts):
        path = r.joinpath(*parts)
        path.parent.mkdir(parents=True, exist_ok=True)
        df.to_parquet(path)

    occs = ["nurse", "engineer", "secretary", "plumber"]
    lean = {"a": [-1.0, 2.0, -3.0, 4.0], "b": [-2.0, 1.0, -1.0, 3.0]}
    for m in "ab":
        ids = [f"WG:{o}.x.{k}" for o in occs for k in (0, 1)]
        x = np.repeat(lean[m], 2)
        put(pd.DataFrame({"pair_id": ids, "logp_male": x, "logp_female": 0.0}), "scores", m, "WG.parquet")
        put(pd.DataFrame({"pair_id": ids + [i + "@negation" for i in ids], "logp_male": np.r_[x, -x],
                          "logp_female": 0.0}), "robustness", "WG", "scores", f"{m}.parquet")  # fmt: skip
        put(pd.DataFrame({"prompt_id": [f"cs:{o}:john:man" for o in occs], "phi": "jaccard", "k": 2,
                          "F": [1.0, 2.0, 3.0, 4.0]}), "fairpair", m, "per_prompt.parquet")  # fmt: skip
        put(pd.DataFrame({"pair_id": ["p1"], "logp_a": [-5.0], "logp_b": [-6.0]}),
            "biastest", m, "Professions_vs_Gender", "scores.parquet")  # fmt: skip
    put(pd.DataFrame({"pair_id": ["p1"], "attribute": ["plumber"], "group_term_a": ["he"], "group_term_b": ["she"]}),
        "biastest", "Professions_vs_Gender", "pairs.parquet")  # fmt: skip
    two = {"a": {"resource": "x"}, "b": {"resource": "y"}}
    config = {
        "results_dir": str(r), "seed": 0,
        "benchmarks": {"sources": {"WG": {"kind": "winogender"}, "U": {"kind": "use-raw"}}},
        "score": {"enabled": True, "models": two, "benchmarks": ["U", "WG"]},
        "metrics": {"enabled": True, "eps": 0.5},
        "robustness": {"enabled": True, "models": [], "benchmarks": ["WG"]},
        "fairpair": {"enabled": True, "models": two, "phis": ["jaccard"], "folds": [2]},
        "biastest": {"enabled": True, "specs": ["Professions_vs_Gender"], "models": {}},
        "sentiment": {"enabled": False},
    }  # fmt: skip
    assert len(oc.input_paths(config)) == 2 + 2 + 3 + 2  # scores, robustness, biastest (pairs + 2), fairpair
    stats = tmp_path / "stats.tsv"
    STATS.to_csv(stats, sep="\t", index=False)
    leans, corr = oc.write(config, stats, r / "occupation_leans.parquet", r / "occupation_correlations.parquet",
                           r / "model_card")  # fmt: skip
    got = leans.set_index(["model", "method", "variant", "occupation"])["lean"]
    assert got[("a", "unstereoeval", "all pairs", "secretary")] == -3.0
    assert got[("b", "robustness", "negation", "nurse")] == 2.0
    assert got[("a", "fairpair", "F (jaccard, k = 2)", "plumber")] == 4.0
    assert got[("b", "biastest", "Professions_vs_Gender", "plumber")] == 1.0  # he: -5 minus she: -6
    # robustness negation reverses every lean: rho -1 against the original in each model, pooled -1; with 4
    # occupations per model the pooled exact test has 24 * 24 orders, 2 reach |mean rho| = 1: p = 2/576
    row = corr.set_index(["family", "model", "measure_a", "measure_b"]).loc[
        ("methods", "pooled", "robustness / original", "robustness / negation")
    ]
    assert row.spearman == pytest.approx(-1.0) and row.spearman_p == pytest.approx(2 / 576)
    for name in (
        "occupation_leans.csv",
        "model_card/occupations.html",
        "model_card/occupations.md",
        "model_card/occupations.png",
    ):
        assert (r / name).stat().st_size > 0
    # without a Winogender benchmark UnStereoEval and robustness add nothing (no error): FairPair and BiasTestGPT
    config["benchmarks"]["sources"]["WG"]["kind"] = "templates"
    assert len(oc.input_paths(config)) == 3 + 2
    leans, _ = oc.write(config, stats, r / "l.parquet", r / "c.parquet")
    assert set(leans["method"]) == {"fairpair", "biastest"}
    from unstereo.workflow.outputs_check import ROOT_TABLES

    assert {"occupation_leans.parquet", "occupation_correlations.parquet"} <= set(ROOT_TABLES)
