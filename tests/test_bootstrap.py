"""The shared percentile bootstrap (unstereo.bootstrap) on hand-made inputs."""

from __future__ import annotations

import numpy as np
import pytest

from unstereo.bootstrap import PERCENTILE_95, percentile_interval, resample_stat, tail_quantiles


def test_tail_quantiles():
    assert tail_quantiles(0.5) == (0.25, 0.75)
    # the callers' own arithmetic, bit for bit: (1 - 0.95) / 2 is 0.025000000000000022, not 0.025
    assert tail_quantiles(0.95) == ((1 - 0.95) / 2, 1 - (1 - 0.95) / 2) and tail_quantiles(0.95)[0] != 0.025
    with pytest.raises(ValueError, match="level"):
        tail_quantiles(1.5)


def test_percentile_interval_methods():
    x = [4.0, 1.0, 3.0, 2.0]
    # linear: quantile q at position (n - 1) q of the sorted values; 0.75 -> 1 + 0.75 = 1.75, 2.25 -> 3 + 0.25
    assert percentile_interval(x, 0.5) == (1.75, 3.25)
    # inverted_cdf: the smallest value whose empirical CDF reaches q (F(1) = 0.25, F(3) = 0.75)
    assert percentile_interval(x, 0.5, method="inverted_cdf") == (1.0, 3.0)
    # fixed percentiles: 101 values 0..100, position 100 * 0.025 = 2.5 and 97.5
    assert percentile_interval(np.arange(101), PERCENTILE_95) == (2.5, 97.5)
    y = np.random.default_rng(0).normal(size=37)
    assert percentile_interval(y, PERCENTILE_95) == tuple(np.percentile(y, [2.5, 97.5]))
    lo, hi = percentile_interval([1.0, np.nan], 0.5)
    assert np.isnan(lo) and np.isnan(hi)


def test_resample_stat_draws_one_index_matrix():
    class Rng:  # a stand-in generator that "draws" these indices
        def integers(self, low, high, size):
            assert (low, high, size) == (0, 2, (3, 2))
            return np.array([[0, 0], [0, 1], [1, 1]])

    assert resample_stat(np.array([10.0, 20.0]), np.mean, 3, Rng()).tolist() == [10.0, 15.0, 20.0]
    assert resample_stat(np.array([1.0, 5.0, 9.0]), np.median, 4, np.random.default_rng(1)).shape == (4,)
