# Rules of the generate stage: LLM generation of USE-k benchmarks (logic in src/unstereo/unstereoeval/generate).
import shlex

from unstereo.unstereoeval.generate.settings import load_section

# The section with every default filled in (validated against src/unstereo/unstereoeval/generate/generate.schema.yaml).
GENERATE = load_section(config.get("generate", {}))


# The seed-word CSV: the configured file, else the vocabulary stage's output.
GENERATE_SEED_WORDS = GENERATE["seed_words"] or results("vocabulary", "seed_words.csv")
# The chat model (unstereo.models.spec) and the naturalness filter's scoring model (none when the filter is off): the
# offline resources holding them are inputs (none for an endpoint or a hub id).
GENERATE_NAT = GENERATE["naturalness"]
GENERATE_NAT_INPUT = (
    model_rules.model_inputs(
        GENERATE_NAT["model"], resource_manifest, "generate.naturalness.model"
    )
    if GENERATE_NAT["model"] is not None
    and GENERATE_NAT["min_token_logprob"] is not None
    else []
)
# The judge of sense (none when `generate.naturalness.judge` is null): its offline resource is an input too.
GENERATE_JUDGE_INPUT = (
    model_rules.model_inputs(
        GENERATE_NAT["judge"]["model"],
        resource_manifest,
        "generate.naturalness.judge.model",
    )
    if GENERATE_NAT["judge"] is not None
    else []
)


rule generate_use:
    """Generate one USE-k benchmark: full table with every row's status, filtered pair table, counts, usage."""
    input:
        seed_words=GENERATE_SEED_WORDS,
        model=model_rules.model_inputs(
            GENERATE["model"], resource_manifest, "generate.model"
        ),
        naturalness_model=GENERATE_NAT_INPUT,
        judge_model=GENERATE_JUDGE_INPUT,
    output:
        full=results("generate", "{benchmark}", "full.parquet"),
        pairs=results("generate", "{benchmark}", "pairs.parquet"),
        summary=results("generate", "{benchmark}", "summary.json"),
        usage=results("generate", "{benchmark}", "usage.json"),
    log:
        f"{LOGS}/generate/{{benchmark}}.log",
    benchmark:
        f"{BENCH}/generate/{{benchmark}}.tsv"
    wildcard_constraints:
        benchmark="USE-[0-9]+",
    # the long pole: it starts as soon as its inputs exist, before any other job that waits for both cores
    priority: rule_priority("generate_use")
    conda:
        "env.yaml"
    threads: model_rules.threads(GENERATE)
    resources:
        # the judge (Qwen2.5-Coder-1.5B in fp32: 8.1 GB peak with the generator's weights shared) needs more
        **model_rules.job_resources(
            GENERATE,
            # int8 sampling loads a GGUF straight into int8 layers (7.7-8.3 GB peak for the 1.5B with its judge,
            # docs/performance.md), no longer an int8 copy beside the fp32 weights
            mem_mb=12000 if GENERATE_NAT["judge"] is not None else 8000,
            runtime=24 * 60,
        ),
    params:
        # the section, the stage's seed folded in; paths, the cache and the model's resource folder stay flags
        settings=lambda wc: model_rules.settings_json(
            GENERATE, seed=section_seed(GENERATE, "generate"), drop=()
        ),
        cache=GENERATE["cache"] or results("llm-cache.sqlite"),
        out_dir=lambda wc, output: Path(output.full).parent,
        # the folder of the offline resources, from the resource's manifest (for a `resource` model only)
        external_dir=lambda wc, input: (
            f"--external-dir {shlex.quote(str(model_rules.external_dir_of(input.model)))}"
            if input.model
            else ""
        ),
    shell:
        # torch takes its thread count from OMP_NUM_THREADS: the threads this rule asks for
        "OMP_NUM_THREADS={threads} unstereo generate run --seed-words {input.seed_words} --benchmark {wildcards.benchmark}"
        " -o {params.out_dir} --settings {params.settings:q} {params.external_dir}"
        " --cache {params.cache:q} > {log} 2>&1"


rule generate_report:
    """The report's generation section: counts of every filter per benchmark, the kept pairs, the rejections."""
    input:
        summaries=expand(
            results("generate", "USE-{k}", "summary.json"), k=GENERATE["k"]
        ),
        full=expand(results("generate", "USE-{k}", "full.parquet"), k=GENERATE["k"]),
    output:
        html=report(
            results("generate", "generation.html"),
            caption="captions/generation.rst",
            category=METHODS["unstereoeval"].report_category("generate"),
        ),
        tables=[
            results("generate", f"generation_filters.{ext}")
            for ext in ("csv", "md", "tex", "html")
        ],
    log:
        f"{LOGS}/generate/report.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        dirs=lambda wc, input: " ".join(
            shlex.quote(str(Path(p).parent)) for p in input.summaries
        ),
        out_dir=lambda wc, output: Path(output.html).parent,
    shell:
        "unstereo report generation {params.dirs} -o {params.out_dir} > {log} 2>&1"


if GENERATE["enabled"]:
    ALL_TARGETS.append(results("generate", "generation.html"))
    ALL_TARGETS.extend(
        results("generate", f"USE-{k}", name)
        for k in GENERATE["k"]
        for name in ("pairs.parquet", "full.parquet", "summary.json")
    )
