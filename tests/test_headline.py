"""HeadlineMetric.bias orients every method's headline metric so that larger = more biased."""

import numpy as np
import pytest

from unstereo.model_card.headline import HEADLINE, HeadlineMetric


def test_bias_orientation():
    us = HeadlineMetric("us", "Unstereo Score (%)", "lower")  # higher US = more neutral
    f = HeadlineMetric("fairpair_f", "FairPair F", "higher")
    ss = HeadlineMetric("ss", "Stereotype Score (%)", "away", ideal=50.0)
    assert us.bias(80.0) == -80.0
    assert f.bias(1.5) == 1.5
    # SS 40 and 60 are equally biased (10 points from 50), 55 less so
    assert ss.bias(40.0) == ss.bias(60.0) == 10.0
    assert np.allclose(ss.bias([55.0, 40.0]), [5.0, 10.0])


def test_bad_direction():
    with pytest.raises(ValueError, match="more_biased"):
        HeadlineMetric("x", "x", "sideways")
    with pytest.raises(ValueError, match="ideal"):
        HeadlineMetric("x", "x", "away")


def test_schema_columns():
    assert HEADLINE.names[:3] == ["method", "model", "metric"]
    assert HEADLINE.unique == ("method", "model", "metric")


def test_headline_table_drops_the_label_of_a_missing_interval():
    from unstereo.model_card.headline import headline_table

    row = dict(method="m", model="a", metric="x", value=1.0, n=3, scope="all")
    df = headline_table(
        [
            {**row, "ci_low": 0.5, "ci_high": 1.5, "interval": "95% bootstrap"},
            {**row, "model": "b", "ci_low": np.nan, "ci_high": np.nan, "interval": "95% bootstrap"},
        ]
    )
    assert list(df["interval"]) == ["95% bootstrap", ""]
    assert headline_table([]).empty and list(headline_table([]).columns) == HEADLINE.names


def test_first_present_and_model_names():
    from unstereo.model_card.headline import first_present, model_names

    assert first_present(["c", "b"], ["a", "b", "c"]) == "c"  # the config's order wins
    assert first_present(["z"], ["b", "a"]) == "a"  # none configured is there: the smallest
    assert first_present(None, []) is None
    assert (
        model_names({"m1": {}, "m2": {}}) == ["m1", "m2"]
        and model_names(["x"]) == ["x"]
        and model_names(None) == []
    )


def test_headline_table_fills_labels_a_method_leaves_out():
    """A method without intervals or scope (e.g. a new method's first headline) gets empty labels, NaN bounds."""
    from unstereo.model_card.headline import headline_table

    df = headline_table([{"method": "toy", "model": "tiny", "metric": "gap", "value": 0.5, "n": 3}])
    assert df[["interval", "scope"]].values.tolist() == [["", ""]]
    assert np.isnan(df["ci_low"].iloc[0]) and np.isnan(df["ci_high"].iloc[0])
    assert int(df["n"].iloc[0]) == 3
