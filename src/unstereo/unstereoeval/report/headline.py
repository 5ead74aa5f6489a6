"""UnStereoEval's headline: Unstereo Score (with its Bernoulli standard error) and AuFC of one benchmark at
eta = inf, from ``results/metrics/metrics.parquet``; for the card's paired permutation tests, both per pair
(:func:`items`: US's 100 or 0, AuFC's per-pair area), from the score tables.

Which benchmark: the first of the config's metrics benchmarks (``metrics.benchmarks``, else ``score.benchmarks``)
that the table holds. The card shows one benchmark rather than pooling them: benchmarks may share pairs (the same
pairs under two deltas), so a pooled share would count them twice, and AuFC has no pooled form. (It lives in
``report``, beside UnStereoEval's report tables, because ``metrics`` never imports ``report``.)
"""

from __future__ import annotations

import math
from pathlib import Path

from unstereo.errors import InputError
from unstereo.model_card.headline import Headline, first_present, headline_table, items_table
from unstereo.tables import read_table
from unstereo.unstereoeval.method import METHOD as DECLARED
from unstereo.unstereoeval.report.rules import metrics_benchmarks, metrics_models

METHOD_NAME = DECLARED.name  # the HEADLINE rows' `method`
# The metrics are declared once, in the method's registry entry.
METRICS = DECLARED.headline


def _benchmark(config: dict, table) -> str | None:
    """The benchmark the headline reports: the first configured one the metrics table holds."""
    return first_present(metrics_benchmarks({"metrics": {}, **config}), table["benchmark"].unique())


def _log10(config: dict, rows, model: str) -> bool:
    """Whether the metrics stage took this model's eta = inf AuFC in log10 (the quirk, :func:`aufc_in_log10`)."""
    from unstereo.unstereoeval.metrics.core import aufc_in_log10

    row = rows[rows["model"] == model]
    default = bool((config.get("metrics") or {}).get("reference_quirks", False))
    quirks = (
        bool(row["reference_quirks"].iloc[0]) if "reference_quirks" in row.columns and len(row) else default
    )
    return aufc_in_log10(math.inf, quirks)


def _eps(config: dict) -> float:
    """The metrics stage's eps (``metrics.eps``): a pair is neutral when |FM| <= eps."""
    from unstereo.unstereoeval.metrics.core import DEFAULT_EPS

    return float((config.get("metrics") or {}).get("eps", DEFAULT_EPS))


def eps_grid(config: dict):
    """The metrics stage's AuFC grid: ``metrics.eps_grid`` (numpy.linspace(start, stop, num); missing keys from
    :data:`unstereo.defaults.EPS_GRID`)."""
    import numpy as np

    from unstereo.defaults import EPS_GRID

    g = (config.get("metrics") or {}).get("eps_grid") or {}
    return np.linspace(
        float(g.get("start", EPS_GRID[0])), float(g.get("stop", EPS_GRID[1])), int(g.get("num", EPS_GRID[2]))
    )


def _winogender(config: dict) -> str | None:
    from unstereo.model_card.occupations import winogender_benchmark

    score = config.get("score") or {}
    return winogender_benchmark(config, score.get("benchmarks")) if score.get("enabled") else None


class UnStereoEvalHeadline(Headline):
    """UnStereoEval on the model card (module docstring)."""

    def enabled(self, config: dict) -> bool:
        """On the card when the metrics stage runs: ``metrics.enabled`` with models and benchmarks (as rule all)."""
        cfg = {"metrics": {}, **config}
        return bool(cfg["metrics"].get("enabled") and self.models(config) and metrics_benchmarks(cfg))

    def models(self, config: dict) -> list[str]:
        return metrics_models({"metrics": {}, **config})

    def sources(self, config: dict) -> list[str]:
        """The finished tables the headline reads."""
        return [str(Path(config["results_dir"]) / "metrics" / "metrics.parquet")]

    def item_sources(self, config: dict) -> list[str]:
        """The per-pair score tables of the headline's benchmark candidates (every model, every configured benchmark:
        which one the headline picks is known only once the metrics table exists)."""
        root = Path(config["results_dir"]) / "scores"
        cfg = {"metrics": {}, **config}
        return [str(root / m / f"{b}.parquet") for m in self.models(config) for b in metrics_benchmarks(cfg)]

    def _headline_fm(self, config: dict):
        """(metrics rows of the headline's benchmark at eta = inf, benchmark, [(model, pair ids, FM per pair)]): the pairs
        the headline's US and AuFC are computed on, from the score tables."""
        table = read_table(self.sources(config)[0])
        table = table[table["eta"] == math.inf]
        bench = _benchmark(config, table)
        rows = table[table["benchmark"] == bench]
        out = []
        # The score tables sit under the configured model names; the metrics table (and so the card) names a model by
        # the score table's own `model` column, which a score run may have set differently (--name).
        for folder in self.models(config):
            scores = read_table(Path(config["results_dir"]) / "scores" / folder / f"{bench}.parquet")
            for model, part in scores.groupby("model", sort=True):
                if model in set(rows["model"]):
                    fm = (part["logp_female"] - part["logp_male"]).to_numpy(dtype=float)
                    out.append((model, part["pair_id"].astype(str).to_numpy(), fm))
        return rows, bench, out

    def items(self, config: dict):
        """The headline's items, per (model, scored pair of the headline's benchmark; eta = inf keeps every pair):
        for US, 100 when the pair is neutral (|ln p(s_F) - ln p(s_M)| <= eps, the metrics stage's eps) else 0, whose
        mean is US; for AuFC, the pair's own area under its fairness curve over ``metrics.eps_grid``
        (:func:`~unstereo.unstereoeval.metrics.core.pair_areas`, in log10 where the metrics row says
        ``reference_quirks``), whose mean is AuFC (the trapezoid rule is linear in the curve, a mean of the pairs')."""
        import pandas as pd

        from unstereo.unstereoeval.metrics.core import pair_areas, skew_labels

        eps = _eps(config)
        rows, _bench, fms = self._headline_fm(config)
        grid = eps_grid(config)
        frames = []
        for model, ids, fm in fms:
            us = 100.0 * (skew_labels(fm, eps) == "neutral")
            areas = pair_areas(fm, grid, log10=_log10(config, rows, model))
            for metric, value in (("us", us), ("aufc", areas)):
                frames.append(
                    pd.DataFrame(dict(method=METHOD_NAME, model=model, metric=metric, item=ids, value=value))
                )
        return items_table(pd.concat(frames, ignore_index=True) if frames else [])

    def headline(self, config: dict):
        """One row per (model, metric): US (interval: ±1 Bernoulli standard error, the table's ``us_std``) and AuFC
        (no interval) of the chosen benchmark at eta = inf."""
        path = self.sources(config)[0]
        table = read_table(path)
        for col in ("model", "benchmark", "eta", "n", "us", "us_std", "aufc"):
            if col not in table.columns:
                raise InputError(f"metrics table lacks column {col!r}", path=path)
        table = table[table["eta"] == math.inf]
        bench = _benchmark(config, table)
        rows = []
        for r in table[table["benchmark"] == bench].sort_values("model").itertuples(index=False):
            scope = f"benchmark {bench}, eta = inf"
            us, se = float(r.us), float(r.us_std)
            rows.append(
                dict(
                    method=METHOD_NAME,
                    model=r.model,
                    metric="us",
                    value=us,
                    ci_low=us - se,
                    ci_high=us + se,
                    interval="±1 s.e. (Bernoulli)",
                    n=int(r.n),
                    scope=scope,
                )
            )
            rows.append(
                dict(
                    method=METHOD_NAME,
                    model=r.model,
                    metric="aufc",
                    value=float(r.aufc),
                    ci_low=math.nan,
                    ci_high=math.nan,
                    interval="",
                    n=int(r.n),
                    scope=scope,
                )
            )
        return headline_table(rows)

    def occupation_sources(self, config: dict) -> list[str]:
        """The score tables of the scored Winogender benchmark (every model), for the card's agreement on occupations."""
        bench = _winogender(config)
        root = Path(config["results_dir"]) / "scores"
        return [str(root / m / f"{bench}.parquet") for m in self.models(config)] if bench else []

    def occupation_leans(self, config: dict) -> list[dict]:
        """Per model and Winogender occupation, the lean over all pairs and over those whose pronoun refers to the
        occupation (:func:`unstereo.model_card.occupations.winogender_leans`; eps: ``metrics.eps``)."""
        from unstereo.model_card.occupations import winogender_leans

        eps = _eps(config)
        paths = self.occupation_sources(config)
        if not paths:  # no Winogender benchmark scored
            return []
        return [
            r
            for m, p in zip(self.models(config), paths, strict=True)
            for r in winogender_leans(read_table(p), m, eps)
        ]


API = UnStereoEvalHeadline()
