# Rules of the biastest stage: BiasTestGPT (docs/methods.md#biastestgpt; logic in src/unstereo/biastest, rule
# helpers in unstereo.biastest.rules). Outputs under results/biastest/:
#   {spec}/generated.parquet, generations.parquet   generated pairs and every try (specs of biastest.generate.specs)
#   {spec}/pairs.parquet                            pairs of every source
#   {model}/{spec}/scores.parquet                   scores of both sentences of every pair
#   summary.parquet, comparison.parquet, sentences.parquet, page.html, summary.html, stereotype_score.png
import re

import unstereo.biastest.rules as bt

# The section with every default filled in (validated against src/unstereo/biastest/biastest.schema.yaml).
BT = config["biastest"]
BT_SPECS = bt.specs(config) if BT["enabled"] else {}
BT_GENERATED = bt.generated_specs(config) if BT["enabled"] else []
# per_spec entries, their names checked against biastest.specs
BT_PER_SPEC = bt.per_spec(config) if BT["enabled"] else {}
BT_MODELS = bt.models(config) if BT["enabled"] else {}
BT_SEED = section_seed(BT, "biastest")
# --settings of every command: the section as JSON with the stage's seed folded in (biastest score: with the model
# entry's own options, bt.score_settings; biastest pairs: with its specification's per_spec entry, bt.pairs_settings,
# so that one entry's change re-runs that pairs job only); paths, the model argument, --threads and the cache stay on
# the command line.
BT_SETTINGS = bt.settings_json(config, seed=BT_SEED)
BT_REFERENCE = [] if BT["reference_dir"] else [resource_manifest("reference")]
BT_GEN_MODEL_INPUT = model_rules.model_inputs(
    BT["generate"]["model"], resource_manifest, "biastest.generate.model"
)


wildcard_constraints:
    bt_spec="|".join(re.escape(s) for s in BT_SPECS) or "no-spec-configured",
    bt_model=model_rules.model_pattern(BT_MODELS),


rule biastest_generate:
    """Generated test-sentence pairs of one specification (paper Algorithm 1), with every try and its fate."""
    input:
        spec=lambda wc: bt.spec_inputs(BT_SPECS[wc.bt_spec]),
        reference=BT_REFERENCE,
        model=BT_GEN_MODEL_INPUT,
    output:
        pairs=results("biastest", "{bt_spec}", "generated.parquet"),
        generations=results("biastest", "{bt_spec}", "generations.parquet"),
        usage=results("biastest", "{bt_spec}", "usage.json"),
    log:
        f"{LOGS}/biastest/{{bt_spec}}.generate.log",
    benchmark:
        f"{BENCH}/biastest/{{bt_spec}}.generate.tsv"
    conda:
        "env.yaml"
    threads: model_rules.threads(BT)
    resources:
        # the generator's device (biastest.generate.device), not the scoring one
        **model_rules.job_resources(
            BT, mem_mb=8000, runtime=24 * 60, device=BT["generate"]["device"]
        ),
    params:
        spec=lambda wc: bt.spec_arg(BT_SPECS[wc.bt_spec], wc.bt_spec),
        settings=lambda wc: BT_SETTINGS,
        reference=lambda wc, input: bt.reference_option(
            config, input.reference[0] if input.reference else None
        ),
        external=f"--external-dir {EXTERNAL}",
        cache=BT["generate"]["cache"] or results("llm-cache.sqlite"),
        out_dir=lambda wc, output: Path(output.pairs).parent,
    shell:
        "unstereo biastest generate {params.spec:q} -o {params.out_dir} --settings {params.settings:q}"
        " {params.reference} {params.external} --generate-cache {params.cache:q} --threads {threads} > {log} 2>&1"


rule biastest_pairs:
    """The sentence pairs of one specification: generated, the release's, the manual-template baseline."""
    input:
        spec=lambda wc: bt.spec_inputs(BT_SPECS[wc.bt_spec]),
        reference=BT_REFERENCE,
        generated=lambda wc: (
            [results("biastest", wc.bt_spec, "generated.parquet")]
            if wc.bt_spec in BT_GENERATED
            else []
        ),
    output:
        results("biastest", "{bt_spec}", "pairs.parquet"),
    log:
        f"{LOGS}/biastest/{{bt_spec}}.pairs.log",
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=20,
    params:
        spec=lambda wc: bt.spec_arg(BT_SPECS[wc.bt_spec], wc.bt_spec),
        reference=lambda wc, input: bt.reference_option(
            config, input.reference[0] if input.reference else None
        ),
        generated=lambda wc, input: (
            f"--generated {input.generated[0]}" if input.generated else ""
        ),
        settings=lambda wc: bt.pairs_settings(config, wc.bt_spec, seed=BT_SEED),
    shell:
        "unstereo biastest pairs {params.spec:q} -o {output:q} {params.reference} {params.generated}"
        " --settings {params.settings:q} > {log} 2>&1"


rule biastest_score:
    """Scores of both sentences of every pair of every specification under one model (loaded once; resumable)."""
    input:
        pairs=expand(results("biastest", "{s}", "pairs.parquet"), s=BT_SPECS),
        model=lambda wc: model_rules.model_inputs(
            BT_MODELS[wc.bt_model],
            resource_manifest,
            bt.model_key(config, wc.bt_model),
        ),
    output:
        expand(results("biastest", "{{bt_model}}", "{s}", "scores.parquet"), s=BT_SPECS),
    log:
        f"{LOGS}/biastest/{{bt_model}}.score.log",
    benchmark:
        f"{BENCH}/biastest/{{bt_model}}.score.tsv"
    conda:
        "env.yaml"
    threads: model_rules.threads(BT)
    resources:
        # the model entry's mem_mb/runtime (entries as in score.models), else these; a GPU with device cuda
        **model_rules.job_resources(
            BT, mem_mb=8000, runtime=4 * 60, models=BT_MODELS, wildcard="bt_model"
        ),
    params:
        model=lambda wc, input: bt.model_arg(config, wc.bt_model, input.model),
        outputs=lambda wc, output: " ".join(f"-o {o}" for o in output),
        settings=lambda wc: bt.score_settings(config, wc.bt_model),
    shell:
        "unstereo biastest score {params.model} {input.pairs} {params.outputs} --name {wildcards.bt_model:q}"
        " --threads {threads} --settings {params.settings:q} > {log} 2>&1"


rule biastest_summary:
    """Stereotype Score per model, specification, source and attribute term (bootstrap), the t-test against the
    template baseline, the inspection page, the report table and figure."""
    input:
        pairs=expand(results("biastest", "{s}", "pairs.parquet"), s=BT_SPECS),
        scores=expand(
            results("biastest", "{m}", "{s}", "scores.parquet"),
            m=BT_MODELS,
            s=BT_SPECS,
        ),
    output:
        summary=results("biastest", "summary.parquet"),
        comparison=results("biastest", "comparison.parquet"),
        sentences=results("biastest", "sentences.parquet"),
        page=results("biastest", "page.html"),
        table=report(
            results("biastest", "summary.html"),
            caption="captions/biastest_table.rst",
            category=METHODS["biastest"].category,
        ),
        figure=report(
            results("biastest", "stereotype_score.png"),
            caption="captions/biastest_figure.rst",
            category=METHODS["biastest"].category,
        ),
    log:
        f"{LOGS}/biastest/summary.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        pairs=lambda wc, input: " ".join(f"--pairs {p}" for p in input.pairs),
        scores=lambda wc, input: " ".join(f"--scores {p}" for p in input.scores),
        out_dir=lambda wc, output: Path(output.summary).parent,
        settings=lambda wc: BT_SETTINGS,
    shell:
        "unstereo biastest summary {params.pairs} {params.scores} -o {params.out_dir} --page {output.page}"
        " --settings {params.settings:q} > {log} 2>&1"


if BT["enabled"]:
    ALL_TARGETS.extend(
        results("biastest", name)
        for name in (
            "summary.parquet",
            "comparison.parquet",
            "page.html",
            "summary.html",
        )
    )
