"""Helpers for ``src/unstereo/unstereoeval/report/rules.smk``: which models, benchmarks, etas and tables the
metrics/report rules cover.

They live here (not in the rules file) so the rules stay declarative; each takes the validated workflow config.
"""

from __future__ import annotations

import json
from typing import Any

from unstereo.defaults import PAPER_BENCHMARKS
from unstereo.unstereoeval.eta import eta_stem, unique_labels
from unstereo.unstereoeval.metrics import registry as metric_registry

__all__ = [
    "PAPER_BENCHMARKS",
    "PAPER_BENCHMARKS_CONFIG",
    "PAPER_TABLES",
    "TABLE_FORMATS",
    "generic_table_keys",
    "metrics_benchmarks",
    "metrics_models",
    "paper_metrics_settings",
    "table_descriptions",
]

# The paper reproduction's own benchmarks (results/paper/benchmarks/), independent of the benchmarks stage's sources
# (the default config's USE-5 is a generated one): a benchmarks section (its --settings) of the released files, with
# the reference switches, MaxPMI from the released PILE delta; the schema's defaults for the rest (the paper's etas).
PAPER_BENCHMARKS_CONFIG: dict[str, Any] = {
    "reference_quirks": True,
    "sources": {
        **{
            f"USE-{k}": {
                "kind": "use-raw",
                "resource": "reference",
                "path": f"unstereo-eval/data/datasets/raw/USE-{k}.csv",
            }
            for k in (5, 10, 20)
        },
        "Winobias": {"kind": "winobias", "resource": "reference", "path": "winobias/WinoBias/wino/data"},
        "Winogender": {
            "kind": "winogender",
            "resource": "reference",
            "path": "winogender/data/all_sentences.tsv",
        },
    },
}
PAPER_TABLES = [1, 2, 3, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22]
TABLE_FORMATS = ["csv", "md", "tex", "html"]


def _names(items: Any) -> list[str]:
    """Short names from a list of strings or of objects with a ``name`` key."""
    return [i["name"] if isinstance(i, dict) else str(i) for i in (items or [])]


def metrics_models(config: dict) -> list[str]:
    """Models whose scores enter results/metrics: ``metrics.models``, else the score stage's ``score.models``."""
    return _names(config["metrics"].get("models")) or _names(config.get("score", {}).get("models"))


def metrics_benchmarks(config: dict) -> list[str]:
    """Benchmarks of results/metrics: ``metrics.benchmarks``, else the score stage's ``score.benchmarks``."""
    return _names(config["metrics"].get("benchmarks")) or _names(config.get("score", {}).get("benchmarks"))


def paper_metrics_settings(variant: str) -> str:
    """The metrics section (``--settings`` JSON) of the paper reproduction's ``variant``: the schema's defaults (the
    paper's etas, eps and grid) with the reference switches on for ``metrics``, off for ``metrics_clean``."""
    return json.dumps({"reference_quirks": variant == "metrics"})


def generic_table_keys(config: dict) -> list[str]:
    """Names of the tables `unstereo report tables --generic` writes for the configured etas: one per registered
    metric and eta (unstereo.unstereoeval.metrics.registry), and ``gaps`` when there are inf and a finite eta."""
    etas = unique_labels(config["metrics"]["etas"])
    keys = [f"{m.name}_{eta_stem(e)}" for e in etas for m in metric_registry.report_metrics()]
    if "inf" in etas and len(etas) > 1:
        keys.append("gaps")
    return keys


def table_descriptions() -> str:
    """The registered metrics' report tables in one sentence (the report's caption of the metric tables)."""
    return "; ".join(m.title or m.caption.format(eta="eta") for m in metric_registry.report_metrics())
