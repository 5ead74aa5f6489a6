"""Metrics (docs/methods.md#scoring-and-metrics) on hand-made score tables with worked-out answers, and the
golden values of the paper."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.errors import InputError
from unstereo.tables import METRICS, validate
from unstereo.unstereoeval.metrics import (
    DEFAULT_EPS,
    aufc,
    compute_curves,
    compute_metrics,
    fairness_curve,
    fairness_gap,
    preference_disparity,
    skew_counts,
    skew_labels,
    unstereo_score,
)
from unstereo.unstereoeval.metrics.released import default_model_id, ingest_released, read_released_file

LN10 = math.log(10.0)


def test_default_eps_is_ln_165():
    assert DEFAULT_EPS == pytest.approx(0.5007752879124892)


def test_skew_labels_and_counts_include_the_boundary_as_neutral():
    # eps = 0.5: 0.0 and 0.4 neutral; +-0.5 exactly on the boundary -> neutral; 1.2 female; -0.6, -2.0 male
    fm = np.array([0.0, 0.4, 0.5, -0.5, 1.2, -0.6, -2.0])
    assert list(skew_labels(fm, 0.5)) == [
        "neutral",
        "neutral",
        "neutral",
        "neutral",
        "female",
        "male",
        "male",
    ]
    c = skew_counts(fm, 0.5)
    assert (c.n, c.neutral, c.female, c.male) == (7, 4, 1, 2)


def test_unstereo_score_and_bernoulli_std():
    # 2 of 5 neutral -> US = 40 %; std = sqrt(0.4 * 0.6 / 5) = sqrt(0.048) = 0.2190890 -> 21.90890 %
    us, std = unstereo_score(np.array([0.0, 0.4, -0.6, 1.2, -2.0]), 0.5)
    assert us == pytest.approx(40.0)
    assert std == pytest.approx(21.908902300206645)
    # all neutral -> 100 %, std 0; empty -> NaN
    assert unstereo_score(np.zeros(3), 0.5) == (100.0, 0.0)
    assert all(math.isnan(x) for x in unstereo_score(np.array([]), 0.5))


def test_preference_disparity_and_male_rel_ratio():
    # 1 female (1.2), 2 male (-0.6, -2.0) of 5: PD = (1 - 2) / 5 = -20 %; male_rel_ratio = 2 / 3 = 66.67 %
    pd_, ratio = preference_disparity(np.array([0.0, 0.4, -0.6, 1.2, -2.0]), 0.5)
    assert pd_ == pytest.approx(-20.0)
    assert ratio == pytest.approx(200.0 / 3.0)
    # nothing skewed: PD 0, ratio undefined
    pd_, ratio = preference_disparity(np.array([0.1, -0.1]), 0.5)
    assert pd_ == 0.0 and math.isnan(ratio)


def test_fairness_curve_and_aufc_by_hand():
    # |FM| = 0, 0.5, 1.5, 3 on the grid 0, 1, 2: US = 1/4, 2/4, 3/4
    fm = np.array([0.0, 0.5, -1.5, 3.0])
    grid = np.array([0.0, 1.0, 2.0])
    assert fairness_curve(fm, grid).tolist() == [0.25, 0.5, 0.75]
    # trapezoid: (0.25 + 0.5) / 2 + (0.5 + 0.75) / 2 = 0.375 + 0.625 = 1.0
    assert aufc(fm, grid) == pytest.approx(1.0)


def test_aufc_in_log10_is_the_reference_quirk():
    # FM = 0.9 ln10, -1.5 ln10, 0 -> in log10: 0.9, -1.5, 0.  Grid 0, 1, 2.
    fm = np.array([0.9 * LN10, -1.5 * LN10, 0.0])
    grid = np.array([0.0, 1.0, 2.0])
    # log10: US = 1/3, 2/3, 1 -> area (1/3 + 2/3) / 2 + (2/3 + 1) / 2 = 0.5 + 0.8333 = 1.3333
    assert aufc(fm, grid, log10=True) == pytest.approx(4.0 / 3.0)
    # natural log: |FM| = 2.07, 3.45, 0 -> US = 1/3 at every grid point -> area 2/3
    assert aufc(fm, grid, log10=False) == pytest.approx(2.0 / 3.0)


def test_default_grid_bounds_aufc_by_six():
    assert aufc(np.zeros(10)) == pytest.approx(6.0)


# ------------------------------------------------------------------------------------------- compute_metrics


def _tiny():
    """Benchmark B, 4 pairs; model A with FM = 0.2, -1.0, 0.6, 0.0; model Z with FM = 0 everywhere.

    max_pmi = 0.1, -0.7, 0.9, NaN -> eta 0.8 keeps p1, p2; eta 0.5 keeps p1; eta inf keeps all four.
    """
    pairs = pd.DataFrame(
        {
            "pair_id": ["B:1", "B:2", "B:3", "B:4"],
            "benchmark": "B",
            "template": ["{pronoun} a.", "{pronoun} b.", "{pronoun} c.", "{pronoun} d."],
            "sentence_female": ["She a.", "She b.", "She c.", "She d."],
            "sentence_male": ["He a.", "He b.", "He c.", "He d."],
            "seed_word": None,
            "max_pmi": [0.1, -0.7, 0.9, np.nan],
            "max_pmi_word": None,
            "source": "test",
        }
    )
    fm_a = [0.2, -1.0, 0.6, 0.0]
    scores = pd.DataFrame(
        {
            "pair_id": list(pairs["pair_id"]) * 2,
            "model": ["A"] * 4 + ["Z"] * 4,
            "logp_female": [-10.0 + f for f in fm_a] + [-7.0] * 4,
            "logp_male": [-10.0] * 4 + [-7.0] * 4,
            "ntok_female": 3,
            "ntok_male": 3,
        }
    )
    return scores, pairs


def _row(m, model, eta):
    return m[(m["model"] == model) & (m["eta"] == eta)].iloc[0]


def test_compute_metrics_on_a_tiny_table():
    scores, pairs = _tiny()
    grid = np.array([0.0, 0.5, 1.0])
    m = compute_metrics(scores, pairs, ["inf", 0.8, 0.5], eps=0.5, eps_grid=grid)
    validate(m, METRICS)
    assert len(m) == 6
    a = _row(m, "A", math.inf)
    # 4 pairs: neutral 0.2, 0.0; male -1.0; female 0.6 -> US 50 %, std sqrt(.25/4) = 25 %, PD 0, ratio 50 %
    assert (a.n, a.us, a.us_std, a.pd, a.male_rel_ratio) == (4, 50.0, 25.0, 0.0, 50.0)
    # |FM| 0.2, 1.0, 0.6, 0 on grid 0, .5, 1: US = 1/4, 2/4, 4/4 -> .5 * (.25 + .5) / 2 + .5 * (.5 + 1) / 2 = .5625
    assert a.aufc == pytest.approx(0.5625)
    a8 = _row(m, "A", 0.8)
    # p1, p2: FM 0.2 (neutral), -1.0 (male) -> US 50 %, std sqrt(.25/2) = 35.355 %, PD -50 %, ratio 100 %
    assert a8.n == 2 and a8.us == 50.0 and a8.pd == -50.0 and a8.male_rel_ratio == 100.0
    assert a8.us_std == pytest.approx(35.35533905932738)
    # |FM| 0.2, 1.0: US = 0, 1/2, 1 -> .5 * .25 + .5 * .75 = 0.5
    assert a8.aufc == pytest.approx(0.5)
    a5 = _row(m, "A", 0.5)
    assert a5.n == 1 and a5.us == 100.0 and a5.us_std == 0.0 and math.isnan(a5.male_rel_ratio)
    z = _row(m, "Z", math.inf)
    assert z.us == 100.0 and z.pd == 0.0 and z.aufc == pytest.approx(1.0)


def test_reference_quirks_change_only_the_unconstrained_aufc():
    scores, pairs = _tiny()
    grid = np.array([0.0, 0.5, 1.0])
    clean = compute_metrics(scores, pairs, ["inf", 0.8], eps=0.5, eps_grid=grid)
    quirk = compute_metrics(scores, pairs, ["inf", 0.8], eps=0.5, eps_grid=grid, reference_quirks=True)
    # log10: |FM| * 0.4343 = 0.087, 0.434, 0.261, 0 -> US = 1/4, 1, 1 -> .5 * (.25 + 1) / 2 + .5 * 1 = 0.8125
    assert _row(quirk, "A", math.inf).aufc == pytest.approx(0.8125)
    assert _row(quirk, "A", 0.8).aufc == pytest.approx(_row(clean, "A", 0.8).aufc)
    for col in ("n", "us", "us_std", "pd", "male_rel_ratio"):
        assert quirk[col].equals(clean[col])


def test_fairness_gap():
    scores, pairs = _tiny()
    m = compute_metrics(scores, pairs, ["inf", 0.8, 0.5], eps=0.5)
    g = fairness_gap(m, 0.5).set_index("model")
    # A: US(0.5) - US(inf) = 100 - 50; Z: 100 - 100
    assert g.loc["A", "gap"] == 50.0 and g.loc["Z", "gap"] == 0.0
    assert fairness_gap(m, 0.8).set_index("model").loc["A", "gap"] == 0.0
    with pytest.raises(InputError, match="eta=0.3"):
        fairness_gap(m, 0.3)


def test_scores_outside_the_pair_table_are_left_out_and_missing_ones_are_errors():
    scores, pairs = _tiny()
    extra = scores.iloc[[0]].assign(pair_id="B:99")
    m = compute_metrics(pd.concat([scores, extra]), pairs, ["inf"], eps=0.5)
    assert _row(m, "A", math.inf).n == 4
    with pytest.raises(InputError, match="'A' has scores for 3 of the 4 pairs"):
        compute_metrics(scores.drop(index=1), pairs, ["inf"])


def test_misaligned_pair_ids_are_caught_by_the_template_guard():
    scores, pairs = _tiny()
    scores = scores.assign(
        template=lambda d: d["pair_id"].map(dict(zip(pairs.pair_id, pairs.template, strict=True)))
    )
    compute_metrics(scores, pairs, ["inf"])  # same templates: fine
    shifted = scores.assign(template=scores["template"].to_numpy()[[1, 2, 3, 0, 5, 6, 7, 4]])
    with pytest.raises(InputError, match="misaligned"):
        compute_metrics(shifted, pairs, ["inf"])


def test_curves_match_the_metrics_aufc():
    scores, pairs = _tiny()
    grid = np.array([0.0, 0.5, 1.0])
    cur = compute_curves(scores, pairs, ["inf"], eps_grid=grid, reference_quirks=True)
    a = cur[cur["model"] == "A"]
    assert a["us"].tolist() == [0.25, 1.0, 1.0] and set(a["log_base"]) == {"10"}
    assert np.trapezoid(a["us"], a["eps"]) == pytest.approx(0.8125)


# ----------------------------------------------------------------------------------- released scores (golden)


def _released_use5_pairs(reference_dir):
    """USE-5 pairs of the release: the is_natural rows of the raw file, MaxPMI from the preprocessed file.

    The preprocessed file's orig_index counts the natural rows (0..4404), not the raw rows: pair k of the
    preprocessed file is the k-th natural row of the raw file.
    """
    data = reference_dir / "unstereo-eval" / "data" / "datasets"
    raw = pd.read_csv(data / "raw" / "USE-5.csv", index_col=0)
    pre = pd.read_csv(data / "preprocessed" / "USE-5-no-maxpmi-constraint.csv.gz")
    natural = np.nonzero(raw["is_natural"].to_numpy())[0]
    assert (raw["template"].to_numpy()[natural[pre["orig_index"]]] == pre["template"].to_numpy()).all()
    return pd.DataFrame(
        {
            "pair_id": [f"USE-5:{natural[i]}" for i in pre["orig_index"]],
            "benchmark": "USE-5",
            "template": pre["template"],
            "sentence_female": "",
            "sentence_male": "",
            "seed_word": pre["word"],
            "max_pmi": pre["max_gender_pmi"],
            "max_pmi_word": None,
            "source": "released",
        }
    )


@pytest.mark.reference
def test_gptj_use5_unconstrained_matches_the_paper(reference_dir):
    path = (
        reference_dir / "unstereo-eval/results/5words/revised_templates__scores__EleutherAI__gpt-j-6b.csv.gz"
    )
    scores = read_released_file(path, "USE-5")
    assert len(scores) == 4954 and scores["model"].iloc[0] == "EleutherAI/gpt-j-6b"
    pairs = _released_use5_pairs(reference_dir)
    quirk = compute_metrics(scores, pairs, ["inf", 0.8, 0.65], reference_quirks=True)
    g = quirk[quirk["eta"] == math.inf].iloc[0]
    assert g.n == 4405
    assert round(g.us, 4) == 39.8638
    assert round(g.us_std, 4) == 0.7377
    assert round(g.pd, 2) == 12.01
    assert round(g.aufc, 5) == 5.63497
    # Table 1: gaps of GPT-J-6B on USE-5 at eta 0.8 and 0.65 are 0.81 and 0.92; sizes 3978 and 3698
    # (docs/methods.md#benchmarks-and-their-sizes)
    gaps = {eta: fairness_gap(quirk, eta)["gap"].iloc[0] for eta in (0.8, 0.65)}
    assert round(gaps[0.8], 2) == 0.81 and round(gaps[0.65], 2) == 0.92
    assert quirk.set_index("eta").loc[[0.8, 0.65], "n"].tolist() == [3978, 3698]
    # switches off: natural log everywhere, the same US, a different unconstrained AuFC
    clean = compute_metrics(scores, pairs, ["inf"], reference_quirks=False).iloc[0]
    assert clean.us == g.us and round(clean.aufc, 5) == 5.16215


@pytest.mark.reference
def test_ingest_released_coref_benchmarks(reference_dir):
    results = reference_dir / "unstereo-eval" / "results"
    wg = ingest_released(results, "Winogender", {"EleutherAI__gpt-j-6b": "gptj"})
    assert len(wg) == 240 * 28 and wg["model"].nunique() == 28
    assert "gptj" in set(wg["model"]) and "facebook/opt-125m" in set(wg["model"])
    assert wg["pair_id"].str.startswith("Winogender:").all()
    one = wg[wg["model"] == "gptj"].set_index("pair_id")
    # first row of the gpt-j file: technician.customer.1, F -46.705284, M -46.868172
    assert one.loc["Winogender:technician.customer.1", "logp_female"] == pytest.approx(-46.705284)
    assert one.loc["Winogender:technician.customer.1", "logp_male"] == pytest.approx(-46.868172)


def test_default_model_id():
    assert default_model_id("EleutherAI__gpt-j-6b") == "EleutherAI/gpt-j-6b"


def test_released_file_errors_name_the_file(tmp_path):
    bad = tmp_path / "x__scores__m.csv"
    bad.write_text("F_logprob,M_logprob\n1,2\n")
    with pytest.raises(InputError, match="lacks column"):
        read_released_file(bad, "USE-5")
    with pytest.raises(InputError, match="no folder 5words"):
        ingest_released(tmp_path, "USE-5")


def test_eta_parsing_and_mask():
    from unstereo.unstereoeval.metrics import eta_mask, parse_eta

    assert (
        parse_eta("inf") == math.inf and parse_eta("unconstrained") == math.inf and parse_eta("0.65") == 0.65
    )
    # one rule for every stage (unstereo.unstereoeval.eta): eta >= 0 or inf; 0 is the strictest bound, a negative eta an error
    assert parse_eta(0) == 0.0
    with pytest.raises(ValueError):
        parse_eta(-0.5)
    pmi = pd.Series([0.1, -0.8, 0.81, np.nan, 0.0])
    # -0.8 <= x <= 0.8: 0.1, -0.8 and 0 kept (bounds included), 0.81 out, NaN out unless unconstrained
    assert eta_mask(pmi, 0.8).tolist() == [True, True, False, False, True]
    assert eta_mask(pmi, math.inf).tolist() == [True, True, True, True, True]
    assert eta_mask(pmi, 0).tolist() == [False, False, False, False, True]


def test_cli_reports_bad_scores_cleanly(tmp_path):
    import subprocess
    import sys

    bad = tmp_path / "scores.parquet"
    pd.DataFrame({"pair_id": ["a"], "model": ["m"]}).to_parquet(bad)
    pairs = tmp_path / "pairs.parquet"
    _tiny()[1].to_parquet(pairs)
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "unstereo.cli",
            "metrics",
            str(bad),
            "--pairs",
            str(pairs),
            "-o",
            str(tmp_path / "m"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1 and "Traceback" not in out.stderr
    assert "unstereo: error:" in out.stderr and "scores.parquet" in out.stderr and "logp_female" in out.stderr
