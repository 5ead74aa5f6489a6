"""Robustness to dataset construction's headline: a model's rank-swap rate, from
``results/robustness/rank_swaps.parquet``.

Rank-swap rate of a model m: over every alternate construction (every construction but ``original``, each trial of a
sub-sample), every benchmark and every other model m', the share of (trial, m') comparisons in which m and m' are
ordered differently from the original construction, by the configured score (``robustness.metric``, default US) at
the first configured eta (default inf). It is ``sum(swap_rate * trials) / sum(trials)`` over the rank-swap rows
that involve m. 0 = the model keeps its place against every rival under every construction; higher = its place in a
ranking depends more on how the benchmark was built. It is not a level of bias (``bias_level=False``): the card
shows it beside the others but leaves it out of the rankings' Kendall tau. No interval (the table gives none).
"""

from __future__ import annotations

import math
from pathlib import Path

from unstereo.model_card.headline import Headline, headline_table, model_names
from unstereo.robustness.method import METHOD as DECLARED
from unstereo.robustness.schemas import RANK_SWAPS
from unstereo.tables import read_table
from unstereo.unstereoeval.api import eta_label

METHOD_NAME = DECLARED.name  # the HEADLINE rows' `method`
# The metrics are declared once, in the method's registry entry.
METRICS = DECLARED.headline


class RobustnessHeadline(Headline):
    """Robustness to dataset construction on the model card (module docstring)."""

    def enabled(self, config: dict) -> bool:
        cfg = config.get("robustness") or {}
        return bool(cfg.get("enabled") and self.models(config) and cfg.get("benchmarks"))

    def models(self, config: dict) -> list[str]:
        """``robustness.models``, else every model of ``score.models`` (as the stage)."""
        cfg = config.get("robustness") or {}
        return model_names(cfg.get("models")) or model_names((config.get("score") or {}).get("models"))

    def sources(self, config: dict) -> list[str]:
        return [str(Path(config["results_dir"]) / "robustness" / "rank_swaps.parquet")]

    def headline(self, config: dict):
        """One row per model: its rank-swap rate; n = (trial, rival model) comparisons behind it."""
        cfg = config.get("robustness") or {}
        table = read_table(self.sources(config)[0], RANK_SWAPS)
        metric = cfg.get("metric", "us")
        etas = [float(e) for e in cfg.get("etas") or (math.inf,)]
        present = set(table["eta"].astype(float))
        eta = next((e for e in etas if e in present), min(present) if present else math.inf)
        table = table[
            (table["construction"] != "original") & (table["metric"] == metric) & (table["eta"] == eta)
        ]
        # each row is one pair of models: it counts for both
        long = [table.rename(columns={side: "m"}) for side in ("model_a", "model_b")]
        rows = []
        for model in sorted(set(table["model_a"]) | set(table["model_b"])):
            part = [d[d["m"] == model] for d in long]
            trials = sum(int(d["trials"].sum()) for d in part)
            swaps = sum(float((d["swap_rate"] * d["trials"]).sum()) for d in part)
            constructions = sorted(set().union(*(set(d["construction"]) for d in part)))
            rows.append(
                dict(method=METHOD_NAME, model=model, metric="rank_swap_rate",
                     value=swaps / trials if trials else math.nan, ci_low=math.nan, ci_high=math.nan, interval="",
                     n=trials, scope=f"by {metric} at eta = {eta_label(eta)}, {len(constructions)} construction(s), "
                     f"{table['benchmark'].nunique()} benchmark(s)")
            )  # fmt: skip
        return headline_table(rows)

    def occupation_sources(self, config: dict) -> list[str]:
        """Each model's score table of the Winogender benchmark's constructions, for the agreement on occupations."""
        from unstereo.model_card.occupations import winogender_benchmark

        bench = winogender_benchmark(config, (config.get("robustness") or {}).get("benchmarks"))
        root = Path(config["results_dir"]) / "robustness"
        return [str(root / bench / "scores" / f"{m}.parquet") for m in self.models(config)] if bench else []

    def occupation_leans(self, config: dict) -> list[dict]:
        """Per model, construction and Winogender occupation, UnStereoEval's lean over all pairs
        (:func:`unstereo.model_card.occupations.robustness_leans`)."""
        from unstereo.model_card.occupations import robustness_leans

        paths = self.occupation_sources(config)
        if not paths:  # no Winogender benchmark
            return []
        return [
            r
            for m, p in zip(self.models(config), paths, strict=True)
            for r in robustness_leans(read_table(p), m)
        ]


API = RobustnessHeadline()
