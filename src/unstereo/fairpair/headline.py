"""FairPair's headline: mean F over the prompts with its bootstrap interval, from
``results/fairpair/summary.parquet``.

Which variant: the first configured dissimilarity (``fairpair.phis``, default ``jaccard``) and the largest
configured fold count (``fairpair.folds``; the paper's main results use k folds, 200 of 500 samples), else the
per-sample k = n when no folds are configured.
"""

from __future__ import annotations

from pathlib import Path

from unstereo.fairpair.method import METHOD as DECLARED
from unstereo.fairpair.schemas import SUMMARY
from unstereo.model_card.headline import Headline, first_present, headline_table, items_table, model_names
from unstereo.tables import read_table

METHOD_NAME = DECLARED.name  # the HEADLINE rows' `method`
# The metrics are declared once, in the method's registry entry.
METRICS = DECLARED.headline


def _k(cfg: dict, ks) -> tuple[int, list[int]]:
    """(k the headline reports, the configured fold counts present) of a model's k values."""
    ks = set(int(k) for k in ks)
    folds = [int(k) for k in cfg.get("folds") or () if int(k) in ks]
    # k = n (per sample) is the largest k of a model; a configured fold count below it is the k-fold variant
    return (max(folds) if folds else max(ks)), folds


class FairPairHeadline(Headline):
    """FairPair on the model card (module docstring)."""

    def enabled(self, config: dict) -> bool:
        cfg = config.get("fairpair") or {}
        return bool(cfg.get("enabled") and cfg.get("models"))

    def models(self, config: dict) -> list[str]:
        return model_names((config.get("fairpair") or {}).get("models"))

    def sources(self, config: dict) -> list[str]:
        return [str(Path(config["results_dir"]) / "fairpair" / "summary.parquet")]

    def item_sources(self, config: dict) -> list[str]:
        root = Path(config["results_dir"]) / "fairpair"
        return [str(root / m / "per_prompt.parquet") for m in self.models(config)]

    def items(self, config: dict):
        """F's items: per (model, prompt) the prompt's F at the headline's (phi, k); prompts with an infinite F are
        left out, as in mean_F."""
        import numpy as np
        import pandas as pd

        cfg = config.get("fairpair") or {}
        table = read_table(self.sources(config)[0], SUMMARY)
        phi = first_present(cfg.get("phis"), table["phi"].unique())
        frames = []
        for model, path in zip(self.models(config), self.item_sources(config), strict=True):
            per = pd.read_parquet(path)
            per = per[per["phi"] == phi]
            if per.empty:
                continue
            k, _ = _k(cfg, per["k"])
            per = per[(per["k"] == k) & np.isfinite(per["F"].astype(float))]
            frames.append(pd.DataFrame(dict(method=METHOD_NAME, model=model, metric="f",
                                            item=per["prompt_id"].astype(str), value=per["F"].astype(float))))  # fmt: skip
        return items_table(pd.concat(frames, ignore_index=True) if frames else [])

    def headline(self, config: dict):
        """One row per model: mean_F with [F_ci_low, F_ci_high] at the chosen (phi, k); n = prompts with a finite F."""
        cfg = config.get("fairpair") or {}
        table = read_table(self.sources(config)[0], SUMMARY)
        phi = first_present(cfg.get("phis"), table["phi"].unique())
        table = table[table["phi"] == phi]
        rows = []
        for model, group in table.groupby("model", sort=True):
            k, folds = _k(cfg, group["k"])
            r = group[group["k"] == k].iloc[0]
            level = int(round(100 * float(cfg.get("level", 0.95))))
            rows.append(
                dict(method=METHOD_NAME, model=model, metric="f", value=float(r["mean_F"]),
                     ci_low=float(r["F_ci_low"]), ci_high=float(r["F_ci_high"]),
                     interval=f"{level}% bootstrap over prompts", n=int(r["n_prompts"]),
                     scope=f"phi {phi}, k = {k}{'' if folds else ' (per sample)'}"
                     + (f", {int(r['n_inf_F'])} prompt(s) with infinite F left out" if int(r["n_inf_F"]) else ""))
            )  # fmt: skip
        return headline_table(rows)

    def occupation_sources(self, config: dict) -> list[str]:
        """Each model's per-prompt table, for the agreement on occupations."""
        return self.item_sources(config)

    def occupation_leans(self, config: dict) -> list[dict]:
        """Per model and occupation of the Common Sents prompts, the mean F at the card's (phi, k)
        (:func:`unstereo.model_card.occupations.fairpair_leans`)."""
        from unstereo.model_card.occupations import fairpair_leans

        cfg = config.get("fairpair") or {}
        rows = []
        for model, path in zip(self.models(config), self.occupation_sources(config), strict=True):
            per = read_table(path)
            phi = first_present(cfg.get("phis"), per["phi"].unique())
            per = per[per["phi"] == phi]
            if per.empty:
                continue
            k, _ = _k(cfg, per["k"])
            rows += fairpair_leans(per[per["k"] == k], model, f"F ({phi}, k = {k})")
        return rows


API = FairPairHeadline()
