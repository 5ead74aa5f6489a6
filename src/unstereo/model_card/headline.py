"""Headline metrics: the one number (with its interval) per model that each bias method reports.

Every method declares its headline metrics (:class:`HeadlineMetric`: name, label, which way is more biased) and a
function that reads them from its finished outputs into a :data:`HEADLINE` table, one row per (method, model,
metric). The cross-method model card stacks those tables, so methods with opposite conventions (US: higher = more
neutral; FairPair F: higher = more biased; Stereotype Score: 50 = unbiased) can be shown side by side and ranked
the same way through :meth:`HeadlineMetric.bias`.

:class:`Headline` is the protocol a method's headline module implements for the card: one subclass per method, an
instance of it named ``API`` in the module its registry entry names as ``headline_module``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass

import pandas as pd

from unstereo.headline_metric import DIRECTIONS, HeadlineMetric
from unstereo.tables import TableSchema, columns, validate

__all__ = [
    "DIRECTIONS",
    "HEADLINE",
    "ITEMS",
    "Headline",
    "HeadlineMetric",
    "Resampled",
    "first_present",
    "headline_table",
    "items_table",
    "model_names",
]

HEADLINE = TableSchema(
    "headline",
    "one row per (method, model, metric): a method's headline metric for one model with its interval",
    columns("""
        method    str     the method's registry name (e.g. `unstereoeval`, `fairpair`)
        model     str     the model's short name, as the method's config names it
        metric    str     the headline metric's name (HeadlineMetric.name)
        value     float?  the metric's value
        ci_low    float?  low end of its interval (NaN when the method gives none)
        ci_high   float?  high end of its interval
        interval  str     what the interval is, e.g. `95% bootstrap` or `±1 std` (empty: none)
        n         int?    the number of units (pairs, prompts, tests) behind the value
        scope     str     what the value covers, e.g. `benchmark USE-5, eta = inf` (the choices made)
    """),
    unique=("method", "model", "metric"),
)

ITEMS = TableSchema(
    "headline_items",
    "one row per (method, model, metric, item): the per-item values a headline metric is the weighted mean of, for "
    "the card's paired tests between models (a method's ``items(config)``)",
    columns("""
        method  str    the method's registry name
        model   str    the model's short name
        metric  str    the headline metric's name
        item    str    the unit the models share (pair id, prompt id)
        value   float  the item's contribution: the headline is sum(weight * value) / sum(weight)
        weight  float  the item's weight (1 for a plain mean)
    """),
    unique=("method", "model", "metric", "item"),
)


@dataclass(frozen=True)
class Resampled:
    """What the card's paired bootstrap needs of one (method, model, metric) whose headline is a statistic of items
    rather than their (weighted) mean, e.g. a Wasserstein distance (a method's ``resampled(config)``, beside
    ``items(config)``).

    ``items``: the distinct keys of the unit the models share and the bootstrap draws (pairs, (template, sample));
    ``statistic(positions)``: the metric on the items at ``positions`` of ``items`` (an int array, repeats allowed),
    computed as the method computes its headline, so ``statistic(arange(len(items)))`` is the value the card shows;
    ``strata``: per item, the group it is drawn within (as the method's own bootstrap draws, e.g. per template),
    None for one group."""

    method: str
    model: str
    metric: str
    items: tuple[str, ...]
    statistic: Callable
    strata: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if len(set(self.items)) != len(self.items):
            raise ValueError(f"{self.method}/{self.metric} of {self.model}: the item keys are not distinct")
        if self.strata is not None and len(self.strata) != len(self.items):
            raise ValueError(
                f"{self.method}/{self.metric} of {self.model}: {len(self.strata)} strata for "
                f"{len(self.items)} items"
            )


class Headline(ABC):
    """What the cross-method model card (unstereo.model_card.card) and the agreement on occupations
    (unstereo.model_card.occupations) read of one method, from its finished tables and the workflow config.

    A method implements the four it must have (:meth:`enabled`, :meth:`models`, :meth:`sources`, :meth:`headline`);
    the others default to "none": no per-item values (no permutation test), no resampling statistic (no paired
    bootstrap), no occupation leans. A method that has them overrides both of a pair (the values and the files they
    read).
    """

    @abstractmethod
    def enabled(self, config: dict) -> bool:
        """Whether the method is on the card under ``config`` (it runs, with models)."""

    @abstractmethod
    def models(self, config: dict) -> list[str]:
        """The short model names the method's config lists."""

    @abstractmethod
    def sources(self, config: dict) -> list[str]:
        """The finished tables :meth:`headline` reads (the card rule's input)."""

    @abstractmethod
    def headline(self, config: dict) -> pd.DataFrame:
        """A :data:`HEADLINE` table: one row per (model, headline metric)."""

    def item_sources(self, config: dict) -> list[str]:
        """The tables :meth:`items` reads; none by default."""
        return []

    def items(self, config: dict) -> pd.DataFrame:
        """An :data:`ITEMS` table, the per-item values the headline is the weighted mean of (the card's paired
        permutation tests); empty by default."""
        return items_table([])

    def resampled_sources(self, config: dict) -> list[str]:
        """The tables :meth:`resampled` reads; none by default."""
        return []

    def resampled(self, config: dict) -> list[Resampled]:
        """The headline metrics that are statistics of items rather than their mean (the card's paired bootstrap);
        none by default."""
        return []

    def occupation_sources(self, config: dict) -> list[str]:
        """The tables :meth:`occupation_leans` reads; none by default."""
        return []

    def occupation_leans(self, config: dict) -> list[dict]:
        """Lean rows per (model, occupation) (unstereo.model_card.occupations); none by default."""
        return []


def headline_table(rows: list[dict]) -> pd.DataFrame:
    """A validated :data:`HEADLINE` table from row dicts (an empty one, typed, from no rows). A row without an
    interval (both ends NaN, e.g. a bootstrap of 0 rounds) gets ``interval=""``, so no label claims one."""
    df = pd.DataFrame(rows, columns=HEADLINE.names)
    # A label a row leaves out is empty (an all-missing column would be float NaN).
    for text in ("interval", "scope"):
        df[text] = df[text].astype(object).where(df[text].notna(), "")
    df.loc[df["ci_low"].isna() & df["ci_high"].isna(), "interval"] = ""
    return validate(df.astype({"n": "Int64"}) if len(df) else df, HEADLINE)


def items_table(rows: list[dict] | pd.DataFrame) -> pd.DataFrame:
    """A validated :data:`ITEMS` table from row dicts or a frame (``weight`` defaults to 1)."""
    df = pd.DataFrame(rows)
    if "weight" not in df.columns:
        df["weight"] = 1.0
    df = df.reindex(columns=ITEMS.names)
    return validate(df.astype({"value": float, "weight": float}), ITEMS)


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
