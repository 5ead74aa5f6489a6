# Rules of the score stage: one job per (model, benchmark) (logic in src/unstereo/scoring; the input/option helpers
# in unstereo.scoring.rules). Models come from config `score.models`:
# {short_name: {resource: smollm2, gguf_file: ...}} or {short_name: {path: hub-id-or-dir}}.
from unstereo.scoring import rules as score_rules

SCORE = config["score"]


rule score:
    """Sentence log-likelihoods of every pair of a benchmark under one model (resumable: chunks beside the output)."""
    input:
        unpack(
            lambda wc: score_rules.inputs(
                SCORE,
                wc.model,
                results("benchmarks", wc.benchmark, "eta-inf.parquet"),
                resource_manifest,
            )
        ),
    output:
        results("scores", "{model}", "{benchmark}.parquet"),
    log:
        f"{LOGS}/score/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{BENCH}/score/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        model=score_rules.model_pattern(SCORE),
    conda:
        "../envs/score.yaml"
    threads: SCORE["threads"]
    resources:
        mem_mb=lambda wc: score_rules.resource(SCORE, wc.model, "mem_mb"),
        runtime=lambda wc: score_rules.resource(SCORE, wc.model, "runtime"),
        # One GPU when the config asks for cuda. On SLURM choose the card with the `gpu_model` resource (e.g.
        # `--set-resources score:gpu_model=h100` or a profile entry), or use `slurm_extra="--gres=gpu:1"`.
        gpu=score_rules.gpus(SCORE),
    params:
        model=lambda wc, input: score_rules.model_arg(
            SCORE, wc.model, getattr(input, "manifest", None)
        ),
        options=lambda wc: score_rules.options(SCORE, wc.model),
        cache=score_rules.cache_option(SCORE, results("score-cache.sqlite")),
    shell:
        "unstereo score {params.model:q} {input.pairs:q} -o {output:q} --name {wildcards.model:q}"
        " --threads {threads} {params.options} {params.cache} > {log} 2>&1"


if SCORE["enabled"]:
    ALL_TARGETS.extend(
        results("scores", model, f"{benchmark}.parquet")
        for model in SCORE["models"]
        for benchmark in SCORE["benchmarks"]
    )
