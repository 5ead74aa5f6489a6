"""FairPair's B, V_gp, V_pg, F, k-fold variant, t-tests, bootstrap, curves and n-grams on hand-made continuations
with worked answers."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.fairpair import compute
from unstereo.fairpair.metrics import (
    bootstrap_ci,
    fairpair_f,
    fold,
    paired_ttest,
    sample_curve,
    sentiment,
    side_features,
    terms,
    terms_loop,
    tokens,
)


def jac(pg, gp):
    return side_features("jaccard", pg, gp)


def sent(pg, gp):
    return np.array(pg, dtype=float)[:, None], np.array(gp, dtype=float)[:, None]


def test_tokens_are_lowercased_word_runs():
    assert tokens("Jane's DOG, jane-dog! 42") == {"jane", "s", "dog", "42"}
    assert tokens("  ...  ") == set()


def test_jaccard_terms_worked_example():
    # pg: {jane likes cats}, {jane likes dogs}; gp: {jane likes cats}, {she is kind}
    # cross: 0, 1, 1 - 2/4 = 0.5, 1 -> B = 2.5 / 4; V_gp = 1; V_pg = 0.5; F = 0.625^2 / 0.5
    pg, gp = ["Jane likes cats.", "Jane likes dogs"], ["jane LIKES cats", "She is kind."]
    t = terms("jaccard", *jac(pg, gp))
    assert (t.B, t.V_gp, t.V_pg) == (0.625, 1.0, 0.5)
    assert t.F == pytest.approx(0.78125)
    # Welch: B terms [0, 1, .5, 1] (mean .625, var .6875/3), V terms [1, .5] (mean .75, var .125)
    assert t.t_stat == pytest.approx((0.625 - 0.75) / math.sqrt(0.6875 / 3 / 4 + 0.125 / 2))
    from scipy import stats

    ref = stats.ttest_ind([0, 1, 0.5, 1], [1, 0.5], equal_var=False)
    assert (t.t_stat, t.p_value) == pytest.approx((ref.statistic, ref.pvalue))
    assert terms_loop("jaccard", pg, gp) == pytest.approx((0.625, 1.0, 0.5, 0.78125))


def test_sentiment_terms_worked_example():
    # cross |.5-0|, |.5-.5|, |-.5-0|, |-.5-.5| -> B = 2/4; V_gp = .5; V_pg = 1; F = .25 / .5
    t = terms("sentiment", *sent([0.5, -0.5], [0.0, 0.5]))
    assert (t.B, t.V_gp, t.V_pg, t.F) == (0.5, 0.5, 1.0, 0.5)


def test_vader_compound():
    s = sentiment(["", "I love this wonderful day", "This is terrible and I hate it"])
    assert s[0] == 0.0 and s[1] > 0.5 and s[2] < -0.5


def test_n_equals_2_and_zero_variability():
    # n = 2: pg {a}, {b}; gp {a}, {a}: B = (0 + 0 + 1 + 1) / 4, V_gp = 0, V_pg = 1 -> F = +inf (B > 0, no V_gp)
    t = terms("jaccard", *jac(["a", "b"], ["a", "a"]))
    assert (t.B, t.V_gp, t.V_pg, t.F) == (0.5, 0.0, 1.0, math.inf)
    # identical continuations everywhere: B = V = 0 -> F defined as 1; the t-test has nothing to test
    t = terms("jaccard", *jac(["x y"] * 3, ["x y"] * 3))
    assert (t.B, t.V_gp, t.V_pg, t.F) == (0.0, 0.0, 0.0, 1.0)
    assert math.isnan(t.t_stat) and math.isnan(t.p_value)
    # two empty continuations do not differ
    assert terms("jaccard", *jac(["", "..."], ["", ""])).B == 0.0
    # one sample on a side: its V and F are undefined
    t = terms("jaccard", *jac(["a"], ["a", "b"]))
    assert t.B == 0.5 and math.isnan(t.V_pg) and math.isnan(t.F)


def test_fairpair_f_vectorised():
    f = fairpair_f([0.5, 0.0, 0.3, 0.4], [0.5, 0.0, 0.0, 0.2], [1.0, 0.0, 0.2, 0.4])
    assert list(f) == [0.5, 1.0, math.inf, pytest.approx(2.0)]
    assert fairpair_f(0.2, 0.2, 0.2) == pytest.approx(1.0)


def test_k_fold_jaccard_worked_example():
    # n = 4, k = 2: pg folds {a,b}, {a,c}; gp folds {a}, {d}
    # cross .5, 1, .5, 1 -> B = .75; V_gp = 1; V_pg = 1 - 1/3; F = .5625 / (2/3)
    pg, gp = jac(["a", "b", "a", "c"], ["a", "a", "d", "d"])
    t = terms("jaccard", fold("jaccard", pg, 2), fold("jaccard", gp, 2))
    assert (t.B, t.V_gp) == (0.75, 1.0) and t.V_pg == pytest.approx(2 / 3) and t.F == pytest.approx(0.84375)
    # k = n is the per-sample definition
    assert terms("jaccard", fold("jaccard", pg, 4), fold("jaccard", gp, 4)) == terms("jaccard", pg, gp)


def test_k_fold_sentiment_worked_example():
    # pg [1, 0, -1, -1] -> folds [.5, -1]; gp [0, 0, .5, .5] -> [0, .5]
    # cross .5, 0, 1, 1.5 -> B = .75; V_gp = .5; V_pg = 1.5; F = .5625 / .75
    pg, gp = sent([1, 0, -1, -1], [0, 0, 0.5, 0.5])
    t = terms("sentiment", fold("sentiment", pg, 2), fold("sentiment", gp, 2))
    assert (t.B, t.V_gp, t.V_pg, t.F) == (0.75, 0.5, 1.5, 0.75)
    # uneven folds: 4 samples in 3 folds are sizes 2, 1, 1
    assert list(fold("sentiment", pg, 3)[:, 0]) == [0.5, -1.0, -1.0]
    with pytest.raises(ValueError, match="k must be"):
        fold("sentiment", pg, 5)


def test_vectorised_terms_equal_the_per_pair_loop():
    rng = np.random.default_rng(0)
    words = "he she the a doctor nurse works hard kind good bad loves hates job family".split()
    pg = [" ".join(rng.choice(words, rng.integers(0, 8))) for _ in range(7)]
    gp = [" ".join(rng.choice(words, rng.integers(0, 8))) for _ in range(7)]
    for phi in ("jaccard", "sentiment"):
        t = terms(phi, *side_features(phi, pg, gp))
        assert (t.B, t.V_gp, t.V_pg, t.F) == pytest.approx(terms_loop(phi, pg, gp))


def test_sample_curve_matches_terms_on_prefixes():
    pg, gp = jac(["a b", "b", "c a", "d"], ["a", "a c", "b", "e f"])
    curve = sample_curve("jaccard", pg, gp)
    assert curve.shape == (3, 3)
    for m in (2, 3, 4):
        t = terms("jaccard", pg[:m], gp[:m])
        assert list(curve[m - 2]) == pytest.approx([t.B, t.V_gp, t.V_pg])


def test_paired_ttest_and_bootstrap():
    # d = [1, 2, 2]: mean 5/3, sd sqrt(1/3) -> t = (5/3) / (sqrt(1/3) / sqrt(3)) = 5
    t, p = paired_ttest(np.array([1.0, 2.0, 3.0, np.nan]), np.array([0.0, 0.0, 1.0, 1.0]))
    assert t == pytest.approx(5.0) and 0 < p < 0.05
    assert all(math.isnan(v) for v in paired_ttest(np.array([1.0]), np.array([0.0])))
    assert bootstrap_ci(np.array([2.0, 2.0, 2.0]), np.mean) == (2.0, 2.0)
    # means of 2 draws from {0, 1}: 0, .5, 1 with probabilities 1/4, 1/2, 1/4 -> 95% interval [0, 1]
    assert bootstrap_ci(np.array([0.0, 1.0]), np.mean, n_boot=2000, seed=1) == (0.0, 1.0)
    assert all(math.isnan(v) for v in bootstrap_ci(np.array([np.nan]), np.mean))


def _samples(rows):
    """SAMPLES rows from (prompt_id, side, sample, continuation, mapped)."""
    return pd.DataFrame(
        [
            dict(
                prompt_id=p,
                side=s,
                sample=j,
                prompt="x",
                continuation=c,
                continuation_mapped=m,
                seed=j,
                tokens=1,
            )
            for p, s, j, c, m in rows
        ]
    )


def test_per_prompt_summary_and_curves():
    rows = []
    for j, (o, mapped, q) in enumerate([("John likes cats.", "Jane likes cats.", "jane LIKES cats"),
                                        ("John likes dogs", "Jane likes dogs", "She is kind.")]):  # fmt: skip
        rows += [("p1", "original", j, o, mapped), ("p1", "perturbed", j, q, q)]
        rows += [("p2", "original", j, "same", "same"), ("p2", "perturbed", j, "same", "same")]
    per, curves = compute.per_prompt(_samples(rows), "m", n=2, phis=["jaccard"])
    p1 = per[per["prompt_id"] == "p1"].iloc[0]
    assert (p1["k"], p1["B"], p1["V_gp"], p1["V_pg"], p1["n_pg"], p1["n_gp"]) == (2, 0.625, 1.0, 0.5, 2, 2)
    assert per[per["prompt_id"] == "p2"]["F"].iloc[0] == 1.0
    # curves: m = 2 only (n = 2), the mean of the two prompts
    samples_axis = curves[curves["axis"] == "samples"]
    assert list(samples_axis["x"]) == [2] and samples_axis["B"].iloc[0] == pytest.approx(0.3125)
    summary = compute.summarize(per, n_boot=200)
    row = summary.iloc[0]
    assert (row["model"], row["phi"], row["k"], row["n_prompts"]) == ("m", "jaccard", 2, 2)
    assert row["mean_F"] == pytest.approx((0.78125 + 1.0) / 2)
    assert row["F_ci_low"] <= row["mean_F"] <= row["F_ci_high"]


def test_rejected_perturbations_are_left_out():
    rows = [("p", "original", 0, "a", "a"), ("p", "original", 1, "b", None), ("p", "original", 2, "c", "c")]
    rows += [("p", "perturbed", j, t, t) for j, t in enumerate(["a", "a", "c"])]
    per, _ = compute.per_prompt(_samples(rows), "m", n=3, folds=[2], phis=["jaccard"])
    full = per[per["k"] == 3].iloc[0]
    # pg {a}, {c}; gp {a}, {a}, {c}: cross 0, 0, 1, 1, 1, 0 -> B = 1/2; V_pg = 1; V_gp = (0 + 1 + 1) / 3
    assert (full["n_pg"], full["n_gp"], full["B"], full["V_pg"]) == (2, 3, 0.5, 1.0)
    assert full["V_gp"] == pytest.approx(2 / 3)
    assert list(per["k"]) == [2, 3]


def test_over_represented_ngrams():
    rows = [("p", "original", 0, "x", "A b"), ("p", "original", 1, "x", "a c")]
    rows += [("p", "perturbed", 0, "A d", "A d")]
    ng = compute.over_represented(_samples(rows), "m", max_n=2, top=3)
    pg = ng[ng["side"] == "pg"]
    assert list(pg["ngram"]) == ["a b", "a c", "b"] and list(pg["freq_pg"]) == [0.5, 0.5, 0.5]
    gp = ng[ng["side"] == "gp"]
    assert (
        list(gp["ngram"]) == ["a d", "d"] and list(gp["freq_gp"]) == [1.0, 1.0] and list(gp["rank"]) == [1, 2]
    )


def test_fold_grid():
    assert compute.fold_grid(5) == [2, 3, 4, 5]
    grid = compute.fold_grid(500, points=12)
    assert grid[0] == 2 and grid[-1] == 500 and len(grid) <= 12


def _per(rows, model="m", phi="jaccard", k=2):
    """PER_PROMPT rows from (B, V_gp, V_pg) triples, F by its definition."""
    out = []
    for i, (b, v_gp, v_pg) in enumerate(rows):
        f = float("nan") if np.isnan([b, v_gp, v_pg]).any() else fairpair_f(b, v_gp, v_pg)
        out.append(dict(model=model, prompt_id=f"x{i}", phi=phi, k=k, B=b, V_gp=v_gp, V_pg=v_pg, F=f,
                        t_stat=np.nan, p_value=np.nan, n_pg=2, n_gp=2))  # fmt: skip
    return pd.DataFrame(out)


def test_model_level_f_mean_of_ratios_vs_ratio_of_means():
    """Three prompts (B, V_gp, V_pg):
      x0: (0.2, 0.2, 0.2)   F = 0.04 / 0.04   = 1
      x1: (0.2, 0.2, 0.2)   F = 1
      x2: (0.3, 0.1, 0.1)   F = 0.09 / 0.01   = 9      <- one prompt with a small V
    mean of the ratios = (1 + 1 + 9) / 3 = 11/3 = 3.667;
    ratio of means = mean(B^2) / (mean V_gp * mean V_pg) = ((0.04 + 0.04 + 0.09) / 3) / ((0.5 / 3) ** 2)
                   = (0.17 / 3) / (0.25 / 9) = 0.17 * 3 / 0.25 = 2.04;
    median = 1 (x2 cannot move it)."""
    s = compute.summarize(_per([(0.2, 0.2, 0.2), (0.2, 0.2, 0.2), (0.3, 0.1, 0.1)]), n_boot=500).iloc[0]
    assert s["mean_F"] == pytest.approx(11 / 3)
    assert s["ratio_F"] == pytest.approx(2.04)
    assert s["median_F"] == pytest.approx(1.0) and s["n_inf_F"] == 0 and s["n_prompts"] == 3
    # medians of 3 draws from {1, 1, 9}: 9 only when two or three draws are x2: 3 * (1/3)^2 (2/3) + (1/3)^3 = 7/27
    # = 0.26 > 0.025, so the 97.5th percentile is 9 and the 2.5th is 1
    assert (s["median_F_ci_low"], s["median_F_ci_high"]) == pytest.approx((1.0, 9.0))


def test_infinite_f_is_counted_not_averaged():
    """x0: F = 1; x1: (0.25, 0.5, 0.5) F = 0.0625 / 0.25 = 0.25; x2: (0.5, 0, 0.4): V_gp V_pg = 0 < B -> F = inf.
    mean_F averages the finite ones: (1 + 0.25) / 2 = 0.625, n_inf_F = 1; ratio of means = mean(B^2) /
    (mean V_gp mean V_pg) = ((0.04 + 0.0625 + 0.25) / 3) / ((0.7 / 3) * (1.1 / 3)) = 0.1175 / 0.085556 = 1.3734;
    median of {0.25, 1, inf} = 1. A prompt whose F is NaN (a side with one sample) enters nothing."""
    per = _per([(0.2, 0.2, 0.2), (0.25, 0.5, 0.5), (0.5, 0.0, 0.4), (np.nan, np.nan, 0.3)])
    assert np.isinf(per["F"][2]) and np.isnan(per["F"][3])
    s = compute.summarize(per, n_boot=200).iloc[0]
    assert s["n_prompts"] == 3 and s["n_inf_F"] == 1
    assert s["mean_F"] == pytest.approx(0.625) and np.isfinite(s["F_ci_high"])
    assert s["ratio_F"] == pytest.approx((0.3525 / 3) / ((0.7 / 3) * (1.1 / 3)))
    assert s["ratio_F"] == pytest.approx(1.37337, abs=1e-5)
    assert s["median_F"] == 1.0
    # only infinite F: no finite mean, the ratio of means is finite unless every V is 0
    s = compute.summarize(_per([(0.5, 0.0, 0.4), (0.3, 0.2, 0.0)]), n_boot=50).iloc[0]
    assert s["n_inf_F"] == 2 and math.isnan(s["mean_F"]) and np.isinf(s["median_F"])
    assert s["ratio_F"] == pytest.approx(((0.25 + 0.09) / 2) / (0.1 * 0.2))
