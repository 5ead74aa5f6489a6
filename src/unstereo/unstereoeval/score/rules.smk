# Rules of the score stage: one job per (model, benchmark) (logic in src/unstereo/scoring; the input/option helpers
# in unstereo.unstereoeval.score.rules). Models come from config `score.models`:
# {short_name: {resource: smollm2, gguf_file: ...}} or {short_name: {path: hub-id-or-dir}}.
import unstereo.unstereoeval.score.rules as score_rules

SCORE = config["score"]


rule score:
    """Sentence log-likelihoods of every pair of a benchmark under one model (resumable: chunks beside the output)."""
    input:
        pairs=results("benchmarks", "{benchmark}", "eta-inf.parquet"),
        model=lambda wc: model_rules.model_inputs(
            SCORE["models"][wc.model], resource_manifest, f"score.models.{wc.model}"
        ),
    output:
        results("scores", "{model}", "{benchmark}.parquet"),
    log:
        f"{LOGS}/score/{{model}}/{{benchmark}}.log",
    benchmark:
        f"{BENCH}/score/{{model}}/{{benchmark}}.tsv"
    wildcard_constraints:
        model=model_rules.model_pattern(SCORE["models"]),
    conda:
        "env.yaml"
    threads: model_rules.threads(SCORE)
    resources:
        # mem_mb/runtime: the model entry's, else the section's; one GPU when `device` is cuda. On SLURM choose the
        # card with the `gpu_model` resource (`--set-resources score:gpu_model=h100` or a profile entry).
        **model_rules.job_resources(
            SCORE, mem_mb=6000, runtime=120, models=SCORE["models"]
        ),
    params:
        model=lambda wc, input: score_rules.model_arg(SCORE, wc.model, input.model),
        settings=lambda wc: score_rules.settings(SCORE, wc.model),
        cache=score_rules.cache_option(SCORE, results("score-cache.sqlite")),
    shell:
        "unstereo score {params.model} {input.pairs:q} -o {output:q} --name {wildcards.model:q}"
        " --threads {threads} --settings {params.settings:q} {params.cache} > {log} 2>&1"


if SCORE["enabled"]:
    ALL_TARGETS.extend(
        results("scores", model, f"{benchmark}.parquet")
        for model in SCORE["models"]
        for benchmark in SCORE["benchmarks"]
    )
