"""The metric registry: the paper's metrics are registered in METRICS order, and a metric registered by a test
appears in the METRICS schema, the computed metrics table, the generic report tables and the report rule's table
list without any other code change."""

from __future__ import annotations

import math

import numpy as np
import pytest
from test_metrics import _tiny

from unstereo.models.registry import DEFAULT_REGISTRY, load_registry
from unstereo.tables import METRICS, Column, validate
from unstereo.unstereoeval.metrics import compute_metrics
from unstereo.unstereoeval.metrics.registry import Metric, all_metrics, get, register, registered, unregister
from unstereo.unstereoeval.report.rules import generic_table_keys, table_descriptions
from unstereo.unstereoeval.report.table_builders import generic_tables


def _female_more_likely(a, b, **_):
    """Share (%) of pairs whose female sentence is the more likely one."""
    return {"toy_share": 100.0 * float(np.mean(a > b)) if len(a) else math.nan}


TOY = Metric(
    "toy",
    _female_more_likely,
    (Column("toy_share", "float", "pairs with p(s_F) > p(s_M), percent", nullable=True),),
    caption="Toy share (%) at eta = {eta}",
)


def _mean_gap(a, b, **_):
    return {"sent_gap": float(np.mean(a) - np.mean(b)) if len(a) else math.nan}


SENTIMENT = Metric(
    "sentiment",
    _mean_gap,
    (Column("sent_gap", "float", "mean sentiment of female minus male continuations", nullable=True),),
    caption="Sentiment gap at eta = {eta}",
    inputs=("sentiment_female", "sentiment_male"),
)


def test_the_papers_metrics_in_metrics_column_order():
    assert [m.name for m in all_metrics()] == ["us", "aufc", "pd"]
    assert METRICS.names == ["model", "benchmark", "eta", "n", "us", "us_std", "aufc", "pd", "male_rel_ratio"]
    assert get("us").std == "us_std" and get("us").size_row and get("pd").extra == ("n_female", "n_male")
    with pytest.raises(KeyError, match="registered"):
        get("nope")


def test_a_registered_metric_reaches_the_metrics_table_and_the_report():
    scores, pairs = _tiny()
    with registered(TOY):
        assert METRICS.names[-1] == "toy_share"
        m = compute_metrics(scores, pairs, ["inf", 0.8, 0.5], eps=0.5, eps_grid=np.array([0.0, 0.5, 1.0]))
        validate(m, METRICS)
        share = {(r.model, r.eta): r.toy_share for r in m.itertuples()}
        # model A, FM = 0.2, -1.0, 0.6, 0.0 on MaxPMI 0.1, -0.7, 0.9, NaN:
        # inf keeps all (2 of 4 positive), 0.8 keeps the first two (1 of 2), 0.5 the first (1 of 1); Z: FM = 0
        assert share[("A", math.inf)] == 50.0 and share[("A", 0.8)] == 50.0 and share[("A", 0.5)] == 100.0
        assert share[("Z", math.inf)] == 0.0
        # the paper's metrics are unchanged by the registration
        a = m[(m["model"] == "A") & (m["eta"] == math.inf)].iloc[0]
        assert (a.us, a.us_std, a.pd) == (50.0, 25.0, 0.0)
        tables = generic_tables(m, load_registry(DEFAULT_REGISTRY))
        toy = tables["toy_eta-0.5"]
        assert toy.caption == "Toy share (%) at eta = 0.5" and toy.value("A", "B") == 100.0
        assert {"toy_eta-inf", "toy_eta-0.8", "us_eta-inf", "gaps"} <= set(tables)
        keys = generic_table_keys({"metrics": {"etas": ["inf", 0.8]}})
        assert keys == [f"{n}_eta-{e}" for e in ("inf", "0.8") for n in ("us", "aufc", "pd", "toy")] + [
            "gaps"
        ]
        assert table_descriptions().endswith("; Toy share (%) at eta = eta")
    assert "toy_share" not in METRICS.names and "toy_eta-inf" not in generic_tables(
        m.drop(columns="toy_share"), load_registry(DEFAULT_REGISTRY)
    )


def test_a_metric_over_other_inputs_is_nan_where_the_scores_lack_them():
    scores, pairs = _tiny()
    with registered(SENTIMENT):
        without = compute_metrics(scores, pairs, ["inf"])
        assert without["sent_gap"].isna().all()
        scores = scores.assign(
            sentiment_female=[1.0, 0.0, 1.0, 1.0] * 2, sentiment_male=[0.0, 0.0, 0.0, 1.0] * 2
        )
        with_inputs = compute_metrics(scores, pairs, ["inf", 0.8])
        gap = {(r.model, r.eta): r.sent_gap for r in with_inputs.itertuples()}
        assert gap[("A", math.inf)] == pytest.approx(0.5)  # 0.75 - 0.25
        assert gap[("A", 0.8)] == pytest.approx(0.5)  # first two pairs: 0.5 - 0
        at_inf = with_inputs[with_inputs["eta"] == math.inf].reset_index(drop=True)
        assert at_inf["us"].tolist() == without["us"].tolist()  # the extra inputs change no other metric


def test_registration_errors():
    with pytest.raises(ValueError, match="already registered"):
        register(Metric("us", _female_more_likely, TOY.columns, "c"))
    with pytest.raises(ValueError, match="already written"):
        register(Metric("us2", _female_more_likely, (Column("us", "float", "x", nullable=True),), "c"))
    with pytest.raises(ValueError, match="nullable"):
        register(Metric("strict", _female_more_likely, (Column("s", "float", "x"),), "c"))
    with pytest.raises(ValueError, match="not among its columns"):
        register(Metric("bad_std", _female_more_likely, TOY.columns, "c", std="nope"))
    wrong = Metric(
        "wrong", lambda a, b, **_: {"other": 1.0}, (Column("w", "float", "x", nullable=True),), "c"
    )
    with registered(wrong), pytest.raises(ValueError, match="returned"):
        wrong.compute(np.zeros(1), np.zeros(1))
    with pytest.raises(KeyError):
        unregister("wrong")
    assert [m.name for m in all_metrics()] == ["us", "aufc", "pd"]
