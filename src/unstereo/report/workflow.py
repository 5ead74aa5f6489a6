"""Helpers for ``rules/report.smk``: which models, benchmarks, etas and tables the metrics/report rules cover.

They live here (not in the rules file) so the rules stay declarative; each takes the validated workflow config.
"""

from __future__ import annotations

from typing import Any

PAPER_BENCHMARKS = ["USE-5", "USE-10", "USE-20", "Winobias", "Winogender"]
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


def eta_label(eta: Any) -> str:
    """An eta as written in file names: ``inf`` or str(float)."""
    return "inf" if str(eta).lower() in ("inf", ".inf", "infinity") else str(float(eta))


def eta_options(config: dict) -> str:
    return " ".join(f"--eta {eta_label(e)}" for e in config["metrics"]["etas"])


def grid_option(config: dict) -> str:
    g = config["metrics"]["eps_grid"]
    return f"{g['start']}:{g['stop']}:{g['num']}"


def generic_table_keys(config: dict) -> list[str]:
    """Names of the tables `unstereo report tables --generic` writes for the configured etas."""
    etas = list(dict.fromkeys(eta_label(e) for e in config["metrics"]["etas"]))
    keys = [f"{kind}_eta-{e}" for e in etas for kind in ("us", "pd", "aufc")]
    if "inf" in etas and len(etas) > 1:
        keys.append("gaps")
    return keys
