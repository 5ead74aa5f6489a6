"""BiasTestGPT's declaration in the method registry (see :mod:`unstereo.method_registry`)."""

from pathlib import Path

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

HERE = Path(__file__).parent  # the method's folder: its rules, config schema, conda env and report captions

METHOD = Method(
    name="biastest",
    title="BiasTestGPT",
    cli={"biastest": "unstereo.biastest.cli:group"},
    cli_help={
        "biastest": "BiasTestGPT: test sentences for a bias specification, Stereotype Score, an inspection page."
    },
    config={"biastest": HERE / "biastest.schema.yaml"},
    rules=(HERE / "rules.smk",),
    envs=(HERE / "env.yaml",),
    captions=(HERE / "captions",),
    extras=("biastest",),
    resources=("reference",),
    tables={
        "biastest": (
            ("*/pairs.parquet", "unstereo.biastest.schemas:PAIRS"),
            ("*/generated.parquet", "unstereo.biastest.schemas:PAIRS"),
            ("*/generations.parquet", "unstereo.biastest.schemas:GENERATIONS"),
            ("*/*/scores.parquet", "unstereo.biastest.schemas:SCORES"),
            ("summary.parquet", "unstereo.biastest.schemas:SUMMARY"),
            ("comparison.parquet", "unstereo.biastest.schemas:COMPARISON"),
        ),
    },
    category="BiasTestGPT",
    # the share of tests where the model prefers the stereotype: 50 % = no preference
    headline=(
        HeadlineMetric("ss", "Stereotype Score (%, 50 = unbiased)", "away", ideal=50.0, limits=(0.0, 100.0)),
    ),
    headline_module="unstereo.biastest.headline",
    order=40,
)
