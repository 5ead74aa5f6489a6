"""BiasTestGPT's headline: the Stereotype Score of one bias specification (the mean over its attribute terms, row
``attribute == "*"``) with its bootstrap interval, from ``results/biastest/summary.parquet``.

Which row: the pair source ``generated`` if present (the test sentences the method is about), else ``released``,
else ``template`` (the manual-template baseline); the specification named first in ``biastest.specs`` when the
table has it, else the alphabetically first of the table's. 50 % is unbiased; the card ranks by the distance from
50, so 40 and 60 are equally biased. One specification rather than an average: above and below 50 would cancel.
"""

from __future__ import annotations

from pathlib import Path

from unstereo.biastest.method import METHOD as DECLARED
from unstereo.biastest.schemas import SUMMARY
from unstereo.model_card.headline import first_present, headline_table, model_names
from unstereo.tables import read_table

METHOD_NAME = DECLARED.name  # the HEADLINE rows' `method`
# The metrics are declared once, in the method's registry entry.
METRICS = DECLARED.headline
SOURCE_PREFERENCE = ("generated", "released", "template")


def enabled(config: dict) -> bool:
    return bool((config.get("biastest") or {}).get("enabled") and models(config))


def models(config: dict) -> list[str]:
    """``biastest.models``, else the score stage's (as the stage)."""
    return model_names((config.get("biastest") or {}).get("models")) or model_names(
        (config.get("score") or {}).get("models")
    )


def sources(config: dict) -> list[str]:
    return [str(Path(config["results_dir"]) / "biastest" / "summary.parquet")]


def headline(config: dict):
    """One row per model: the whole-specification Stereotype Score with [ci_low, ci_high]; n = pairs."""
    cfg = config.get("biastest") or {}
    table = read_table(sources(config)[0], SUMMARY)
    table = table[table["attribute"] == "*"]
    source = first_present(SOURCE_PREFERENCE, table["source"].unique())
    table = table[table["source"] == source]
    spec = first_present(cfg.get("specs"), table["spec"].unique())
    rows = []
    for r in table[table["spec"] == spec].sort_values("model").itertuples(index=False):
        rows.append(
            dict(method=METHOD_NAME, model=r.model, metric="ss", value=float(r.stereotype_score),
                 ci_low=float(r.ci_low), ci_high=float(r.ci_high), interval="95% bootstrap", n=int(r.n),
                 scope=f"spec {spec}, {source} pairs")
        )  # fmt: skip
    return headline_table(rows)
