"""FairPair's declaration in the method registry (see :mod:`unstereo.method_registry`)."""

from pathlib import Path

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

HERE = Path(__file__).parent  # the method's folder: its rules, config schema, conda env and report captions

METHOD = Method(
    name="fairpair",
    title="FairPair",
    cli={"fairpair": "unstereo.fairpair.cli:group"},
    cli_help={
        "fairpair": "FairPair: continuations of paired prompts x / p(x), bias B against sampling variability V, "
        "F = B^2/(V_gp V_pg)."
    },
    config={"fairpair": HERE / "fairpair.schema.yaml"},
    rules=(HERE / "rules.smk",),
    envs=(HERE / "env.yaml",),
    captions=(HERE / "captions",),
    extras=("fairpair",),
    resources=("reference",),
    tables={
        "fairpair": (
            ("prompts/prompts.parquet", "unstereo.fairpair.schemas:PROMPTS"),
            ("summary.parquet", "unstereo.fairpair.schemas:SUMMARY"),
            ("*/samples.parquet", "unstereo.fairpair.schemas:SAMPLES"),
            ("*/perturbations.parquet", "unstereo.fairpair.schemas:PERTURBATIONS"),
            ("*/per_prompt.parquet", "unstereo.fairpair.schemas:PER_PROMPT"),
            ("*/curves.parquet", "unstereo.fairpair.schemas:CURVES"),
            ("*/ngrams.parquet", "unstereo.fairpair.schemas:NGRAMS"),
        ),
    },
    category="FairPair",
    headline=(HeadlineMetric("f", "FairPair F (bias / sampling variability)", "higher", limits=(0.0, None)),),
    headline_module="unstereo.fairpair.headline",
    order=10,
)
