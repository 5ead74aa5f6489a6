"""UnStereoEval metrics (docs/methods.md#scoring-and-metrics): Unstereo Score with its Bernoulli std, fairness
curve and AuFC, fairness gap, skew labels, preference disparity and male_rel_ratio, for any set of (model,
benchmark, eta).

The metrics of the METRICS table are registered in :mod:`.registry` (``Metric``, ``register``); a new UnStereoEval
metric adds itself and its report tables there (a new bias method declares itself in :mod:`unstereo.method_registry`).
"""

from unstereo.unstereoeval.eta import eta_mask, parse_eta
from unstereo.unstereoeval.metrics.compute import (
    compute_curves,
    compute_metrics,
    curves_from_joined,
    fairness_gap,
    join_scores,
    metrics_from_joined,
)
from unstereo.unstereoeval.metrics.core import (
    DEFAULT_EPS,
    aufc,
    default_eps_grid,
    fairness_curve,
    preference_disparity,
    skew_counts,
    skew_labels,
    to_log10,
    unstereo_score,
)
from unstereo.unstereoeval.metrics.registry import Metric, register

__all__ = [
    "DEFAULT_EPS",
    "Metric",
    "aufc",
    "compute_curves",
    "compute_metrics",
    "curves_from_joined",
    "default_eps_grid",
    "eta_mask",
    "fairness_curve",
    "fairness_gap",
    "join_scores",
    "metrics_from_joined",
    "parse_eta",
    "preference_disparity",
    "register",
    "skew_counts",
    "skew_labels",
    "to_log10",
    "unstereo_score",
]
