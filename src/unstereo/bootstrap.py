"""Percentile bootstrap, shared by the methods: resampling a statistic (:func:`resample_stat`) and the central
percentile interval of bootstrap estimates (:func:`percentile_interval`).

Each method keeps the quantile rule and tails of its reference code, so that its numbers match that code: FairPair
the empirical quantile (``method="inverted_cdf"``), counterfactual sentiment and robustness numpy's default
``"linear"`` at ``(1 - level) / 2`` and ``1 - (1 - level) / 2``, BiasTestGPT the fixed 2.5th and 97.5th percentiles
(:data:`PERCENTILE_95`, as ``np.percentile(x, [2.5, 97.5])``; ``level=0.95`` would give tails that differ in the
last bit, ``(1 - 0.95) / 2 != 0.025`` in floating point).
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np

#: The tails ``np.percentile(x, [2.5, 97.5])`` uses, as quantiles (2.5 / 100 and 97.5 / 100 round to these).
PERCENTILE_95 = (0.025, 0.975)


def tail_quantiles(level: float) -> tuple[float, float]:
    """The quantiles ``(alpha, 1 - alpha)`` with ``alpha = (1 - level) / 2`` of a central ``level`` interval."""
    if not 0 <= level <= 1:
        raise ValueError(f"level must be in [0, 1], got {level}")
    alpha = (1.0 - level) / 2
    return alpha, 1 - alpha


def percentile_interval(
    samples: np.ndarray | list[float], level: float | tuple[float, float] = 0.95, method: str = "linear"
) -> tuple[float, float]:
    """The percentile interval of bootstrap estimates ``samples``: their quantiles at the tails of a central
    ``level`` (:func:`tail_quantiles`), or at the two quantiles ``level`` names (e.g. :data:`PERCENTILE_95`), by
    numpy's quantile ``method``. NaN among the samples gives NaN (drop them first where that is meant)."""
    q = tuple(level) if isinstance(level, tuple | list) else tail_quantiles(level)
    lo, hi = np.quantile(np.asarray(samples, dtype=np.float64), q, method=method)
    return float(lo), float(hi)


def resample_stat(
    values: np.ndarray, stat: Callable[..., np.ndarray], n_boot: int, rng: np.random.Generator
) -> np.ndarray:
    """``stat`` (a reduction along axis 1: ``np.mean``, ``np.median``) of ``n_boot`` resamples of ``values`` with
    replacement, all drawn in one call ``rng.integers(0, n, size=(n_boot, n))`` (the draw order callers' seeds
    rely on)."""
    x = np.asarray(values)
    return stat(x[rng.integers(0, len(x), size=(n_boot, len(x)))], axis=1)
