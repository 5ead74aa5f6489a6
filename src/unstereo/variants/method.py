"""The model variants' declaration in the method registry (see :mod:`unstereo.method_registry`): a stage that
derives models for the methods to measure, with no headline metric of its own."""

from pathlib import Path

from unstereo.method_registry import Method

HERE = Path(__file__).parent  # the stage's folder: its rules, config schema and report captions

METHOD = Method(
    name="variants",
    title="Model variants",
    cli={"variants": "unstereo.variants.cli:group"},
    cli_help={
        "variants": "Model variants: a base model fine-tuned by an intervention (CDA, regularisation, control)."
    },
    config={"variants": HERE / "variants.schema.yaml"},
    rules=(HERE / "rules.smk",),
    captions=(HERE / "captions",),
    extras=("sentiment",),
    tables={"variants": (("perplexity.parquet", "unstereo.variants.schemas:PERPLEXITY"),)},
    category="Model variants",
    order=5,
)
