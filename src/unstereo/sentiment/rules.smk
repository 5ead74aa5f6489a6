# Rules of the counterfactual sentiment stage (docs/methods.md#counterfactual-sentiment-bias; logic in
# src/unstereo/sentiment, helpers in unstereo.sentiment.rules): per model, continuations of the filled
# templates (sample) -> I.F./G.F. (metrics) -> figures and table (report); the debiasing grid (debias ->
# debias_summary).
from unstereo.sentiment import rules as sentiment_rules

SENTIMENT = config["sentiment"]
SENTIMENT_SEED = section_seed(SENTIMENT, "sentiment")
# --settings of every command: the section as JSON with the stage's seed folded in; paths, the model argument,
# --threads and the cache stay on the command line.
SENTIMENT_SETTINGS = sentiment_rules.settings_arg(SENTIMENT, seed=SENTIMENT_SEED)
SENTIMENT_CATEGORY = METHODS["sentiment"].category


rule sentiment_sample:
    """m continuations of every filled template under one model, scored by every classifier (resumable, cached)."""
    input:
        unpack(
            lambda wc: sentiment_rules.sample_inputs(
                SENTIMENT, wc.model, resource_manifest
            )
        ),
    output:
        continuations=results("sentiment", "{model}", "continuations.parquet"),
        samples=results("sentiment", "{model}", "samples.parquet"),
        usage=results("sentiment", "{model}", "usage.json"),
    log:
        f"{LOGS}/sentiment/{{model}}/sample.log",
    benchmark:
        f"{BENCH}/sentiment/{{model}}/sample.tsv"
    wildcard_constraints:
        model=model_rules.model_pattern(SENTIMENT["models"]),
    conda:
        "env.yaml"
    threads: model_rules.threads(SENTIMENT)
    resources:
        **model_rules.job_resources(SENTIMENT, mem_mb=8000, runtime=24 * 60),
    params:
        model=lambda wc, input: model_rules.model_arg(
            SENTIMENT["models"][wc.model], input.model, f"sentiment.models.{wc.model}"
        ),
        settings=lambda wc: SENTIMENT_SETTINGS,
        templates=sentiment_rules.templates_dir(EXTERNAL),
        external_dir=EXTERNAL,
        cache=SENTIMENT["cache"] or results("llm-cache.sqlite"),
    shell:
        "unstereo sentiment sample {params.model} -o {output.continuations:q} --settings {params.settings:q}"
        " --templates-dir {params.templates:q} --external-dir {params.external_dir:q} --cache {params.cache:q}"
        " --threads {threads} > {log} 2>&1"


rule sentiment_metrics:
    """I.F. and G.F. per attribute and classifier with bootstrap intervals; demographic parity at thresholds."""
    input:
        results("sentiment", "{model}", "continuations.parquet"),
    output:
        fairness=results("sentiment", "{model}", "fairness.parquet"),
        parity=results("sentiment", "{model}", "parity.parquet"),
    log:
        f"{LOGS}/sentiment/{{model}}/fairness.log",
    wildcard_constraints:
        model=model_rules.model_pattern(SENTIMENT["models"]),
    conda:
        "env.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        settings=lambda wc: SENTIMENT_SETTINGS,
    shell:
        "unstereo sentiment metrics {input:q} -o {output.fairness:q} --parity {output.parity:q}"
        " --settings {params.settings:q} > {log} 2>&1"


rule sentiment_report:
    """Report: Figure 1 (sentiment per value), Figure 2 (demographic parity at thresholds), the fairness table."""
    input:
        continuations=results("sentiment", "{model}", "continuations.parquet"),
        fairness=results("sentiment", "{model}", "fairness.parquet"),
        parity=results("sentiment", "{model}", "parity.parquet"),
    output:
        figure1=report(
            results("sentiment", "{model}", "report", "figure1.png"),
            caption="captions/sentiment_figure1.rst",
            category=SENTIMENT_CATEGORY,
            subcategory="{model}",
        ),
        figure2=report(
            results("sentiment", "{model}", "report", "figure2.png"),
            caption="captions/sentiment_figure2.rst",
            category=SENTIMENT_CATEGORY,
            subcategory="{model}",
        ),
        table=report(
            results("sentiment", "{model}", "report", "fairness.html"),
            caption="captions/sentiment_fairness.rst",
            category=SENTIMENT_CATEGORY,
            subcategory="{model}",
        ),
    log:
        f"{LOGS}/sentiment/{{model}}/figures.log",
    wildcard_constraints:
        model=model_rules.model_pattern(SENTIMENT["models"]),
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        settings=lambda wc: SENTIMENT_SETTINGS,
        out_dir=lambda wc, output: Path(output.figure1).parent,
    shell:
        "unstereo sentiment report {input.continuations:q} --fairness {input.fairness:q} --parity {input.parity:q}"
        " --out-dir {params.out_dir:q} --settings {params.settings:q} --title {wildcards.model:q} > {log} 2>&1"


if SENTIMENT["enabled"]:
    ALL_TARGETS.extend(
        results("sentiment", model, "report", name)
        for model in SENTIMENT["models"]
        for name in ("figure1.png", "figure2.png", "fairness.html")
    )


rule sentiment_debias:
    """One run of the debiasing grid: fine-tune with (method, lambda) (none = the base model), sample, evaluate."""
    input:
        unpack(
            lambda wc: sentiment_rules.debias_inputs(
                SENTIMENT,
                wc.model,
                results("sentiment", wc.model, "continuations.parquet"),
                resource_manifest,
            )
        ),
    output:
        results("sentiment", "{model}", "debias", "{method}-{lam}", "quality.parquet"),
    log:
        f"{LOGS}/sentiment/{{model}}/debias-{{method}}-{{lam}}.log",
    benchmark:
        f"{BENCH}/sentiment/{{model}}/debias-{{method}}-{{lam}}.tsv"
    wildcard_constraints:
        model=model_rules.model_pattern(SENTIMENT["models"]),
        method="none|embedding|sentiment",
        lam="[0-9.e+-]+",
    conda:
        "env.yaml"
    threads: model_rules.threads(SENTIMENT)
    resources:
        **model_rules.job_resources(SENTIMENT, mem_mb=16000, runtime=24 * 60),
    params:
        model=lambda wc, input: model_rules.model_arg(
            SENTIMENT["models"][wc.model], input.model, f"sentiment.models.{wc.model}"
        ),
        settings=lambda wc: SENTIMENT_SETTINGS,
        templates=sentiment_rules.templates_dir(EXTERNAL),
        external_dir=EXTERNAL,
        cache=SENTIMENT["cache"] or results("llm-cache.sqlite"),
        out_dir=lambda wc, output: Path(output[0]).parent,
    shell:
        "unstereo sentiment debias {params.model} --out-dir {params.out_dir:q} --method {wildcards.method}"
        " --lam {wildcards.lam} --continuations {input.continuations:q} --settings {params.settings:q}"
        " --templates-dir {params.templates:q} --external-dir {params.external_dir:q} --cache {params.cache:q}"
        " --threads {threads} > {log} 2>&1"


rule sentiment_debias_summary:
    """Report: the debiasing grid as the paper's Table 1 and Figure 6 (I.F. against semantic similarity)."""
    input:
        lambda wc: [
            results("sentiment", wc.model, "debias", run, "quality.parquet")
            for run in sentiment_rules.debias_runs(SENTIMENT)
        ],
    output:
        table=results("sentiment", "{model}", "debias.parquet"),
        table1=report(
            results("sentiment", "{model}", "report", "table1.html"),
            caption="captions/sentiment_table1.rst",
            category=SENTIMENT_CATEGORY,
            subcategory="{model}",
        ),
        figure6=report(
            results("sentiment", "{model}", "report", "figure6.png"),
            caption="captions/sentiment_figure6.rst",
            category=SENTIMENT_CATEGORY,
            subcategory="{model}",
        ),
    log:
        f"{LOGS}/sentiment/{{model}}/debias-summary.log",
    wildcard_constraints:
        model=model_rules.model_pattern(SENTIMENT["models"]),
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    threads: 1
    resources:
        mem_mb=2000,
        runtime=30,
    params:
        settings=lambda wc: SENTIMENT_SETTINGS,
    shell:
        "unstereo sentiment debias-summary {input:q} -o {output.table:q} --table {output.table1:q}"
        " --figure {output.figure6:q} --settings {params.settings:q} > {log} 2>&1"


if SENTIMENT["enabled"] and SENTIMENT["debias"]["enabled"]:
    ALL_TARGETS.extend(
        results("sentiment", model, "report", name)
        for model in sentiment_rules.debias_models(SENTIMENT)
        for name in ("table1.html", "figure6.png")
    )
