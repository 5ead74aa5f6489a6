"""The model card's paired tests, Holm correction, Kendall floor and findings on hand-worked inputs."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.headline_metric import HeadlineMetric
from unstereo.model_card.compare import (
    MODEL_CARD_TESTS,
    N_BOOT,
    bootstrap_indices,
    bootstrap_p,
    comparisons_page,
    findings,
    holm,
    kendall_min_p,
    pair_tests,
    paired_bootstrap,
    paired_permutation,
    permutation_min_p,
    untied,
)
from unstereo.model_card.headline import Resampled, items_table


def test_exact_permutation_three_items():
    # a = (1, 1, 1), b = (0, 0, 0): d_obs = 1. Of the 8 swap patterns only "none" and "all" keep |d| = 1 (the
    # other six give |d| = 1/3): p = 2/8.
    d, p, kind = paired_permutation([1, 1, 1], [0, 0, 0])
    assert (d, p, kind) == (1.0, 0.25, "exact")


def test_exact_permutation_two_items_every_pattern_as_extreme():
    # a = (2, 0), b = (0, 1): d = 1 - 0.5 = 0.5; patterns: none 0.5, swap 1st -1.5, swap 2nd 1.5, both -0.5 -> p = 1
    d, p, _ = paired_permutation([2, 0], [0, 1])
    assert d == 0.5 and p == 1.0


def test_identical_models_give_p_one():
    # 40 items, all tied: no swap moves anything, the one pattern is the observed one
    x = np.linspace(0, 1, 40)
    assert paired_permutation(x, x, n_perm=199) == (0.0, 1.0, "exact")
    assert paired_permutation([3.0, 1.0], [3.0, 1.0])[1] == 1.0
    # 40 untied items differing only by float noise: the random branch, and the noise splits no tie (p = 1)
    d, p, kind = paired_permutation(x, x * (1 + 1e-13), n_perm=199)
    assert abs(d) < 1e-12 and p == 1.0 and kind == "random (199 patterns)"


def test_exact_or_random_is_chosen_on_untied_items():
    # The case: US on 33 pairs, 4 untied. a = 100 (neutral) on pairs 1-3, 0 on pair 4; b the reverse; the
    # other 29 pairs are tied (some 100, some 0). Each untied pair adds +-100/33 to d; observed signs (+, +, +, -):
    # sum 2. Over the 16 sign patterns the sums are 4 (1), 2 (4), 0 (6), -2 (4), -4 (1): |sum| >= 2 in 10 -> 0.625,
    # exact (the random test gave 0.6303 on 33 items).
    tied = np.r_[np.full(15, 100.0), np.zeros(14)]
    a = np.r_[100.0, 100.0, 100.0, 0.0, tied]
    b = np.r_[0.0, 0.0, 0.0, 100.0, tied]
    d, p, kind = paired_permutation(a, b)
    assert untied(a, b) == 4 and kind == "exact"
    assert d == pytest.approx(200 / 33) and p == 0.625
    # the smallest p with u untied items: 2 / 2**u exact (the observed pattern and its mirror), 1 with none,
    # the random floor 1 / (1 + 9,999) above 16
    assert permutation_min_p(4) == 0.125 and permutation_min_p(0) == 1.0 and permutation_min_p(1) == 1.0
    assert permutation_min_p(17) == pytest.approx(1 / 10000)
    # the same 4 untied pairs among 200,000 tied ones: still exact over 16 patterns (of the untied items only, so
    # no 16 x 200,004 array), the same p
    big_tied = np.r_[np.full(100_000, 100.0), np.zeros(100_000)]
    big_a, big_b = np.r_[a[:4], big_tied], np.r_[b[:4], big_tied]
    assert paired_permutation(big_a, big_b)[1:] == (0.625, "exact")
    # a = 1, b = 0 on 4 untied items: the extreme pattern and its mirror are 2 of 16 -> the floor is reached
    assert paired_permutation([1, 1, 1, 1, 5], [0, 0, 0, 0, 5])[1] == 0.125


def test_random_permutation_clear_difference():
    # 100 items, a = 1, b = 0: |d| = 1 only when no item or every item is swapped, never among 999 random patterns
    # (probability 2 / 2**100), so p = (1 + 0) / (1 + 999).
    d, p, _ = paired_permutation(np.ones(100), np.zeros(100), n_perm=999, seed=3)
    assert d == 1.0 and p == pytest.approx(1 / 1000)


def test_away_metric_orientation():
    # Stereotype Score, ideal 50: a = (100, 100) -> SS 100, bias 50; b = (0, 100) -> SS 50, bias 0; d = 50.
    # Swapping item 1 gives (0, 100) vs (100, 100): d = -50; swapping item 2 changes nothing: every pattern has |d| = 50
    ss = HeadlineMetric("ss", "SS", "away", ideal=50.0)
    d, p, _ = paired_permutation([100, 100], [0, 100], bias=ss.bias)
    assert d == 50.0 and p == 1.0


def test_weighted_mean_is_the_statistic():
    # weights (1, 3): a = (4, 0) -> 1.0, b = (0, 0) -> 0; d = 1; patterns: none 1, swap 1st -1, swap 2nd 1, both -1
    d, p, _ = paired_permutation([4, 0], [0, 0], weight=[1, 3])
    assert d == 1.0 and p == 1.0


def _max_of(values):
    """A statistic that is no mean: the largest of the values at the given positions."""
    values = np.asarray(values, dtype=float)
    return lambda pos: float(values[np.asarray(pos)].max())


EVERY_RESAMPLE_OF_3 = [(i, j, k) for i in range(3) for j in range(3) for k in range(3)]  # all 27, each once


def test_bootstrap_three_items_every_resample():
    # a = (1, 2, 3), b = (2, 2, 2), statistic max: observed d = 3 - 2 = 1. Over the 27 resamples of 3 positions:
    # 19 hold position 3 (27 - 2**3): d = 3 - 2 = 1; 7 hold position 2 but not 3 (2**3 - 1): d = 0; one is (1, 1, 1):
    # d = 1 - 2 = -1. Share d <= 0 = 8/27, share d >= 0 = 26/27: p = 2 * 8/27 = 16/27 (above the floor 1/28).
    d, p, kind = paired_bootstrap(_max_of([1, 2, 3]), _max_of([2, 2, 2]), 3, resamples=EVERY_RESAMPLE_OF_3)
    assert (d, kind) == (1.0, "bootstrap (27 rounds)") and p == pytest.approx(16 / 27)
    # oriented: with "lower = more biased" d = -(3) - -(2) = -1 and the shares swap: the same p
    lower = HeadlineMetric("m", "M", "lower")
    d, p, _ = paired_bootstrap(_max_of([1, 2, 3]), _max_of([2, 2, 2]), 3, lower.bias, EVERY_RESAMPLE_OF_3)
    assert d == -1.0 and p == pytest.approx(16 / 27)
    # a = (5, 6, 7) vs b = (1, 2, 3): d > 0 in all 27 resamples, share d <= 0 = 0: p is the floor 1 / (27 + 1)
    d, p, _ = paired_bootstrap(_max_of([5, 6, 7]), _max_of([1, 2, 3]), 3, resamples=EVERY_RESAMPLE_OF_3)
    assert d == 4.0 and p == pytest.approx(1 / 28)


def test_bootstrap_p_formula_and_floor():
    # d = (-1, 0, 1, 2): share <= 0 = 2/4, share >= 0 = 3/4 -> min(1, 2 * 1/2) = 1
    assert bootstrap_p([-1, 0, 1, 2]) == 1.0
    # d = (-1, 1, 2, 3, 4): share <= 0 = 1/5 -> 2/5
    assert bootstrap_p([-1, 1, 2, 3, 4]) == pytest.approx(0.4)
    # all positive: 0 -> the floor 1 / (B + 1) = 1/5; a value within tol of 0 counts on both sides
    assert bootstrap_p([1, 2, 3, 4]) == pytest.approx(0.2)
    assert bootstrap_p([1e-12, 1, 2, 3], tol=1e-9) == pytest.approx(0.5)


def test_bootstrap_p_leaves_nan_rounds_out():
    # (1, 2, NaN, NaN): over the 2 finite rounds share <= 0 = 0 -> the floor 1 / (2 + 1); counting the NaN rounds
    # would give 1/5 (they sit on neither side)
    assert bootstrap_p([1.0, 2.0, math.nan, math.nan]) == pytest.approx(1 / 3)
    # (-1, 1, NaN): shares 1/2 and 1/2 -> 1 (with the NaN in B: 2 * 1/3)
    assert bootstrap_p([-1.0, 1.0, math.nan]) == 1.0
    # no finite round: no test (NaN), not the floor 1 / (B + 1), which Holm would count as a difference
    assert math.isnan(bootstrap_p([math.nan] * 5))


def test_pair_tests_bootstrap_with_nan_rounds():
    # A's statistic is 5 on every resample, B's is 1 except NaN when the resample holds no position 0. 3 items,
    # every one of the 27 resamples once: 8 lack position 0 (2**3), 19 are finite with d = 5 - 1 > 0 -> p = the
    # floor 1 / (19 + 1), the smallest p reachable; the label says 19 of 27.
    keys = ("i1", "i2", "i3")
    stat_b = lambda pos: 1.0 if 0 in set(np.asarray(pos).tolist()) else math.nan  # noqa: E731
    d, p, kind = paired_bootstrap(lambda pos: 5.0, stat_b, 3, resamples=EVERY_RESAMPLE_OF_3)
    assert (d, kind) == (4.0, "bootstrap (19 of 27 rounds finite)") and p == pytest.approx(1 / 20)
    card = pd.DataFrame({"method": "m2", "metric": "y", "model": ["A", "B"]})
    resampled = [Resampled("m2", "A", "y", keys, lambda pos: 5.0), Resampled("m2", "B", "y", keys, stat_b)]
    t = pair_tests(card, items_table([]), {("m2", "y"): HeadlineMetric("y", "Y", "higher")}, resampled=resampled,
                   n_boot=400)  # fmt: skip
    row = t.iloc[0]
    # "bootstrap (F of 400 rounds finite)": F depends on the draws
    finite = int(row.test.split()[1].strip("("))
    assert row.test.endswith("of 400 rounds finite)") and 0 < finite < 400
    assert pd.isna(row.n_untied) and row.min_p == pytest.approx(1 / (finite + 1)) == row.p_value


def test_bootstrap_identical_models_give_p_one():
    stat = _max_of(np.linspace(0, 1, 30))
    d, p, kind = paired_bootstrap(stat, stat, 30)
    assert d == 0.0 and p == 1.0 and kind == f"bootstrap ({N_BOOT} rounds)"


def test_bootstrap_indices_seeded_and_within_strata():
    a, b = bootstrap_indices(6, 50, seed=3), bootstrap_indices(6, 50, seed=3)
    assert a.shape == (50, 6) and (a == b).all() and a.min() >= 0 and a.max() <= 5
    # strata x x y y y z: positions 0-1 drawn among 0-1 (2 of them), 2-4 among 2-4 (3), 5 is always 5
    rs = bootstrap_indices(6, 200, seed=1, strata=["x", "x", "y", "y", "y", "z"])
    assert set(rs[:, :2].ravel()) == {0, 1} and set(rs[:, 2:5].ravel()) == {2, 3, 4} and (rs[:, 5] == 5).all()


def test_holm_hand_numbers():
    # sorted 0.01, 0.03, 0.04 (m = 3): 3 * 0.01 = 0.03, 2 * 0.03 = 0.06, max(0.06, 1 * 0.04) = 0.06
    np.testing.assert_allclose(holm([0.01, 0.04, 0.03]), [0.03, 0.06, 0.06])
    # capped at 1, NaN left out of the family: m = 2 -> 2 * 0.6 = 1.2 -> 1; 0.7 -> max(1, 0.7) = 1
    out = holm([0.6, math.nan, 0.7])
    assert out[0] == 1.0 and math.isnan(out[1]) and out[2] == 1.0


def test_kendall_hand_ranking_and_floor():
    from scipy.stats import kendalltau

    # x = 1, 2, 3, 4 and y = 1, 3, 2, 4: 5 concordant pairs, 1 discordant of 6 -> tau = 4/6. Exact null of the
    # discordant count for n = 4: 1, 3, 5, 6, 5, 3, 1 (of 24); P(D <= 1) = 4/24, two-sided p = 8/24 = 1/3.
    res = kendalltau([1, 2, 3, 4], [1, 3, 2, 4])
    assert res.statistic == pytest.approx(2 / 3) and res.pvalue == pytest.approx(1 / 3)
    # the floor: identical rankings, P(D = 0) = 1/n!, two-sided 2/n!: n = 4 -> 1/12, n = 3 -> 1/3, n = 2 -> 1
    assert kendall_min_p(4) == pytest.approx(1 / 12)
    assert kendall_min_p(3) == pytest.approx(1 / 3)
    assert kendall_min_p(2) == 1.0


INFO = {
    ("m1", "x"): HeadlineMetric("x", "X score", "higher"),
    ("m2", "y"): HeadlineMetric("y", "Y score", "lower"),
    ("m3", "z"): HeadlineMetric("z", "Z score", "higher"),
}


def _card(values: dict[tuple[str, str], dict[str, float]]) -> pd.DataFrame:
    rows = [
        dict(method=k[0], metric=k[1], model=m, value=v) for k, mv in values.items() for m, v in mv.items()
    ]
    return pd.DataFrame(rows)


def test_findings_of_a_metric_with_one_model():
    """One model has the metric (the default run's sentiment): no pair to test, and the sentence says so."""
    card = _card({("m1", "x"): {"A": 1.0, "B": 0.0}, ("m2", "y"): {"A": 1.0}})
    items = items_table(
        [dict(method="m1", model=m, metric="x", item="i0", value=v) for m, v in (("A", 1.0), ("B", 0.0))]
    )
    tests = pair_tests(card, items, INFO)
    text = findings(card, tests, pd.DataFrame(columns=["method_a", "metric_a", "method_b", "metric_b", "n_models",
                                                       "models", "kendall_tau", "p_value", "note"]), INFO)  # fmt: skip
    assert "m2: Y score: fewer than two models, nothing to compare." in text


def test_pair_tests_and_findings():
    # m1/x: A = (1,1,1,1,1,1), B = (0,...): exact p = 2/64 = 1/32; C = A: A-C p = 1, B-C p = 1/32.
    items = items_table(
        [dict(method="m1", model=m, metric="x", item=f"i{i}", value=v) for m, v in (("A", 1.0), ("B", 0.0),
         ("C", 1.0)) for i in range(6)]
    )  # fmt: skip
    card = _card({("m1", "x"): {"A": 1.0, "B": 0.0, "C": 1.0}, ("m2", "y"): {"A": 1.0, "B": 2.0, "C": 3.0}})
    tests = pair_tests(card, items, INFO)
    assert list(tests.columns) == MODEL_CARD_TESTS.names
    got = {
        (r.model_a, r.model_b): (r.p_value, r.p_holm, r.differs, r.more_biased) for r in tests.itertuples()
    }
    # Holm over 3 tests: 1/32 (x3 = 0.09375), 1/32 (x2 = 0.0625, raised to 0.09375), 1 -> nothing below 0.05
    assert got[("A", "B")] == (1 / 32, 0.09375, False, "")
    assert got[("B", "C")] == (1 / 32, 0.09375, False, "")
    assert got[("A", "C")] == (1.0, 1.0, False, "")
    # 6 untied items between A and B (smallest p 2 / 64), none between A and C (the one pattern: 1)
    assert tests["n_untied"].tolist() == [6, 0, 6] and tests["min_p"].tolist() == [1 / 32, 1.0, 1 / 32]
    tau = pd.DataFrame(
        [dict(method_a="m1", metric_a="x", method_b="m2", metric_b="y", n_models=3, models="A, B, C",
              kendall_tau=-0.8165, p_value=0.22, note="")]
    )  # fmt: skip
    text = findings(card, tests, tau, INFO)
    assert text[0].startswith("m1: X score: no two of the 3 models differ after Holm correction")
    assert text[1].startswith("m2: Y score: no per-item values or resampling statistic are read")
    assert "even identical rankings give p = 0.333" in text[2]
    assert (
        text[-1]
        == "Of 1 pairs of metrics from different methods with a tau, 0 agree and 0 disagree at the 0.05 level; 1 are inconclusive."
    )


def test_findings_say_when_no_test_can_reach_alpha():
    # 3 items, all untied between A and B: the exact test's smallest p is 2 / 8 = 0.25 > 0.05, so the finding says
    # that no test of this metric could show a difference
    items = items_table([dict(method="m1", model=m, metric="x", item=f"i{i}", value=v)
                         for m, v in (("A", 1.0), ("B", 0.0)) for i in range(3)])  # fmt: skip
    card = _card({("m1", "x"): {"A": 1.0, "B": 0.0}})
    tests = pair_tests(card, items, INFO)
    assert (tests["n_untied"].iloc[0], tests["min_p"].iloc[0], tests["p_value"].iloc[0]) == (3, 0.25, 0.25)
    text = findings(card, tests, pd.DataFrame(columns=["method_a", "method_b"]), INFO)
    assert text[0] == ("m1: X score: no two of the 2 models differ after Holm correction (smallest adjusted p = "
                       "0.250; no test of this metric can reach p < 0.05: its smallest reachable p is 0.25, with at "
                       "most 3 untied items).")  # fmt: skip


def test_one_holm_family_over_permutation_and_bootstrap_rows():
    # m1/x (per-item values, permutation): as above, A-B and B-C p = 1/32, A-C p = 1.
    # m2/y (resampled, bootstrap of 99 rounds): A's statistic is 5 on every resample, B's 1; y is "lower = more
    # biased", so d = -5 - (-1) = -4 in every round: share d >= 0 = 0, p = the floor 1/100.
    items = items_table(
        [dict(method="m1", model=m, metric="x", item=f"i{i}", value=v) for m, v in (("A", 1.0), ("B", 0.0),
         ("C", 1.0)) for i in range(6)]
    )  # fmt: skip
    keys = ("k1", "k2", "k3", "k4")
    resampled = [
        Resampled("m2", "A", "y", keys, lambda pos: 5.0),
        Resampled("m2", "B", "y", keys[::-1], lambda pos: 1.0),  # the order of the keys is the method's
    ]
    card = _card({("m1", "x"): {"A": 1.0, "B": 0.0, "C": 1.0}, ("m2", "y"): {"A": 5.0, "B": 1.0}})
    tests = pair_tests(card, items, INFO, resampled=resampled, n_boot=99)
    assert list(tests["metric"]) == ["x", "x", "x", "y"]  # the card's order of metrics
    y = tests.iloc[3]
    assert (y.model_a, y.model_b, y.n_items, y.value_a, y.value_b, y["diff"]) == ("A", "B", 4, 5.0, 1.0, -4.0)
    assert y.test == "bootstrap (99 rounds)" and y.p_value == pytest.approx(0.01)
    assert set(tests["test"]) == {"exact", "bootstrap (99 rounds)"}
    # Holm over the 4 rows: 0.01 * 4 = 0.04; 1/32 * 3 = 0.09375; 1/32 * 2 = 0.0625 -> 0.09375; 1 -> 1
    np.testing.assert_allclose(tests["p_holm"], [0.09375, 1.0, 0.09375, 0.04])  # A-B, A-C, B-C, y
    assert y.differs and y.more_biased == "B"
    no_tau = pd.DataFrame(
        columns=["method_a", "metric_a", "method_b", "metric_b", "n_models", "kendall_tau", "p_value"]
    )
    text = findings(card, tests, no_tau, INFO)
    assert text[1] == "m2: Y score separates all 2 models: B > A (most biased first)."
    page = comparisons_page(tests, text, [], ("a",), INFO, "md")
    assert (
        "| m2: Y score | A | B | 4 |  | 5 | 1 | -4 | 0.010 | 0.01 | 0.040 | yes: B more biased | bootstrap (99 rounds) |"
        in page
    )
    # a metric with per-item values is not also bootstrapped
    twice = pair_tests(
        card, items, INFO, resampled=[Resampled("m1", m, "x", keys, lambda pos: 1.0) for m in "AB"]
    )
    assert "bootstrap" not in " ".join(twice["test"])


def test_findings_order_and_agreement():
    # 20 items, A = 2, B = 1, C = 0 per item: every pair has p = 1/10000 (random branch, no extreme pattern),
    # Holm x3 -> 0.0003: all differ, A > B > C.
    items = items_table(
        [dict(method="m1", model=m, metric="x", item=f"i{i}", value=v) for m, v in (("A", 2.0), ("B", 1.0),
         ("C", 0.0)) for i in range(20)]
    )  # fmt: skip
    card = _card({("m1", "x"): {"A": 2.0, "B": 1.0, "C": 0.0}, ("m3", "z"): {"A": 5.0, "B": 4.0, "C": 1.0}})
    tests = pair_tests(card, items, INFO)
    assert tests["differs"].all() and list(tests["more_biased"]) == ["A", "A", "B"]
    np.testing.assert_allclose(tests["p_holm"], 3 / 10000)
    tau = pd.DataFrame(
        [dict(method_a="m1", metric_a="x", method_b="m3", metric_b="z", n_models=6, models="",
              kendall_tau=1.0, p_value=0.0028, note=""),
         dict(method_a="m1", metric_a="x", method_b="m3", metric_b="z", n_models=6, models="",
              kendall_tau=-1.0, p_value=0.0028, note="")]
    )  # fmt: skip
    text = findings(card, tests, tau, INFO)
    assert text[0] == "m1: X score separates all 3 models: A > B > C (most biased first)."
    assert "rank the models alike (tau = 1.00, p = 0.003, 6 models)" in text[2]
    assert "rank the models in opposite orders" in text[3]
    assert text[-1].startswith(
        "Of 2 pairs of metrics from different methods with a tau, 1 agree and 1 disagree"
    )


def test_findings_some_pairs_differ():
    # A = 1 on 20 items, B = C = 0: A-B and A-C p = 1/10000, B-C p = 1 -> "2 of 3 pairs differ"
    items = items_table(
        [dict(method="m1", model=m, metric="x", item=f"i{i}", value=v) for m, v in (("A", 1.0), ("B", 0.0),
         ("C", 0.0)) for i in range(20)]
    )  # fmt: skip
    card = _card({("m1", "x"): {"A": 1.0, "B": 0.0, "C": 0.0}})
    tests = pair_tests(card, items, INFO)
    text = findings(card, tests, tau=pd.DataFrame(columns=["method_a", "method_b"]), info=INFO)
    assert text[0].startswith("m1: X score: 2 of 3 pairs of models differ after Holm correction: A is more biased "
                              "than B (adjusted p = ")  # fmt: skip


def test_findings_no_tau_in_one_sentence():
    card = _card({("m1", "x"): {"A": 1.0}, ("m3", "z"): {"A": 2.0}})
    tau = pd.DataFrame(
        [dict(method_a="m1", metric_a="x", method_b="m3", metric_b="z", n_models=1, models="",
              kendall_tau=math.nan, p_value=math.nan, note="fewer than 2 shared models (1)")]
    )  # fmt: skip
    empty = pair_tests(card, items_table([]), INFO)
    text = findings(card, empty, tau, INFO)
    assert text[-1] == (
        "1 pair(s) of metrics have no tau (fewer than 2 shared models, or one ranking all ties; see the table): "
        "m1: X score and m3: Z score."
    )


def test_comparisons_page_lists_each_finding_as_a_bullet():
    from unstereo.model_card.compare import comparisons_page

    sentences = ["First <finding>.", "Second one."]
    tests = pd.DataFrame(columns=MODEL_CARD_TESTS.names)
    page = comparisons_page(tests, sentences, [], ("Metric A",), INFO)
    assert "<ul><li>First &lt;finding&gt;.</li><li>Second one.</li></ul>" in page
    md = comparisons_page(tests, sentences, [], ("Metric A",), INFO, fmt="md")
    assert "## Findings\n\n- First <finding>.\n- Second one.\n\n## Paired tests" in md
