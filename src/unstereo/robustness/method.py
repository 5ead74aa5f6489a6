"""Dataset-construction robustness's declaration in the method registry (see :mod:`unstereo.method_registry`)."""

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

METHOD = Method(
    name="robustness",
    title="Robustness to dataset construction",
    cli={"robustness": "unstereo.robustness.cli:group"},
    config={"robustness": "robustness.schema.yaml"},
    rules=("rules/robustness.smk",),
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
