"""FairPair's declaration in the method registry (see :mod:`unstereo.method_registry`)."""

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

METHOD = Method(
    name="fairpair",
    title="FairPair",
    cli={"fairpair": "unstereo.fairpair.cli:group"},
    config={"fairpair": "fairpair.schema.yaml"},
    rules=("rules/fairpair.smk",),
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
