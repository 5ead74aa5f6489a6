# Rules of the robustness stage ("Tail wagging", docs/methods.md#dataset-construction-robustness): each
# benchmark rebuilt by named constructions, scored by every model through the score cache, then scores, rank
# statistics and figures (logic in src/unstereo/robustness; helpers in unstereo.robustness.rules). Models
# are names of `score.models`, scored with the score stage's options.
import shlex

from unstereo.unstereoeval.benchmarks.rules import delta_choice as benchmark_delta
import unstereo.robustness.rules as robustness_workflow
import unstereo.unstereoeval.score.rules as score_rules

ROBUSTNESS = config["robustness"]
# Read from the config, not from other rules files' globals, so the include order does not matter.
ROBUSTNESS_SCORE = config["score"]
ROBUSTNESS_BENCHMARKS = config["benchmarks"]
ROBUSTNESS_MODELS = (
    robustness_workflow.models(ROBUSTNESS, ROBUSTNESS_SCORE)
    if ROBUSTNESS["enabled"]
    else []
)
ROBUSTNESS_CONSTRUCTIONS = robustness_workflow.constructions(ROBUSTNESS)
ROBUSTNESS_SEED = section_seed(ROBUSTNESS, "robustness")
ROBUSTNESS_REPORT = [
    "constructions.png",
    "subsampling.png",
    "summary.html",
    "rank_swaps.html",
    "cost.html",
]


rule robustness_construct:
    """The constructions of a benchmark's pair table, MaxPMI recomputed from the benchmark's delta table."""
    input:
        pairs=results("benchmarks", "{benchmark}", "eta-inf.parquet"),
        delta=lambda wc: delta_path(
            benchmark_delta(
                ROBUSTNESS_BENCHMARKS,
                ROBUSTNESS_BENCHMARKS.get("sources", {})[wc.benchmark],
            )
        ),
        reference=(
            [resource_manifest("reference")]
            if robustness_workflow.uses_release(ROBUSTNESS_CONSTRUCTIONS)
            else []
        ),
    output:
        robustness_workflow.pair_paths(RESULTS, "{benchmark}", ROBUSTNESS_CONSTRUCTIONS),
    log:
        f"{LOGS}/robustness/{{benchmark}}/construct.log",
    conda:
        "../unstereoeval/score/env.yaml"
    resources:
        # the delta table (a few hundred MB for the released PILE one) read into memory
        mem_mb=4000,
        runtime=60,
    params:
        settings=lambda wc: model_rules.settings_json(ROBUSTNESS, drop=()),
        out_dir=lambda wc, output: Path(output[0]).parent.parent,
        release=lambda wc, input: robustness_workflow.release_option(input.reference),
    shell:
        "unstereo robustness construct {input.pairs:q} -o {params.out_dir:q} --settings {params.settings:q}"
        " --delta {input.delta:q} {params.release} > {log} 2>&1"


rule robustness_score:
    """Every construction of a benchmark under one model, through the score cache (unchanged sentences are free)."""
    input:
        pairs=lambda wc: robustness_workflow.pair_paths(
            RESULTS, wc.benchmark, ROBUSTNESS_CONSTRUCTIONS
        ),
        model=lambda wc: model_rules.model_inputs(
            ROBUSTNESS_SCORE["models"][wc.model],
            resource_manifest,
            f"score.models.{wc.model}",
        ),
    output:
        scores=results("robustness", "{benchmark}", "scores", "{model}.parquet"),
        cost=results("robustness", "{benchmark}", "scores", "{model}.cost.parquet"),
    log:
        f"{LOGS}/robustness/{{benchmark}}/score-{{model}}.log",
    benchmark:
        f"{BENCH}/robustness/{{benchmark}}/score-{{model}}.tsv"
    wildcard_constraints:
        model=model_rules.model_pattern(ROBUSTNESS_SCORE["models"]),
    conda:
        "../unstereoeval/score/env.yaml"
    threads: model_rules.threads(ROBUSTNESS)
    resources:
        # the score stage's memory, time and device (the models are scored with its options)
        **model_rules.job_resources(
            ROBUSTNESS_SCORE,
            mem_mb=6000,
            runtime=120,
            models=ROBUSTNESS_SCORE["models"],
        ),
    params:
        model=lambda wc, input: score_rules.model_arg(
            ROBUSTNESS_SCORE, wc.model, input.model
        ),
        settings=lambda wc: score_rules.settings(ROBUSTNESS_SCORE, wc.model),
        cache=score_rules.cache_option(ROBUSTNESS_SCORE, results("score-cache.sqlite")),
    shell:
        "unstereo robustness score {params.model} {input.pairs:q} -o {output.scores:q} --cost {output.cost:q}"
        " --name {wildcards.model:q} --threads {threads} --settings {params.settings:q} {params.cache} > {log} 2>&1"


rule robustness_metrics:
    """US, PD, AuFC per (model, benchmark, construction, trial, eta); rankings, Kendall tau and rank swaps."""
    input:
        scores=expand(
            results("robustness", "{benchmark}", "scores", "{model}.parquet"),
            benchmark=ROBUSTNESS["benchmarks"],
            model=ROBUSTNESS_MODELS,
        ),
        cost=expand(
            results("robustness", "{benchmark}", "scores", "{model}.cost.parquet"),
            benchmark=ROBUSTNESS["benchmarks"],
            model=ROBUSTNESS_MODELS,
        ),
        pairs=[
            p
            for b in ROBUSTNESS["benchmarks"]
            for p in robustness_workflow.pair_paths(
                RESULTS, b, ROBUSTNESS_CONSTRUCTIONS
            )
        ],
    output:
        scores=results("robustness", "scores.parquet"),
        rank_swaps=results("robustness", "rank_swaps.parquet"),
        rankings=results("robustness", "rankings.parquet"),
        summary=results("robustness", "summary.parquet"),
        cost=results("robustness", "cost.parquet"),
    log:
        f"{LOGS}/robustness/metrics.log",
    conda:
        "../unstereoeval/score/env.yaml"
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        scores=lambda wc, input: " ".join(
            f"--scores {shlex.quote(p)}" for p in input.scores
        ),
        pairs=lambda wc, input: " ".join(
            f"--pairs {shlex.quote(p)}" for p in input.pairs
        ),
        cost=lambda wc, input: " ".join(f"--cost {shlex.quote(p)}" for p in input.cost),
        settings=lambda wc: model_rules.settings_json(
            ROBUSTNESS, seed=ROBUSTNESS_SEED, drop=()
        ),
        out_dir=lambda wc, output: Path(output.scores).parent,
    shell:
        "unstereo robustness metrics {params.scores} {params.pairs} {params.cost} -o {params.out_dir:q}"
        " --settings {params.settings:q} > {log} 2>&1"


rule robustness_report:
    """Figures like the paper's Figures 3 and 4 and the tables of the report's Robustness section."""
    input:
        scores=results("robustness", "scores.parquet"),
        rank_swaps=results("robustness", "rank_swaps.parquet"),
        summary=results("robustness", "summary.parquet"),
        cost=results("robustness", "cost.parquet"),
    output:
        [
            report(
                results("robustness", "report", name),
                caption=f"captions/robustness_{name.split('.')[0]}.rst",
                category=METHODS["robustness"].category,
            )
            for name in ROBUSTNESS_REPORT
        ],
    log:
        f"{LOGS}/robustness/report.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "../unstereoeval/report/env.yaml"
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        settings=lambda wc: model_rules.settings_json(ROBUSTNESS, drop=()),
        in_dir=lambda wc, input: Path(input.scores).parent,
        out_dir=lambda wc, output: Path(output[0]).parent,
    shell:
        "unstereo robustness report {params.in_dir:q} -o {params.out_dir:q} --settings {params.settings:q}"
        " > {log} 2>&1"


# Targets only when the stage has models and benchmarks (as the metrics stage).
if ROBUSTNESS["enabled"] and ROBUSTNESS_MODELS and ROBUSTNESS["benchmarks"]:
    ALL_TARGETS.extend(
        results("robustness", "report", name) for name in ROBUSTNESS_REPORT
    )
