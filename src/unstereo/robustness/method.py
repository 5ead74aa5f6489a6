"""Dataset-construction robustness's declaration in the method registry (see :mod:`unstereo.method_registry`)."""

from pathlib import Path

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

HERE = Path(__file__).parent  # the method's folder: its rules, config schema, conda env and report captions

METHOD = Method(
    name="robustness",
    title="Robustness to dataset construction",
    cli={"robustness": "unstereo.robustness.cli:group"},
    cli_help={
        "robustness": (
            'Dataset-construction robustness ("Tail wagging", docs/methods.md#dataset-construction-robustness): '
            "how much a bias score moves when the benchmark is rebuilt harmlessly (clauses, adjectives, "
            "synonyms, negation, sub-samples)."
        )
    },
    config={"robustness": HERE / "robustness.schema.yaml"},
    rules=(HERE / "rules.smk",),
    captions=(HERE / "captions",),
    # no env of its own: its rules run in UnStereoEval's score and report envs (conda: ../unstereoeval/score/env.yaml, ...)
    extras=("score", "report"),
    resources=("reference",),
    tables={
        "robustness": (
            ("*/*/pairs.parquet", "unstereo.tables:PAIRS"),
            ("*/scores/*.cost.parquet", "unstereo.robustness.schemas:COST"),
            ("*/scores/*.parquet", "unstereo.tables:SCORES"),
            ("scores.parquet", "unstereo.robustness.schemas:SCORES"),
            ("rank_swaps.parquet", "unstereo.robustness.schemas:RANK_SWAPS"),
            ("rankings.parquet", "unstereo.robustness.schemas:RANKINGS"),
            ("summary.parquet", "unstereo.robustness.schemas:SUMMARY"),
            ("cost.parquet", "unstereo.robustness.schemas:COST"),
        ),
    },
    category="Robustness",
    headline=(
        HeadlineMetric(
            "rank_swap_rate",
            "Rank-swap rate (alternate constructions)",
            "higher",
            bias_level=False,
            limits=(0.0, 1.0),
        ),
    ),
    headline_module="unstereo.robustness.headline",
    # after UnStereoEval, whose benchmarks and scores it rebuilds (its rules read the score and benchmarks config
    # sections themselves, not other rules files' globals, so the order only sets where its rules appear)
    order=30,
)
