"""UnStereoEval's declaration in the method registry (see :mod:`unstereo.method_registry`).

One method with seven stages: corpus statistics, vocabulary, generation (USE-k), benchmarks, scoring, metrics and
the report (with the paper reproduction). Shared infrastructure (resources, the LLM layer, ``config``) is not a
method: the CLI and the Snakefile list it themselves.
"""

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

METHOD = Method(
    name="unstereoeval",
    title="UnStereoEval",
    cli={
        "corpus": "unstereo.corpus.cli:group",
        "vocabulary": "unstereo.vocabulary.cli:group",
        "benchmarks": "unstereo.benchmarks.cli:group",
        "generate": "unstereo.generate.cli:group",
        "score": "unstereo.scoring.cli:score",
        "metrics": "unstereo.metrics.cli:metrics",
        "report": "unstereo.report.cli:group",
    },
    config={
        section: f"{section}.schema.yaml"
        for section in ("corpus", "vocabulary", "benchmarks", "generate", "score", "metrics", "report")
    },
    # in pipeline order; each reads only the shared helpers of rules/common.smk and the config
    rules=(
        "rules/corpus.smk",
        "rules/vocabulary.smk",
        "rules/benchmarks.smk",
        "rules/generate.smk",
        "rules/score.smk",
        "rules/report.smk",
    ),
    tables={
        "corpus": (
            ("counts/*/unigrams.parquet", "unstereo.tables:UNIGRAMS"),
            ("counts/*/cooccurrence.parquet", "unstereo.tables:COOCCURRENCE"),
            ("merged/unigrams.parquet", "unstereo.tables:UNIGRAMS"),
            ("merged/cooccurrence.parquet", "unstereo.tables:COOCCURRENCE"),
        ),
        "generate": (("*/pairs.parquet", "unstereo.tables:PAIRS"),),
        "benchmarks": (
            ("*/pairs.parquet", "unstereo.tables:PAIRS"),
            ("*/eta-*.parquet", "unstereo.tables:PAIRS"),
        ),
        "scores": (("*/*.parquet", "unstereo.tables:SCORES"),),
        "metrics": (("metrics.parquet", "unstereo.tables:METRICS"),),
        "delta": (("*.parquet", "unstereo.tables:DELTA"),),
        "paper": (  # the paper reproduction (not curves/metrics.parquet: US against eps)
            ("metrics.parquet", "unstereo.tables:METRICS"),
            ("benchmarks/*/pairs.parquet", "unstereo.tables:PAIRS"),
        ),
    },
    category="Metrics",
    stage_categories={
        "corpus": "Corpus statistics",
        "benchmarks": "Benchmarks",
        "generate": "Generation",
        "paper": "Paper reproduction",
    },
    headline=(
        HeadlineMetric(
            "us", "Unstereo Score (%)", "lower", limits=(0.0, 100.0)
        ),  # higher = more neutral pairs
        HeadlineMetric("aufc", "AuFC (area under the fairness curve)", "lower", limits=(0.0, None)),
    ),
    headline_module="unstereo.report.headline",
    order=0,
)
