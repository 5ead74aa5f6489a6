"""UnStereoEval's declaration in the method registry (see :mod:`unstereo.method_registry`).

One method with seven stages: corpus statistics, vocabulary, generation (USE-k), benchmarks, scoring, metrics and
the report (with the paper reproduction). Shared infrastructure (resources, the LLM layer, ``config``) is not a
method: the CLI and the Snakefile list it themselves.
"""

from pathlib import Path

from unstereo.headline_metric import HeadlineMetric
from unstereo.method_registry import Method

# Each stage is a folder of this package holding its rules.smk, <section>.schema.yaml, env.yaml and captions/;
# metrics has a config section but no rules of its own (report's rules.smk runs it).
HERE = Path(__file__).parent
STAGES = {
    s: HERE / s for s in ("corpus", "vocabulary", "benchmarks", "generate", "score", "metrics", "report")
}
_WITH_RULES = ("corpus", "vocabulary", "benchmarks", "generate", "score", "report")

METHOD = Method(
    name="unstereoeval",
    title="UnStereoEval",
    cli={
        "corpus": "unstereo.unstereoeval.corpus.cli:group",
        "vocabulary": "unstereo.unstereoeval.vocabulary.cli:group",
        "benchmarks": "unstereo.unstereoeval.benchmarks.cli:group",
        "generate": "unstereo.unstereoeval.generate.cli:group",
        "score": "unstereo.unstereoeval.score.cli:score",
        "metrics": "unstereo.unstereoeval.metrics.cli:metrics",
        "report": "unstereo.unstereoeval.report.cli:group",
    },
    # each subcommand's one-line help (unstereo --help lists it from here)
    cli_help={
        "corpus": "Word statistics of a corpus: windowed co-occurrence counts, PMI/delta tables, appendix A.",
        "vocabulary": "English vocabulary and seed words from a delta table (paper section 2.3, appendices B-C).",
        "benchmarks": "Benchmarks as pair tables: Winobias, Winogender, released USE, user templates; MaxPMI "
        "and eta filtering.",
        "generate": "LLM generation of USE-k templates: generation, revision, pairing, semantic filter.",
        "score": "Score every pair of PAIRS (a pair table) under MODEL and write a SCORES table.",
        "metrics": "Compute the UnStereoEval metrics of every model and benchmark in SCORES (SCORES parquet files).",
        "report": "Tables, figures and the reproduction check of the paper.",
    },
    config={section: folder / f"{section}.schema.yaml" for section, folder in STAGES.items()},
    # one rules file per stage, in pipeline order; each reads only the shared helpers of rules/common.smk and the config
    rules=tuple(STAGES[stage] / "rules.smk" for stage in _WITH_RULES),
    envs=tuple(STAGES[stage] / "env.yaml" for stage in _WITH_RULES),
    captions=tuple(STAGES[stage] / "captions" for stage in ("corpus", "benchmarks", "generate", "report")),
    extras=("corpus", "vocabulary", "benchmarks", "generate", "score", "report"),
    resources=("reference", "lid176", "wordnet"),
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
    headline_module="unstereo.unstereoeval.report.headline",
    order=0,
)
