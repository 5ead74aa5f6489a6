"""Headline metrics: the one number (with its interval) per model that each bias method reports.

Every method declares its headline metrics (:class:`HeadlineMetric`: name, label, which way is more biased) and a
function that reads them from its finished outputs into a :data:`HEADLINE` table, one row per (method, model,
metric). The cross-method model card stacks those tables, so methods with opposite conventions (US: higher = more
neutral; FairPair F: higher = more biased; Stereotype Score: 50 = unbiased) can be shown side by side and ranked
the same way through :meth:`HeadlineMetric.bias`.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from .tables import Column, TableSchema, validate

DIRECTIONS = ("higher", "lower", "away")


@dataclass(frozen=True)
class HeadlineMetric:
    """One headline metric of a method.

    ``more_biased``: ``"higher"`` (a larger value means more bias), ``"lower"`` (a smaller value means more bias) or
    ``"away"`` (the distance from ``ideal`` measures the bias, e.g. Stereotype Score with ideal 50).
    """

    name: str  # the HEADLINE table's `metric` value, e.g. "us"
    label: str  # how the card shows it, e.g. "Unstereo Score (%)"
    more_biased: str  # "higher" | "lower" | "away"
    ideal: float | None = None  # the unbiased value; required for "away"
    # False for a number that is not a level of bias (robustness's rank-swap rate says how fragile a model's place
    # in a ranking is): the card shows it but leaves it out of the cross-method rankings and their Kendall tau.
    bias_level: bool = True
    # The values the metric can take, (low, high), None = unbounded: the card's figure keeps its axis inside them.
    limits: tuple[float | None, float | None] = (None, None)

    def __post_init__(self) -> None:
        if self.more_biased not in DIRECTIONS:
            raise ValueError(f"headline metric {self.name!r}: more_biased must be one of {DIRECTIONS}")
        if self.more_biased == "away" and self.ideal is None:
            raise ValueError(f"headline metric {self.name!r}: more_biased='away' needs an ideal value")

    def bias(self, value):
        """``value`` oriented so that larger always means more biased (for rankings across methods):
        the value itself, its negative, or its distance from :attr:`ideal`."""
        v = np.asarray(value, dtype=float)
        if self.more_biased == "higher":
            out = v
        elif self.more_biased == "lower":
            out = -v
        else:
            out = np.abs(v - float(self.ideal))
        return float(out) if np.ndim(out) == 0 else out


HEADLINE = TableSchema(
    "headline",
    "one row per (method, model, metric): a method's headline metric for one model with its interval",
    (
        Column("method", "str", "the method's registry name (e.g. `unstereoeval`, `fairpair`)"),
        Column("model", "str", "the model's short name, as the method's config names it"),
        Column("metric", "str", "the headline metric's name (HeadlineMetric.name)"),
        Column("value", "float", "the metric's value", nullable=True),
        Column("ci_low", "float", "low end of its interval (NaN when the method gives none)", nullable=True),
        Column("ci_high", "float", "high end of its interval", nullable=True),
        Column("interval", "str", "what the interval is, e.g. `95% bootstrap` or `±1 std` (empty: none)"),
        Column("n", "int", "the number of units (pairs, prompts, tests) behind the value", nullable=True),
        Column("scope", "str", "what the value covers, e.g. `benchmark USE-5, eta = inf` (the choices made)"),
    ),
    unique=("method", "model", "metric"),
)


def headline_table(rows: list[dict]) -> pd.DataFrame:
    """A validated :data:`HEADLINE` table from row dicts (an empty one, typed, from no rows). A row without an
    interval (both ends NaN, e.g. a bootstrap of 0 rounds) gets ``interval=""``, so no label claims one."""
    df = pd.DataFrame(rows, columns=HEADLINE.names)
    df.loc[df["ci_low"].isna() & df["ci_high"].isna(), "interval"] = ""
    return validate(df.astype({"n": "Int64"}) if len(df) else df, HEADLINE)


def first_present(preferred, available) -> str | None:
    """The first of ``preferred`` (a config list, in its order) found in ``available``; else the smallest of
    ``available`` (so a table the config does not describe still gives one deterministic choice); None if empty."""
    available = [a for a in available if a is not None]
    for p in preferred or ():
        if p in available:
            return p
    return min(available) if available else None


def model_names(section) -> list[str]:
    """Short model names of a method's ``models`` config: the keys of a mapping, or a list's items."""
    if not section:
        return []
    return list(section.keys()) if isinstance(section, dict) else [str(m) for m in section]
