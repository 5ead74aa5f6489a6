"""The metric registry: every metric of the METRICS table and its report tables, added by registration.

A :class:`Metric` is a function over two aligned sets of per-pair values of one (model, benchmark, eta) group::

    fn(a, b, **params) -> {column: value}

``a`` and ``b`` are numpy arrays taken from the two columns ``inputs`` names in the per-pair table (the SCORES table
joined with its pairs). For the UnStereoEval metrics they are ``logp_female`` and ``logp_male``, the
log-likelihoods of the two sentences of each pair. The same shape serves other bias measurements: two sets of
texts (FairPair: a model's continuations of the two prompts of each pair, as object arrays), two score
distributions (a sentiment gap: the sentiment of each continuation), or pairs of scores (Stereotype Score: the
stereotypical and the anti-stereotypical sentence). A metric whose input columns a table lacks is not computed
there: its columns are NaN.

``params`` are the run's settings, passed to every metric as keywords; a metric takes those it needs and ignores
the rest (``**_``):

- ``eps``: the fairness threshold on |ln p(s_F) - ln p(s_M)| (nats);
- ``eps_grid``: the thresholds of the fairness curve (numpy array);
- ``eta``: the group's MaxPMI bound (inf = unconstrained);
- ``reference_quirks``: reproduce the reference code's log-base mix (docs/methods.md#quirk-2-log10-aufc).

The returned dict holds one value per column of ``columns`` (nullable METRICS columns, in the table's order) and
per name of ``extra`` (written after the METRICS columns, not checked by the schema).

Registration is all a new metric of this table needs: :data:`unstereo.tables.METRICS` lists the columns of the
registered metrics, :func:`unstereo.unstereoeval.metrics.compute_metrics` computes them, and the report writes one table per
registered metric (``report=True``) and eta, named ``{name}_eta-{eta}`` and captioned by ``caption``. Only
UnStereoEval's metrics (US, AuFC, PD, ...) are registered here. A new bias method, with stages, tables and rules of
its own, registers in the method registry instead (:mod:`unstereo.method_registry`, docs/adding-a-method.md).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from unstereo import tables
from unstereo.tables import METRIC_KEY_COLUMNS, Column, columns
from unstereo.unstereoeval.metrics.core import (
    aufc,
    aufc_in_log10,
    preference_disparity,
    skew_counts,
    to_log10,
    unstereo_score,
)

MetricFn = Callable[..., Mapping[str, float]]


@dataclass(frozen=True)
class Metric:
    """A registered metric: its function, the METRICS columns it writes, and how the report shows it."""

    name: str  # registry key and table-key prefix: us -> us_eta-inf
    fn: MetricFn  # fn(a, b, **params) -> {column: value}
    columns: tuple[
        Column, ...
    ]  # METRICS columns it writes (nullable: a metric may be undefined on an empty set)
    caption: str  # caption of its report table; "{eta}" is replaced by the eta's label
    title: str = (
        ""  # one line for the report's description of the tables (default: the caption's first words)
    )
    inputs: tuple[str, str] = ("logp_female", "logp_male")  # per-pair columns that become a and b
    extra: tuple[str, ...] = ()  # further values fn returns, written as extra columns (not in the schema)
    value: str | None = None  # the column its report tables show (default: the first of ``columns``)
    std: str | None = None  # a column shown as the value's standard error (``US|std`` cells)
    size_row: bool = False  # report tables start with the benchmark sizes
    report: bool = True  # one report table per eta

    @property
    def value_column(self) -> str:
        return self.value or self.columns[0].name

    @property
    def names(self) -> list[str]:
        """Every column the metric writes: its METRICS columns, then its extras."""
        return [c.name for c in self.columns] + list(self.extra)

    def compute(self, a: np.ndarray, b: np.ndarray, **params) -> dict[str, float]:
        """``fn(a, b, **params)``, checked to return exactly :attr:`names`."""
        out = dict(self.fn(a, b, **params))
        if set(out) != set(self.names):
            raise ValueError(f"metric {self.name!r} returned {sorted(out)}, expected {sorted(self.names)}")
        return {k: out[k] for k in self.names}

    def undefined(self) -> dict[str, float]:
        """NaN for every column: the values of a table without the metric's inputs."""
        return dict.fromkeys(self.names, math.nan)


_REGISTRY: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    """Add ``metric``; ValueError when its name or one of its columns is taken, or a column is not nullable."""
    if not metric.columns:
        raise ValueError(f"metric {metric.name!r} writes no column")
    if metric.name in _REGISTRY:
        raise ValueError(f"a metric named {metric.name!r} is already registered")
    taken = {c.name for c in METRIC_KEY_COLUMNS} | {n for m in _REGISTRY.values() for n in m.names}
    clash = sorted(taken & set(metric.names))
    if clash:
        raise ValueError(f"metric {metric.name!r}: column(s) {clash} already written by another metric")
    strict = [c.name for c in metric.columns if not c.nullable]
    if strict:
        raise ValueError(f"metric {metric.name!r}: column(s) {strict} must be nullable (NaN on an empty set)")
    shown = [metric.value_column] + ([metric.std] if metric.std else [])
    unknown = [c for c in shown if c not in {col.name for col in metric.columns}]
    if unknown:
        raise ValueError(f"metric {metric.name!r}: value/std column(s) {unknown} are not among its columns")
    _REGISTRY[metric.name] = metric
    return metric


def unregister(name: str) -> Metric:
    """Remove and return the metric ``name`` (KeyError when unknown)."""
    get(name)
    return _REGISTRY.pop(name)


@contextmanager
def registered(metric: Metric) -> Iterator[Metric]:
    """``metric`` registered for the duration of a ``with`` block (tests, one-off analyses)."""
    register(metric)
    try:
        yield metric
    finally:
        _REGISTRY.pop(metric.name, None)


def get(name: str) -> Metric:
    """The metric registered as ``name``; KeyError naming the known ones otherwise."""
    try:
        return _REGISTRY[name]
    except KeyError:
        raise KeyError(f"no metric {name!r}; registered: {sorted(_REGISTRY)}") from None


def all_metrics() -> list[Metric]:
    """The registered metrics, in registration order (the order of their METRICS columns)."""
    return list(_REGISTRY.values())


def report_metrics() -> list[Metric]:
    """The registered metrics that get a report table per eta."""
    return [m for m in _REGISTRY.values() if m.report]


def metric_columns() -> tuple[Column, ...]:
    """The METRICS columns of every registered metric, in registration order."""
    return tuple(c for m in _REGISTRY.values() for c in m.columns)


tables.add_metric_columns(metric_columns)


# ------------------------------------------------------------------------------------ the UnStereoEval metrics


def _fm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """FM = ln p(s_F) - ln p(s_M) per pair."""
    return np.asarray(a, dtype=float) - np.asarray(b, dtype=float)


def _thresholded(
    a: np.ndarray, b: np.ndarray, eps: float, reference_quirks: bool
) -> tuple[np.ndarray, float]:
    """FM and eps in the units the skew thresholds use: log10 as the reference code does with the quirks on (the
    same pairs pass: |log10 e^x| <= log10 e^eps <=> |x| <= eps), else nats."""
    fm = _fm(a, b)
    if reference_quirks:
        return to_log10(fm), float(to_log10(np.array([eps]))[0])
    return fm, eps


def unstereo_metric(a, b, *, eps: float, reference_quirks: bool = False, **_) -> dict[str, float]:
    """US and its Bernoulli standard error, in percent (docs/methods.md#scoring-and-metrics)."""
    us, std = unstereo_score(*_thresholded(a, b, eps, reference_quirks))
    return {"us": us, "us_std": std}


def aufc_metric(
    a, b, *, eps_grid: np.ndarray, eta: float, reference_quirks: bool = False, **_
) -> dict[str, float]:
    """Area under the fairness curve (in log10 only for the quirk of :func:`~.core.aufc_in_log10`)."""
    return {"aufc": aufc(_fm(a, b), eps_grid, log10=aufc_in_log10(eta, reference_quirks))}


def disparity_metric(a, b, *, eps: float, reference_quirks: bool = False, **_) -> dict[str, float]:
    """PD and male_rel_ratio in percent, with the skewed counts behind them."""
    fm, eps_t = _thresholded(a, b, eps, reference_quirks)
    pd_, ratio = preference_disparity(fm, eps_t)
    counts = skew_counts(fm, eps_t)
    return {"pd": pd_, "male_rel_ratio": ratio, "n_female": counts.female, "n_male": counts.male}


# Registration order = METRICS column order (us, us_std, aufc, pd, male_rel_ratio).
US = register(
    Metric(
        "us",
        unstereo_metric,
        columns("""
            us      float?  Unstereo Score in percent
            us_std  float?  Bernoulli standard error of us, in percent
        """),
        caption="US (%) ± std at eta = {eta}",
        title="Unstereo Score US (%) with its Bernoulli standard error and the benchmark sizes",
        std="us_std",
        size_row=True,
    )
)
AUFC = register(
    Metric(
        "aufc",
        aufc_metric,
        columns("""
            aufc  float?  area under the fairness curve
        """),
        caption="AuFC at eta = {eta}",
        title="area under the fairness curve AuFC",
    )
)
PD = register(
    Metric(
        "pd",
        disparity_metric,
        columns("""
            pd              float?  preference disparity: %female-skewed - %male-skewed
            male_rel_ratio  float?  #male-skewed / (#male + #female skewed), percent
        """),
        caption="PD at eta = {eta}",
        title="preference disparity PD (%female-skewed - %male-skewed)",
        extra=("n_female", "n_male"),
    )
)
