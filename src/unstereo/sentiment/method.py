"""Counterfactual sentiment bias's declaration in the method registry (see :mod:`unstereo.method_registry`)."""

from pathlib import Path

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

HERE = Path(__file__).parent  # the method's folder: its rules, config schema, conda env and report captions

# a debiasing run's folder holds the same tables as the model's
_SCHEMAS = "unstereo.sentiment.schemas"
METHOD = Method(
    name="sentiment",
    title="Counterfactual sentiment bias",
    cli={"sentiment": "unstereo.sentiment.cli:group"},
    cli_help={
        "sentiment": "Counterfactual sentiment bias (Huang et al. 2020): I.F., G.F. and counterfactual debiasing."
    },
    config={"sentiment": HERE / "sentiment.schema.yaml"},
    rules=(HERE / "rules.smk",),
    envs=(HERE / "env.yaml",),
    captions=(HERE / "captions",),
    extras=("sentiment",),
    resources=("reference",),
    tables={
        "sentiment": (
            ("*/continuations.parquet", f"{_SCHEMAS}:CONTINUATIONS"),
            ("*/samples.parquet", "unstereo.llm.sample:CONTINUATIONS"),
            ("*/fairness.parquet", f"{_SCHEMAS}:FAIRNESS"),
            ("*/parity.parquet", f"{_SCHEMAS}:PARITY"),
            ("*/debias.parquet", "unstereo.sentiment.debias_eval:QUALITY"),
            ("*/debias/*/quality.parquet", "unstereo.sentiment.debias_eval:QUALITY"),
            ("*/debias/*/continuations.parquet", f"{_SCHEMAS}:CONTINUATIONS"),
            ("*/debias/*/samples.parquet", "unstereo.llm.sample:CONTINUATIONS"),
            ("*/debias/*/fairness.parquet", f"{_SCHEMAS}:FAIRNESS"),
        ),
    },
    category="Counterfactual sentiment",
    headline=(
        HeadlineMetric("if", "Individual fairness I.F. (Wasserstein)", "higher", limits=(0.0, 1.0)),
        HeadlineMetric("gf", "Group fairness G.F. (Wasserstein)", "higher", limits=(0.0, 1.0)),
    ),
    headline_module="unstereo.sentiment.headline",
    order=20,
)
