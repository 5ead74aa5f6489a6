"""Counterfactual sentiment bias's headline: individual and group fairness (I.F., G.F.; lower is fairer) with their
bootstrap intervals, from each model's ``results/sentiment/{model}/fairness.parquet``.

Which cell: the first configured attribute (``sentiment.attributes``, default ``country``) and the first configured
classifier (``sentiment.classifiers``, default ``vader``) that the table holds. The card reports one attribute
rather than an average over attributes, which would have no interval. For the card's paired bootstrap,
:func:`resampled` gives I.F. and G.F. as statistics of (template, sample) units, from the continuations.
"""

from __future__ import annotations

from pathlib import Path

from unstereo.model_card.headline import Headline, Resampled, first_present, headline_table, model_names
from unstereo.sentiment.method import METHOD as DECLARED
from unstereo.sentiment.schemas import FAIRNESS
from unstereo.tables import read_table

METHOD_NAME = DECLARED.name  # the HEADLINE rows' `method`
# The metrics are declared once, in the method's registry entry.
METRICS = DECLARED.headline
_TABLE_METRIC = {"if": "IF", "gf": "GF"}


def _choice(cfg: dict, table) -> tuple[str | None, str | None]:
    """The headline's (attribute, classifier) in a FAIRNESS table: the first configured ones the table holds."""
    classifiers = list(cfg.get("classifiers") or ()) + list((cfg.get("transformer_classifiers") or {}).keys())
    attribute = first_present(cfg.get("attributes"), table["attribute"].unique())
    classifier = first_present(classifiers, table.loc[table["attribute"] == attribute, "classifier"].unique())
    return attribute, classifier


class SentimentHeadline(Headline):
    """Counterfactual sentiment bias on the model card (module docstring)."""

    def enabled(self, config: dict) -> bool:
        return bool((config.get("sentiment") or {}).get("enabled") and self.models(config))

    def models(self, config: dict) -> list[str]:
        return model_names((config.get("sentiment") or {}).get("models"))

    def sources(self, config: dict) -> list[str]:
        root = Path(config["results_dir"]) / "sentiment"
        return [str(root / m / "fairness.parquet") for m in self.models(config)]

    def headline(self, config: dict):
        """One row per (model, I.F./G.F.) at the chosen attribute and classifier; n = continuations behind it."""
        cfg = config.get("sentiment") or {}
        rows = []
        for model, path in zip(self.models(config), self.sources(config), strict=True):
            table = read_table(path, FAIRNESS)
            attribute, classifier = _choice(cfg, table)
            table = table[(table["attribute"] == attribute) & (table["classifier"] == classifier)].set_index(
                "metric"
            )
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

    def resampled_sources(self, config: dict) -> list[str]:
        """The tables :func:`resampled` reads: each model's fairness table (the headline's choice) and continuations."""
        root = Path(config["results_dir"]) / "sentiment"
        return self.sources(config) + [str(root / m / "continuations.parquet") for m in self.models(config)]

    def resampled(self, config: dict) -> list[Resampled]:
        """I.F. and G.F. per model at the headline's (attribute, classifier) as statistics of the units the method's own
        bootstrap draws (:func:`unstereo.sentiment.fairness.unit_statistics`: item ``family/sample``, drawn within its
        template family), from the model's continuations."""
        from unstereo.sentiment.fairness import unit_statistics
        from unstereo.sentiment.schemas import CONTINUATIONS

        cfg = config.get("sentiment") or {}
        root = Path(config["results_dir"]) / "sentiment"
        out = []
        for model, path in zip(self.models(config), self.sources(config), strict=True):
            attribute, classifier = _choice(cfg, read_table(path, FAIRNESS))
            if attribute is None or classifier is None:
                continue
            df = read_table(root / model / "continuations.parquet", CONTINUATIONS)
            units, families, if_of, gf_of = unit_statistics(
                df[df["attribute"] == attribute], f"score_{classifier}"
            )
            keys = tuple(f"{f}/{s}" for f, s in units)
            strata = tuple(str(f) for f in families)
            out += [
                Resampled(METHOD_NAME, model, "if", keys, if_of, strata),
                Resampled(METHOD_NAME, model, "gf", keys, gf_of, strata),
            ]
        return out

    def occupation_sources(self, config: dict) -> list[str]:
        """Each model's continuations when ``occupation`` is among the attributes, for the agreement on occupations."""
        cfg = config.get("sentiment") or {}
        if "occupation" not in (cfg.get("attributes") or ["occupation"]):
            return []
        root = Path(config["results_dir"]) / "sentiment"
        return [str(root / m / "continuations.parquet") for m in self.models(config)]

    def occupation_leans(self, config: dict) -> list[dict]:
        """Per model and occupation value, the mean sentiment minus the mean over occupations, by the first configured
        classifier the continuations hold (:func:`unstereo.model_card.occupations.sentiment_leans`)."""
        from unstereo.model_card.occupations import sentiment_leans

        cfg = config.get("sentiment") or {}
        rows = []
        for model, path in zip(self.models(config), self.occupation_sources(config), strict=False):
            cont = read_table(path)
            scored = [c[len("score_") :] for c in cont.columns if c.startswith("score_")]
            classifier = first_present(cfg.get("classifiers"), scored)
            if classifier:
                rows += sentiment_leans(cont, model, classifier)
        return rows


API = SentimentHeadline()
