"""HeadlineMetric.bias orients every method's headline metric so that larger = more biased."""

import numpy as np
import pytest

from unstereo.headline import HEADLINE, HeadlineMetric


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
