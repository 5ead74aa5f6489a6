"""Counterfactual sentiment bias's headline: individual and group fairness (I.F., G.F.; lower is fairer) with their
bootstrap intervals, from each model's ``results/sentiment/{model}/fairness.parquet``.

Which cell: the first configured attribute (``sentiment.attributes``, default ``country``) and the first configured
classifier (``sentiment.classifiers``, default ``vader``) that the table holds. The card reports one attribute
rather than an average over attributes, which would have no interval.
"""

from __future__ import annotations

from pathlib import Path

from unstereo.model_card.headline import first_present, headline_table, model_names
from unstereo.sentiment.method import METHOD as DECLARED
from unstereo.sentiment.schemas import FAIRNESS
from unstereo.tables import read_table

METHOD_NAME = DECLARED.name  # the HEADLINE rows' `method`
# The metrics are declared once, in the method's registry entry.
METRICS = DECLARED.headline
_TABLE_METRIC = {"if": "IF", "gf": "GF"}


def enabled(config: dict) -> bool:
    return bool((config.get("sentiment") or {}).get("enabled") and models(config))


def models(config: dict) -> list[str]:
    return model_names((config.get("sentiment") or {}).get("models"))


def sources(config: dict) -> list[str]:
    root = Path(config["results_dir"]) / "sentiment"
    return [str(root / m / "fairness.parquet") for m in models(config)]


def headline(config: dict):
    """One row per (model, I.F./G.F.) at the chosen attribute and classifier; n = continuations behind it."""
    cfg = config.get("sentiment") or {}
    classifiers = list(cfg.get("classifiers") or ()) + list((cfg.get("transformer_classifiers") or {}).keys())
    rows = []
    for model, path in zip(models(config), sources(config), strict=True):
        table = read_table(path, FAIRNESS)
        attribute = first_present(cfg.get("attributes"), table["attribute"].unique())
        table = table[table["attribute"] == attribute]
        classifier = first_present(classifiers, table["classifier"].unique())
        table = table[table["classifier"] == classifier].set_index("metric")
        level = int(round(100 * float(cfg.get("level", 0.95))))
        for name, key in _TABLE_METRIC.items():
            if key not in table.index:
                continue
            r = table.loc[key]
            rows.append(
                dict(method=METHOD_NAME, model=model, metric=name, value=float(r["value"]),
                     ci_low=float(r["ci_low"]), ci_high=float(r["ci_high"]), interval=f"{level}% bootstrap",
                     n=int(r["n_continuations"]), scope=f"attribute {attribute}, classifier {classifier}")
            )  # fmt: skip
    return headline_table(rows)
