# Rules of the benchmarks stage (logic in src/unstereo/unstereoeval/benchmarks): each configured source -> its pair table
# (templates.parquet) -> MaxPMI from the configured delta (pairs.parquet) -> one file per eta, and Figure 2.

import re

from unstereo.unstereoeval.benchmarks.rules import (
    delta_choice,
    eta_names,
    source_inputs,
    source_paths,
)

BMCFG = config["benchmarks"]
# Source paths may name the results folder as {results_dir} (e.g. the generate stage's pair table).
BM_SOURCES = {
    name: {
        **src,
        "path": (
            src["path"].replace("{results_dir}", RESULTS)
            if isinstance(src.get("path"), str)
            else src.get("path")
        ),
    }
    for name, src in BMCFG.get("sources", {}).items()
}
BMCFG = {**BMCFG, "sources": BM_SOURCES}
BM_ETAS = eta_names(BMCFG)  # as in file names: inf, 1.0, 0.8, 0.65, ...
# `benchmarks build` and `figure` get the section as --settings JSON (build reads its source's entry by --name);
# beside it only paths (the source's files, resolved against its resource folder) and the benchmark's name.


rule benchmarks_build:
    """Read one benchmark source into a pair table (templates filled; MaxPMI still empty)."""
    input:
        unpack(lambda wc: source_inputs(BM_SOURCES[wc.benchmark], resource_manifest)),
    output:
        results("benchmarks", "{benchmark}", "templates.parquet"),
    log:
        f"{LOGS}/benchmarks/{{benchmark}}/build.log",
    benchmark:
        f"{LOGS}/benchmarks/{{benchmark}}/build.benchmark.tsv"
    wildcard_constraints:
        benchmark="|".join(map(re.escape, BM_SOURCES)) or "NONE",
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        paths=lambda wc, input: source_paths(BMCFG, wc.benchmark, input.get("manifest")),
        settings=lambda wc: model_rules.settings_json(BMCFG, drop=()),
    shell:
        "unstereo benchmarks build {params.paths} --name {wildcards.benchmark} -o {output} "
        "--settings {params.settings:q} > {log} 2>&1"


rule benchmarks_maxpmi:
    """MaxPMI of every template from the configured delta table (docs/methods.md#maxpmi-and-eta)."""
    input:
        pairs=results("benchmarks", "{benchmark}", "templates.parquet"),
        delta=lambda wc: delta_path(delta_choice(BMCFG, BM_SOURCES[wc.benchmark])),
    output:
        results("benchmarks", "{benchmark}", "pairs.parquet"),
    log:
        f"{LOGS}/benchmarks/{{benchmark}}/maxpmi.log",
    benchmark:
        f"{LOGS}/benchmarks/{{benchmark}}/maxpmi.benchmark.tsv"
    wildcard_constraints:
        benchmark="|".join(map(re.escape, BM_SOURCES)) or "NONE",
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    shell:
        "unstereo benchmarks maxpmi {input.pairs} --delta {input.delta} -o {output} > {log} 2>&1"


rule benchmarks_eta:
    """The pairs with -eta <= MaxPMI <= eta (undefined MaxPMI only for eta = inf)."""
    input:
        results("benchmarks", "{benchmark}", "pairs.parquet"),
    output:
        results("benchmarks", "{benchmark}", "eta-{eta}.parquet"),
    log:
        f"{LOGS}/benchmarks/{{benchmark}}/eta-{{eta}}.log",
    benchmark:
        f"{LOGS}/benchmarks/{{benchmark}}/eta-{{eta}}.benchmark.tsv"
    wildcard_constraints:
        benchmark="|".join(map(re.escape, BM_SOURCES)) or "NONE",
        eta="|".join(map(re.escape, BM_ETAS)) or "NONE",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "unstereo benchmarks filter {input} --eta {wildcards.eta} -o {output} > {log} 2>&1"


rule benchmarks_figure2:
    """Figure 2: benchmark size vs eta, one line per benchmark (PNG, PDF and the CSV of its data)."""
    input:
        expand(
            results("benchmarks", "{benchmark}", "pairs.parquet"), benchmark=BM_SOURCES
        ),
    output:
        png=report(
            results("benchmarks", "figure2.png"),
            caption="captions/figure2.rst",
            category=METHODS["unstereoeval"].report_category("benchmarks"),
        ),
        pdf=results("benchmarks", "figure2.pdf"),
        csv=results("benchmarks", "figure2.csv"),
    log:
        f"{LOGS}/benchmarks/figure2.log",
    benchmark:
        f"{LOGS}/benchmarks/figure2.benchmark.tsv"
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=1500,
        runtime=5,
    params:
        prefix=lambda wc, output: Path(output.png).with_suffix(""),
        settings=lambda wc: model_rules.settings_json(BMCFG, drop=()),
    shell:
        "unstereo benchmarks figure {input} -o {params.prefix} --settings {params.settings:q} > {log} 2>&1"


rule benchmarks_card:
    """A benchmark card beside the pair table: the Table 7 properties (Markdown, and JSON for Table 7)."""
    input:
        pairs=results("benchmarks", "{benchmark}", "pairs.parquet"),
        delta=lambda wc: delta_path(delta_choice(BMCFG, BM_SOURCES[wc.benchmark])),
    output:
        card=results("benchmarks", "{benchmark}", "card.md"),
        html=report(
            results("benchmarks", "{benchmark}", "card.html"),
            caption="captions/card.rst",
            category=METHODS["unstereoeval"].report_category("benchmarks"),
            subcategory="Cards",
        ),
        json=results("benchmarks", "{benchmark}", "properties.json"),
    log:
        f"{LOGS}/benchmarks/{{benchmark}}/card.log",
    wildcard_constraints:
        benchmark="|".join(map(re.escape, BM_SOURCES)) or "NONE",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=1000,
        runtime=5,
    shell:
        "unstereo benchmarks card {input.pairs} --delta {input.delta} --name {wildcards.benchmark} "
        "-o {output.card} --json {output.json} --html {output.html} > {log} 2>&1"


rule benchmarks_table7:
    """Table 7 of the paper (benchmark properties) for every configured benchmark (CSV, Markdown, LaTeX, HTML)."""
    input:
        expand(
            results("benchmarks", "{benchmark}", "properties.json"),
            benchmark=BM_SOURCES,
        ),
    output:
        report(
            results("benchmarks", "table07.html"),
            caption="captions/table7.rst",
            category=METHODS["unstereoeval"].report_category("benchmarks"),
        ),
        [results("benchmarks", f"table07.{ext}") for ext in ("csv", "md", "tex")],
    log:
        f"{LOGS}/benchmarks/table07.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=1000,
        runtime=5,
    params:
        out_dir=lambda wc, output: Path(output[0]).parent,
    shell:
        "unstereo report table7 {input} -o {params.out_dir} > {log} 2>&1"


if BMCFG.get("enabled") and BM_SOURCES:
    ALL_TARGETS.extend(
        expand(
            results("benchmarks", "{benchmark}", "{file}"),
            benchmark=BM_SOURCES,
            file=["pairs.parquet", "card.md", "card.html", "properties.json"]
            + [f"eta-{eta}.parquet" for eta in BM_ETAS],
        )
        + [results("benchmarks", f"figure2.{ext}") for ext in ("png", "pdf", "csv")]
        + [
            results("benchmarks", f"table07.{ext}")
            for ext in ("html", "csv", "md", "tex")
        ]
    )
