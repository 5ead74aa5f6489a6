# Rules of the metrics and report stages (logic in src/unstereo/unstereoeval/metrics and src/unstereo/unstereoeval/report).
#
# metrics: results/metrics/metrics.parquet from this workflow's scores (results/scores/{model}/{benchmark}.parquet)
#          and pair tables (results/benchmarks/{benchmark}/pairs.parquet).
# report:  results/report/ tables and figures of those metrics; with report.paper, the paper reproduction under
#          results/paper/ from the released scores of the 28 models and the released benchmarks (reference
#          resource), with its own pair tables (results/paper/benchmarks/), so it never mixes with this config's
#          benchmarks stage.

from unstereo.unstereoeval.benchmarks.rules import source_paths as benchmark_paths
from unstereo.unstereoeval.report.rules import (
    PAPER_BENCHMARKS,
    PAPER_BENCHMARKS_CONFIG,
    PAPER_TABLES,
    TABLE_FORMATS,
    generic_table_keys,
    metrics_benchmarks,
    metrics_models,
    paper_metrics_settings,
    table_descriptions,
)
from unstereo.package_data import repo_path

MCFG = config["metrics"]
RCFG = config["report"]
METRICS_MODELS = metrics_models(config)
METRICS_BENCHMARKS = metrics_benchmarks(config)
GENERIC_TABLES = generic_table_keys(config)
REGISTRY = repo_path(RCFG["registry"], workflow.basedir)
PUBLISHED = repo_path(RCFG["published"], workflow.basedir)
KNOWN = repo_path(RCFG["known_differences"], workflow.basedir)
# `metrics`, `benchmarks build/figure` and `report compare` get their section as --settings JSON (the paper
# reproduction: its own sections, unstereo.unstereoeval.report.rules); beside it only paths.


rule metrics:
    """The registered metrics (US, std, AuFC, PD, male_rel_ratio, ...) per (model, benchmark, eta) of this
    workflow's scores."""
    input:
        scores=expand(
            results("scores", "{model}", "{benchmark}.parquet"),
            model=METRICS_MODELS,
            benchmark=METRICS_BENCHMARKS,
        ),
        pairs=expand(
            results("benchmarks", "{benchmark}", "pairs.parquet"),
            benchmark=METRICS_BENCHMARKS,
        ),
    output:
        metrics=results("metrics", "metrics.parquet"),
        curves=results("metrics", "curves.parquet"),
    log:
        f"{LOGS}/metrics/metrics.log",
    benchmark:
        f"{LOGS}/metrics/metrics.benchmark.tsv"
    conda:
        "env.yaml"
    resources:
        mem_mb=4000,
        runtime=20,
    params:
        pairs=lambda wc, input: " ".join(f"--pairs {p}" for p in input.pairs),
        registry=REGISTRY,
        settings=lambda wc: model_rules.settings_json(MCFG, drop=()),
    shell:
        "unstereo metrics {input.scores} {params.pairs} -o {output.metrics} --curves {output.curves} "
        "--registry {params.registry} --settings {params.settings:q} > {log} 2>&1"


rule report_tables:
    """A table per registered metric (US, AuFC, PD, ...) and eta and a gap table of results/metrics (CSV, Markdown,
    LaTeX, HTML)."""
    input:
        metrics=results("metrics", "metrics.parquet"),
        registry=REGISTRY,
    output:
        [
            report(
                results("report", "tables", f"{key}.html"),
                caption="captions/table.rst",
                category=METHODS["unstereoeval"].category,
                subcategory="Tables",
            )
            for key in GENERIC_TABLES
        ],
        [
            results("report", "tables", f"{key}.{fmt}")
            for key in GENERIC_TABLES
            for fmt in TABLE_FORMATS
            if fmt != "html"
        ],
    log:
        f"{LOGS}/report/tables.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        out_dir=lambda wc, output: Path(output[0]).parent,
        # read by the caption captions/table.rst: the registered metrics' tables
        tables=table_descriptions(),
    shell:
        "unstereo report tables {input.metrics} --generic --registry {input.registry} -o {params.out_dir} > {log} 2>&1"


rule report_figures:
    """Fairness curves (US vs eps) of results/metrics at eta = inf."""
    input:
        curves=results("metrics", "curves.parquet"),
        registry=REGISTRY,
    output:
        png=report(
            results("report", "figures", "fairness_curves.png"),
            caption="captions/fairness_curves.rst",
            category=METHODS["unstereoeval"].category,
            subcategory="Figures",
        ),
        pdf=results("report", "figures", "fairness_curves.pdf"),
        csv=results("report", "figures", "fairness_curves.csv"),
    log:
        f"{LOGS}/report/figures.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        stem=lambda wc, output: Path(output.png).with_suffix(""),
    shell:
        "unstereo report figures {input.curves} --registry {input.registry} -o {params.stem} > {log} 2>&1"


# ------------------------------------------------------------------------------------------ paper reproduction


rule paper_benchmark:
    """One of the paper's benchmarks from the released files: pair table, then MaxPMI from the released delta."""
    input:
        manifest=resource_manifest("reference"),
        delta=delta_path("released"),
    output:
        templates=results("paper", "benchmarks", "{benchmark}", "templates.parquet"),
        pairs=results("paper", "benchmarks", "{benchmark}", "pairs.parquet"),
    log:
        f"{LOGS}/paper/benchmark_{{benchmark}}.log",
    wildcard_constraints:
        benchmark="|".join(PAPER_BENCHMARKS),
    conda:
        "../benchmarks/env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        paths=lambda wc, input: benchmark_paths(
            PAPER_BENCHMARKS_CONFIG, wc.benchmark, input.manifest
        ),
        settings=lambda wc: model_rules.settings_json(PAPER_BENCHMARKS_CONFIG, drop=()),
    shell:
        "(unstereo benchmarks build {params.paths} --name {wildcards.benchmark} -o {output.templates} "
        "--settings {params.settings:q} && "
        "unstereo benchmarks maxpmi {output.templates} --delta {input.delta} -o {output.pairs}) > {log} 2>&1"


rule paper_card:
    """Table 7 properties of one of the paper's benchmarks (the card, and its JSON for the reproduction check)."""
    input:
        pairs=results("paper", "benchmarks", "{benchmark}", "pairs.parquet"),
        delta=delta_path("released"),
    output:
        card=results("paper", "benchmarks", "{benchmark}", "card.md"),
        json=results("paper", "benchmarks", "{benchmark}", "properties.json"),
    log:
        f"{LOGS}/paper/card_{{benchmark}}.log",
    wildcard_constraints:
        benchmark="|".join(PAPER_BENCHMARKS),
    conda:
        "../benchmarks/env.yaml"
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "unstereo benchmarks card {input.pairs} --delta {input.delta} --name {wildcards.benchmark} "
        "-o {output.card} --json {output.json} > {log} 2>&1"


rule paper_ingest:
    """The released per-model scores of one benchmark (28 models) as one SCORES table."""
    input:
        manifest=resource_manifest("reference"),
        registry=REGISTRY,
    output:
        results("paper", "scores", "{benchmark}.parquet"),
    log:
        f"{LOGS}/paper/ingest_{{benchmark}}.log",
    wildcard_constraints:
        benchmark="|".join(PAPER_BENCHMARKS),
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        released=lambda wc, input: Path(input.manifest).parent
        / "unstereo-eval"
        / "results",
    shell:
        "unstereo report ingest {params.released} --benchmark {wildcards.benchmark} "
        "--registry {input.registry} -o {output} > {log} 2>&1"


rule paper_metrics:
    """Metrics of the released scores: `metrics` with the reference switches on, `metrics_clean` with them off."""
    input:
        scores=expand(
            results("paper", "scores", "{benchmark}.parquet"),
            benchmark=PAPER_BENCHMARKS,
        ),
        pairs=expand(
            results("paper", "benchmarks", "{benchmark}", "pairs.parquet"),
            benchmark=PAPER_BENCHMARKS,
        ),
        registry=REGISTRY,
    output:
        metrics=results("paper", "{variant}.parquet"),
        curves=results("paper", "curves", "{variant}.parquet"),
    log:
        f"{LOGS}/paper/{{variant}}.log",
    benchmark:
        f"{LOGS}/paper/{{variant}}.benchmark.tsv"
    wildcard_constraints:
        variant="metrics|metrics_clean",
    conda:
        "env.yaml"
    resources:
        mem_mb=4000,
        runtime=20,
    params:
        pairs=lambda wc, input: " ".join(f"--pairs {p}" for p in input.pairs),
        settings=lambda wc: paper_metrics_settings(wc.variant),
    shell:
        "unstereo metrics {input.scores} {params.pairs} -o {output.metrics} --curves {output.curves} "
        "--registry {input.registry} --settings {params.settings:q} > {log} 2>&1"


rule paper_tables:
    """The paper's Tables 1-3 and 8-22 from the released scores (CSV, Markdown, LaTeX, HTML)."""
    input:
        metrics=results("paper", "metrics.parquet"),
        registry=REGISTRY,
    output:
        [
            report(
                results("paper", "tables", f"table{num:02d}.html"),
                caption="captions/paper_table.rst",
                category=METHODS["unstereoeval"].report_category("paper"),
                subcategory="Tables",
            )
            for num in PAPER_TABLES
        ],
        [
            results("paper", "tables", f"table{num:02d}.{fmt}")
            for num in PAPER_TABLES
            for fmt in TABLE_FORMATS
            if fmt != "html"
        ],
    log:
        f"{LOGS}/paper/tables.log",
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        out_dir=lambda wc, output: Path(output[0]).parent,
    shell:
        "unstereo report tables {input.metrics} --paper --registry {input.registry} -o {params.out_dir} > {log} 2>&1"


rule paper_figure6:
    """Figure 6: fairness curves of the 28 models on the five benchmarks (unconstrained; deduplicated dashed)."""
    input:
        curves=results("paper", "curves", "metrics.parquet"),
        registry=REGISTRY,
    output:
        png=report(
            results("paper", "figures", "figure6.png"),
            caption="captions/figure6.rst",
            category=METHODS["unstereoeval"].report_category("paper"),
            subcategory="Figures",
        ),
        pdf=results("paper", "figures", "figure6.pdf"),
        csv=results("paper", "figures", "figure6.csv"),
    log:
        f"{LOGS}/paper/figure6.log",
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        stem=lambda wc, output: Path(output.png).with_suffix(""),
    shell:
        "unstereo report figures {input.curves} --registry {input.registry} -o {params.stem} > {log} 2>&1"


rule paper_figure2:
    """Figure 2: size vs eta of the paper's benchmarks (PNG, PDF and the CSV of its data)."""
    input:
        expand(
            results("paper", "benchmarks", "{benchmark}", "pairs.parquet"),
            benchmark=PAPER_BENCHMARKS,
        ),
    output:
        png=report(
            results("paper", "figures", "figure2.png"),
            caption="../benchmarks/captions/figure2.rst",
            category=METHODS["unstereoeval"].report_category("paper"),
            subcategory="Figures",
        ),
        pdf=results("paper", "figures", "figure2.pdf"),
        csv=results("paper", "figures", "figure2.csv"),
    log:
        f"{LOGS}/paper/figure2.log",
    conda:
        "../benchmarks/env.yaml"
    resources:
        mem_mb=1500,
        runtime=5,
    params:
        prefix=lambda wc, output: Path(output.png).with_suffix(""),
        settings=lambda wc: model_rules.settings_json(PAPER_BENCHMARKS_CONFIG, drop=()),
    shell:
        "unstereo benchmarks figure {input} -o {params.prefix} --settings {params.settings:q} > {log} 2>&1"


rule paper_reproduction:
    """Every published number of Tables 1-3, 7 and 8-22 against the reproduced cell: results/paper/reproduction.md."""
    input:
        metrics=results("paper", "metrics.parquet"),
        clean=results("paper", "metrics_clean.parquet"),
        published=PUBLISHED,
        known=KNOWN,
        registry=REGISTRY,
        properties=expand(
            results("paper", "benchmarks", "{benchmark}", "properties.json"),
            benchmark=PAPER_BENCHMARKS,
        ),
    output:
        md=report(
            results("paper", "reproduction.md"),
            caption="captions/reproduction.rst",
            category=METHODS["unstereoeval"].report_category("paper"),
        ),
        csv=report(
            results("paper", "reproduction.csv"),
            caption="captions/reproduction.rst",
            category=METHODS["unstereoeval"].report_category("paper"),
        ),
        # the opening page of the HTML report (the Snakefile's `report:`)
        summary=results("paper", "summary.rst"),
    log:
        f"{LOGS}/paper/reproduction.log",
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        properties=lambda wc, input: " ".join(
            f"--properties {p}" for p in input.properties
        ),
        settings=lambda wc: model_rules.settings_json(RCFG, drop=()),
    shell:
        "unstereo report compare {input.metrics} --clean {input.clean} --published {input.published} "
        "--known-differences {input.known} --registry {input.registry} -o {output.md} --csv {output.csv} "
        "--summary {output.summary} {params.properties} --settings {params.settings:q} > {log} 2>&1"


if MCFG["enabled"] and METRICS_MODELS and METRICS_BENCHMARKS:
    ALL_TARGETS.extend(rules.metrics.output)
    if RCFG["enabled"]:
        ALL_TARGETS.extend(rules.report_tables.output)
        ALL_TARGETS.extend(rules.report_figures.output)

if RCFG["enabled"] and RCFG["paper"]:
    ALL_TARGETS.extend(
        [
            results("paper", "metrics.parquet"),
            results("paper", "metrics_clean.parquet"),
            *rules.paper_tables.output,
            *rules.paper_figure6.output,
            *rules.paper_reproduction.output,
        ]
    )
    ALL_TARGETS.extend(rules.paper_figure2.output)
