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
from unstereo.model_card.headline import Headline, first_present, headline_table, items_table, model_names
from unstereo.tables import read_table

METHOD_NAME = DECLARED.name  # the HEADLINE rows' `method`
# The metrics are declared once, in the method's registry entry.
METRICS = DECLARED.headline
SOURCE_PREFERENCE = ("generated", "released", "template")


def _choice(cfg: dict, summary) -> tuple[str | None, str | None]:
    """(source, spec) the headline reports, from the SUMMARY table (module docstring)."""
    table = summary[summary["attribute"] == "*"]
    source = first_present(SOURCE_PREFERENCE, table["source"].unique())
    spec = first_present(cfg.get("specs"), table.loc[table["source"] == source, "spec"].unique())
    return source, spec


class BiasTestHeadline(Headline):
    """BiasTestGPT on the model card (module docstring)."""

    def enabled(self, config: dict) -> bool:
        return bool((config.get("biastest") or {}).get("enabled") and self.models(config))

    def models(self, config: dict) -> list[str]:
        """``biastest.models``, else the score stage's (as the stage)."""
        return model_names((config.get("biastest") or {}).get("models")) or model_names(
            (config.get("score") or {}).get("models")
        )

    def sources(self, config: dict) -> list[str]:
        return [str(Path(config["results_dir"]) / "biastest" / "summary.parquet")]

    def item_sources(self, config: dict) -> list[str]:
        """Every specification's pairs and every model's scores of them (the headline's spec is known only from the
        summary)."""
        from unstereo.biastest.rules import specs

        root = Path(config["results_dir"]) / "biastest"
        names = list(specs(config))
        return [str(root / s / "pairs.parquet") for s in names] + [
            str(root / m / s / "scores.parquet") for m in self.models(config) for s in names
        ]

    def items(self, config: dict):
        """The Stereotype Score's items: per (model, pair of the headline's spec and source) 100 x ``stereotyped``
        (1, 0, 0.5 on a tie), weighted 1 / (pairs of its attribute term), so that their weighted mean is the score (the
        mean over attribute terms of each term's mean)."""
        import pandas as pd

        from unstereo.biastest.stats import stereotyped

        cfg = config.get("biastest") or {}
        root = Path(config["results_dir"]) / "biastest"
        source, spec = _choice(cfg, read_table(self.sources(config)[0], SUMMARY))
        if spec is None:
            return items_table([])
        pairs = pd.read_parquet(root / spec / "pairs.parquet")
        pairs = pairs[pairs["source"] == source]
        frames = []
        for model in self.models(config):
            path = root / model / spec / "scores.parquet"
            if not path.exists():
                continue
            df = stereotyped(pairs, pd.read_parquet(path))
            weight = 1.0 / df.groupby("attribute")["pair_id"].transform("count").astype(float)
            frames.append(pd.DataFrame(dict(method=METHOD_NAME, model=model, metric="ss", item=df["pair_id"].astype(str),
                                            value=100.0 * df["stereotyped"].astype(float), weight=weight)))  # fmt: skip
        return items_table(pd.concat(frames, ignore_index=True) if frames else [])

    def headline(self, config: dict):
        """One row per model: the whole-specification Stereotype Score with [ci_low, ci_high]; n = pairs."""
        cfg = config.get("biastest") or {}
        table = read_table(self.sources(config)[0], SUMMARY)
        source, spec = _choice(cfg, table)
        table = table[(table["attribute"] == "*") & (table["source"] == source)]
        rows = []
        for r in table[table["spec"] == spec].sort_values("model").itertuples(index=False):
            rows.append(
                dict(method=METHOD_NAME, model=r.model, metric="ss", value=float(r.stereotype_score),
                     ci_low=float(r.ci_low), ci_high=float(r.ci_high), interval="95% bootstrap", n=int(r.n),
                     scope=f"spec {spec}, {source} pairs")
            )  # fmt: skip
        return headline_table(rows)

    def occupation_sources(self, config: dict) -> list[str]:
        """The pair table of ``Professions_vs_Gender`` and each model's scores of it (when the specification is
        configured), for the agreement on occupations."""
        from unstereo.biastest.rules import specs
        from unstereo.model_card.occupations import PROFESSIONS_SPEC

        cfg = config.get("biastest") or {}
        if PROFESSIONS_SPEC not in specs({"biastest": {"specs": [], **cfg}}):
            return []
        root = Path(config["results_dir"]) / "biastest"
        return [str(root / PROFESSIONS_SPEC / "pairs.parquet")] + [
            str(root / m / PROFESSIONS_SPEC / "scores.parquet") for m in self.models(config)
        ]

    def occupation_leans(self, config: dict) -> list[dict]:
        """Per model and profession term of ``Professions_vs_Gender``, the signed lean
        (:func:`unstereo.model_card.occupations.biastest_leans`; the male side by data/gendered_pairs.csv)."""
        from unstereo.model_card.occupations import PROFESSIONS_SPEC, biastest_leans, gender_terms

        paths = self.occupation_sources(config)
        if not paths:
            return []
        male, female = gender_terms()
        pairs = read_table(paths[0])
        return [
            r
            for m, p in zip(self.models(config), paths[1:], strict=True)
            for r in biastest_leans(pairs, read_table(p), m, male, female, PROFESSIONS_SPEC)
        ]


API = BiasTestHeadline()
