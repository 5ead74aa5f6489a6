"""From template rows to the project's pair table (:data:`unstereo.tables.PAIRS`), with the bad-row checks.

Every reader yields :class:`TemplateRow` objects; :func:`to_pairs` checks them all in one place:
empty or duplicated pair id, unknown placeholder, no placeholder / fillings that do not differ. Each problem is a
bad row (an :class:`~unstereo.errors.InputError` naming file and line, or dropped and counted; see
:class:`~unstereo.unstereoeval.benchmarks.badrows.BadRows`). The sentences are filled with
:func:`unstereo.templates.fill_template` (``reference_quirks`` switches on the reference code's
``.strip().capitalize()`` and quote deletion).
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from unstereo.tables import PAIRS
from unstereo.templates import fill_template, has_placeholder, unknown_placeholders
from unstereo.unstereoeval.benchmarks.badrows import BadRows


@dataclass
class TemplateRow:
    """One template read from a source file, with where it came from (``path``, 1-based ``line``)."""

    pair_id: str
    template: str
    seed_word: str | None
    path: str
    line: int | None
    extra: dict[str, Any] = field(default_factory=dict)
    # Values the source already has (an existing pair table): sentence_female/male, max_pmi(_word), source,
    # benchmark; they win over the filled / default ones.
    given: dict[str, Any] = field(default_factory=dict)

    @property
    def source(self) -> str:
        name = self.path.rsplit("/", 1)[-1]
        return name if self.line is None else f"{name}:{self.line}"


def empty_id(value: Any) -> bool:
    """True when an id value is missing or blank."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return True
    return not str(value).strip()


def _missing(value: Any) -> bool:
    return (
        value is None
        or (isinstance(value, float) and np.isnan(value))
        or (isinstance(value, str) and not value)
    )


def to_pairs(
    rows: Iterable[TemplateRow],
    benchmark: str,
    bad: BadRows,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """Check ``rows`` and turn them into a PAIRS table (``max_pmi`` NaN, ``max_pmi_word`` None)."""
    seen: dict[str, str] = {}
    records = []
    extra_cols: dict[str, None] = {}
    for row in rows:
        where = row.source
        if empty_id(row.pair_id) or row.pair_id.endswith(":"):
            bad.report(row.path, row.line, "empty id")
            continue
        if row.pair_id in seen:
            bad.report(row.path, row.line, f"duplicated id: {row.pair_id!r} (first at {seen[row.pair_id]})")
            continue
        if not isinstance(row.template, str) or not row.template.strip():
            bad.report(row.path, row.line, "empty template")
            continue
        unknown = unknown_placeholders(row.template)
        if unknown:
            bad.report(
                row.path, row.line, f"unknown placeholder: {', '.join(unknown)} in template {row.template!r}"
            )
            continue
        given = {k: v for k, v in row.given.items() if not _missing(v)}
        female = given.get("sentence_female") or fill_template(row.template, "female", reference_quirks)
        male = given.get("sentence_male") or fill_template(row.template, "male", reference_quirks)
        if not has_placeholder(row.template):
            bad.report(
                row.path, row.line, f"fillings do not differ: template has no placeholder: {row.template!r}"
            )
            continue
        if female == male:
            bad.report(row.path, row.line, f"fillings do not differ: {female!r}")
            continue
        seen[row.pair_id] = where
        extra_cols.update(dict.fromkeys(row.extra))
        records.append(
            {
                "pair_id": row.pair_id,
                "benchmark": str(given.get("benchmark", benchmark)),
                "template": row.template,
                "sentence_female": female,
                "sentence_male": male,
                "seed_word": row.seed_word,
                "max_pmi": float(given.get("max_pmi", np.nan)),
                "max_pmi_word": given.get("max_pmi_word"),
                "source": str(given.get("source", where)),
                **row.extra,
            }
        )
    columns = PAIRS.names + [c for c in extra_cols if c not in PAIRS.names]
    df = pd.DataFrame.from_records(records, columns=columns)
    df["max_pmi"] = df["max_pmi"].astype(float)
    df["max_pmi_word"] = df["max_pmi_word"].astype(object)
    return df


def sample_pairs(pairs: pd.DataFrame, max_pairs: int | None, seed: int = 0) -> pd.DataFrame:
    """At most ``max_pairs`` rows of ``pairs``: a uniform sample without replacement, seeded, in the table's order.

    The same table, ``max_pairs`` and ``seed`` give the same rows on every machine (numpy's PCG64), so every model
    scored on the sample sees the same pairs and the model card's paired tests stay paired. ``None`` or a table no
    longer than ``max_pairs`` is returned whole.
    """
    if max_pairs is None or len(pairs) <= max_pairs:
        return pairs
    if max_pairs < 1:
        raise ValueError(f"max_pairs must be at least 1, got {max_pairs}")
    rows = np.sort(np.random.default_rng(seed).choice(len(pairs), size=max_pairs, replace=False))
    return pairs.iloc[rows].reset_index(drop=True)
