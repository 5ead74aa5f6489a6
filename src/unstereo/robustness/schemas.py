"""Table schemas of the robustness stage (validated on write, and by :mod:`unstereo.workflow.outputs_check` in CI).

The construction pair tables are PAIRS and the per-model score tables SCORES (:mod:`unstereo.tables`); the tables
below are the stage's own, under ``results/robustness/``. The column lists of :mod:`unstereo.robustness.stats`
(``SWAP_COLUMNS``, ``RANKING_COLUMNS``, ``SUMMARY_COLUMNS``) build the last three; a column renamed there without
its schema here fails the write.
"""

from __future__ import annotations

from unstereo.tables import TableSchema, columns

#: results/robustness/scores.parquet
SCORES = TableSchema(
    "robustness_scores",
    "one row per (model, benchmark, construction, trial, eta): the bias scores of one alternate construction",
    columns("""
        model         str     model name
        benchmark     str     benchmark the construction was built from
        construction  str     construction name (original, subject_clause_back, sample_10, ...)
        trial         int     trial of a sub-sampling construction (0 for the others)
        eta           float   MaxPMI bound (inf = unconstrained)
        n             int     pairs kept
        us            float?  Unstereo Score in percent
        us_std        float?  Bernoulli standard error of us, in percent
        pd            float?  preference disparity in percent
        aufc          float?  area under the fairness curve
    """),
    unique=("model", "benchmark", "construction", "trial", "eta"),
)

#: results/robustness/rank_swaps.parquet
RANK_SWAPS = TableSchema(
    "robustness_rank_swaps",
    "one row per (benchmark, construction, eta, pair of models): how often their order differs from the original's",
    columns("""
        benchmark     str    benchmark
        construction  str    construction
        eta           float  MaxPMI bound
        metric        str    the score that orders the models (us, pd or aufc)
        model_a       str    first model (sorted)
        model_b       str    second model
        swap_rate     float  share of the construction's trials where the two models swap order
        trials        int    trials where both models have a score
    """),
    unique=("benchmark", "construction", "eta", "metric", "model_a", "model_b"),
)

#: results/robustness/rankings.parquet
RANKINGS = TableSchema(
    "robustness_rankings",
    "one row per (benchmark, construction, trial, eta): the models' order and its Kendall tau-b to the original's",
    columns("""
        benchmark     str     benchmark
        construction  str     construction
        trial         int     trial (0 for a construction that is not a sub-sample)
        eta           float   MaxPMI bound
        metric        str     the score that orders the models
        n_models      int     models ranked
        ranking       str     highest first, e.g. `b > a` (ties `a = b`)
        kendall_tau   float?  tau-b to the original's scores (NaN below 2 models)
    """),
    unique=("benchmark", "construction", "trial", "eta", "metric"),
)

#: results/robustness/summary.parquet
SUMMARY = TableSchema(
    "robustness_summary",
    "one row per (model, benchmark, construction, eta, metric): the metric's distribution over the trials",
    columns("""
        model         str    model name
        benchmark     str    benchmark
        construction  str    construction
        eta           float  MaxPMI bound
        metric        str    us, pd or aufc
        trials        int    trials with a value
        mean          float  mean over the trials
        std           float  standard deviation (ddof 1; 0 for one trial)
        lo            float  lower end of the central percentile interval (95 % by default)
        hi            float  upper end of that interval
    """),
    unique=("model", "benchmark", "construction", "eta", "metric"),
)

#: results/robustness/{benchmark}/scores/{model}.cost.parquet and results/robustness/cost.parquet
COST = TableSchema(
    "robustness_cost",
    "one row per (model, benchmark, construction): what scoring it cost, against a naive rescoring",
    columns("""
        model           str  model name
        benchmark       str  benchmark
        construction    str  construction
        pairs           int  pairs of the construction (all trials of a sub-sample)
        texts           int  sentences a naive rescoring runs (two per pair)
        forward_passes  int  sentences this run sent to the model (0 for sub-samples)
    """),
)
