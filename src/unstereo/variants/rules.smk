# Rules of the model variants (docs/methods.md#model-variants; logic in src/unstereo/variants, helpers in
# unstereo.variants.rules): per variant, its base fine-tuned by its intervention (train: the folder
# results/variants/{variant}/, variant.json last), then every variant's perplexity against its base's (perplexity).
# A method's rule that runs a variant ({variant: NAME} in its models map) waits for its variant.json through
# model_rules.model_inputs.
from unstereo.variants import rules as variants_rules

VARIANTS = config["variants"]
VARIANTS_SEED = section_seed(VARIANTS, "variants")


rule variants_train:
    """One variant: its base fine-tuned by its intervention at its strength (resumable), written once."""
    input:
        unpack(
            lambda wc: variants_rules.train_inputs(
                VARIANTS, wc.variant, resource_manifest
            )
        ),
    output:
        results("variants", "{variant}", "variant.json"),
    log:
        f"{LOGS}/variants/{{variant}}/train.log",
    benchmark:
        f"{BENCH}/variants/{{variant}}/train.tsv"
    wildcard_constraints:
        variant=model_rules.model_pattern(VARIANTS["models"]),
    conda:
        "../sentiment/env.yaml"
    threads: model_rules.threads(VARIANTS)
    resources:
        **model_rules.job_resources(VARIANTS, mem_mb=8000, runtime=24 * 60),
    params:
        settings=lambda wc: variants_rules.settings_arg(
            VARIANTS, seed=VARIANTS_SEED, name=wc.variant
        ),
        external_dir=EXTERNAL,
        out_dir=lambda wc, output: Path(output[0]).parent,
    shell:
        "unstereo variants train {wildcards.variant:q} --out-dir {params.out_dir:q} --settings {params.settings:q}"
        " --external-dir {params.external_dir:q} --threads {threads} > {log} 2>&1"


rule variants_perplexity:
    """Every variant's perplexity on the held-out sentences against its base's (the fine-tunes' side effect)."""
    input:
        unpack(
            lambda wc: variants_rules.perplexity_inputs(
                VARIANTS, resource_manifest.variant, resource_manifest
            )
        ),
    output:
        report(
            results("variants", "perplexity.parquet"),
            caption="captions/variants_perplexity.rst",
            category=METHODS["variants"].category,
        ),
    log:
        f"{LOGS}/variants/perplexity.log",
    benchmark:
        f"{BENCH}/variants/perplexity.tsv"
    conda:
        "../sentiment/env.yaml"
    threads: model_rules.threads(VARIANTS)
    resources:
        **model_rules.job_resources(VARIANTS, mem_mb=8000, runtime=6 * 60),
    params:
        settings=lambda wc: variants_rules.settings_arg(VARIANTS, seed=VARIANTS_SEED),
        external_dir=EXTERNAL,
        folders=lambda wc, input: variants_rules.folders_arg(input.variants),
    shell:
        "unstereo variants perplexity {params.folders} -o {output:q} --settings {params.settings:q}"
        " --external-dir {params.external_dir:q} --threads {threads} > {log} 2>&1"


if VARIANTS["enabled"] and VARIANTS["models"]:
    ALL_TARGETS.append(results("variants", "perplexity.parquet"))
