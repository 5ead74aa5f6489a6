# Rules of the fairpair stage (FairPair, docs/methods.md#fairpair; logic in src/unstereo/fairpair, option
# helpers in unstereo.fairpair.rules): prompts x / p(x) -> n continuations of each per model -> B, V, F per
# prompt -> summary -> Table 3 and Figures 3-6 in the report. Models come from config `fairpair.models` (model
# specs). Every command gets the section as --settings JSON (fairpair_rules.settings); paths, the model argument,
# --threads and the cache stay on the command line. The JSON is a function's value: Snakemake reads a plain string
# param as a wildcard pattern, and the section's prompt template holds {name}, {descriptor}, {occupation}.
from unstereo.fairpair import rules as fairpair_rules

FAIRPAIR = config["fairpair"]
fairpair_rules.check(FAIRPAIR)
FAIRPAIR_FIGURES = ("samples", "folds", "distributions", "ngrams")


rule fairpair_prompts:
    """The prompts x with p(x) (Common Sents or a user file) and the rule-based perturbation p."""
    input:
        unpack(lambda wc: fairpair_rules.prompt_inputs(FAIRPAIR, resource_manifest)),
    output:
        prompts=results("fairpair", "prompts", "prompts.parquet"),
        perturbation=results("fairpair", "prompts", "perturbation.json"),
    log:
        f"{LOGS}/fairpair/prompts.log",
    conda:
        "env.yaml"
    resources:
        mem_mb=1000,
        runtime=10,
    params:
        out_dir=lambda wc, output: Path(output.prompts).parent,
        source=lambda wc, input: fairpair_rules.prompt_file_option(input),
        settings=lambda wc: fairpair_rules.settings(FAIRPAIR),
    shell:
        "unstereo fairpair prompts -o {params.out_dir:q} {params.source} --settings {params.settings:q}"
        " > {log} 2>&1"


rule fairpair_sample:
    """n continuations of x and of p(x) per prompt with one model, p applied to those of x (resumable, cached)."""
    input:
        unpack(
            lambda wc: fairpair_rules.sample_inputs(
                FAIRPAIR, wc.model, resource_manifest
            )
        ),
        prompts=rules.fairpair_prompts.output.prompts,
        perturbation=rules.fairpair_prompts.output.perturbation,
    output:
        samples=results("fairpair", "{model}", "samples.parquet"),
        perturbations=results("fairpair", "{model}", "perturbations.parquet"),
    log:
        f"{LOGS}/fairpair/{{model}}/sample.log",
    benchmark:
        f"{BENCH}/fairpair/{{model}}/sample.tsv"
    wildcard_constraints:
        model=model_rules.model_pattern(FAIRPAIR["models"]),
    conda:
        "env.yaml"
    threads: model_rules.threads(FAIRPAIR)
    resources:
        **model_rules.job_resources(FAIRPAIR, mem_mb=8000, runtime=24 * 60),
    params:
        model=lambda wc, input: model_rules.model_arg(
            FAIRPAIR["models"][wc.model], input.model, f"fairpair.models.{wc.model}"
        ),
        llm_perturb=lambda wc, input: fairpair_rules.llm_perturb_option(FAIRPAIR, input),
        settings=lambda wc: fairpair_rules.settings(
            FAIRPAIR, seed=section_seed(FAIRPAIR, "fairpair")
        ),
        cache=FAIRPAIR["cache"] or results("llm-cache.sqlite"),
        prompts_dir=lambda wc, input: Path(input.prompts).parent,
        out_dir=lambda wc, output: Path(output.samples).parent,
    shell:
        "unstereo fairpair sample {params.model} {params.prompts_dir:q} -o {params.out_dir:q}"
        " --settings {params.settings:q} {params.llm_perturb} --cache {params.cache:q} --threads {threads}"
        " > {log} 2>&1"


rule fairpair_metrics:
    """B, V_gp, V_pg, F per prompt (Jaccard, sentiment; k = n and the configured folds), curves and n-grams."""
    input:
        samples=rules.fairpair_sample.output.samples,
    output:
        per_prompt=results("fairpair", "{model}", "per_prompt.parquet"),
        curves=results("fairpair", "{model}", "curves.parquet"),
        ngrams=results("fairpair", "{model}", "ngrams.parquet"),
    log:
        f"{LOGS}/fairpair/{{model}}/metrics.log",
    wildcard_constraints:
        model=model_rules.model_pattern(FAIRPAIR["models"]),
    conda:
        "env.yaml"
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        out_dir=lambda wc, output: Path(output.per_prompt).parent,
        settings=lambda wc: fairpair_rules.settings(FAIRPAIR),
    shell:
        "unstereo fairpair metrics {input.samples:q} -o {params.out_dir:q} --model {wildcards.model:q}"
        " --settings {params.settings:q} > {log} 2>&1"


rule fairpair_summary:
    """Means over prompts per (model, phi, k), bootstrap interval of mean F, paired t-test of B against V."""
    input:
        expand(
            results("fairpair", "{model}", "per_prompt.parquet"),
            model=FAIRPAIR["models"],
        ),
    output:
        results("fairpair", "summary.parquet"),
    log:
        f"{LOGS}/fairpair/summary.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        # the bootstrap seed is the stage's derived one (not the section's sampling seed)
        settings=lambda wc: fairpair_rules.settings(
            FAIRPAIR, seed=stage_seed("fairpair")
        ),
    shell:
        "unstereo fairpair summary {input:q} -o {output:q} --settings {params.settings:q} > {log} 2>&1"


rule fairpair_report:
    """Table 3 and Figures 3-6 of the FairPair paper for the configured models."""
    input:
        summary=rules.fairpair_summary.output[0],
        per_prompt=expand(
            results("fairpair", "{model}", "per_prompt.parquet"),
            model=FAIRPAIR["models"],
        ),
        curves=expand(
            results("fairpair", "{model}", "curves.parquet"), model=FAIRPAIR["models"]
        ),
        ngrams=expand(
            results("fairpair", "{model}", "ngrams.parquet"), model=FAIRPAIR["models"]
        ),
    output:
        table=report(
            results("report", "fairpair", "fairpair_table3.html"),
            caption="captions/fairpair_table3.rst",
            category=METHODS["fairpair"].category,
            subcategory="Tables",
        ),
        f_table=report(
            results("report", "fairpair", "fairpair_f.html"),
            caption="captions/fairpair_f.rst",
            category=METHODS["fairpair"].category,
            subcategory="Tables",
        ),
        others=[
            results("report", "fairpair", f"fairpair_{name}.{fmt}")
            for name in ("table3", "f")
            for fmt in ("csv", "md", "tex")
        ],
        figures=[
            report(
                results("report", "fairpair", f"fairpair_{name}.png"),
                caption=f"captions/fairpair_{name}.rst",
                category=METHODS["fairpair"].category,
                subcategory="Figures",
            )
            for name in FAIRPAIR_FIGURES
        ],
    log:
        f"{LOGS}/fairpair/report.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        out_dir=lambda wc, output: Path(output.table).parent,
        per_prompt=lambda wc, input: " ".join(
            f"--per-prompt {p}" for p in input.per_prompt
        ),
        curves=lambda wc, input: " ".join(f"--curves {p}" for p in input.curves),
        ngrams=lambda wc, input: " ".join(f"--ngrams {p}" for p in input.ngrams),
        settings=lambda wc: fairpair_rules.settings(FAIRPAIR),
    shell:
        "unstereo fairpair report {input.summary:q} {params.per_prompt} {params.curves} {params.ngrams}"
        " -o {params.out_dir:q} --settings {params.settings:q} > {log} 2>&1"


if FAIRPAIR["enabled"] and FAIRPAIR["models"]:
    ALL_TARGETS.append(results("fairpair", "summary.parquet"))
    if config["report"]["enabled"]:
        ALL_TARGETS.extend(rules.fairpair_report.output)
