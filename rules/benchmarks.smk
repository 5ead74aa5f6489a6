# Rules of the benchmarks stage (logic in src/unstereo/benchmarks): each configured source -> its pair table
# (templates.parquet) -> MaxPMI from the configured delta (pairs.parquet) -> one file per eta, and Figure 2.

import re

from unstereo.benchmarks.workflow import build_args, eta_names, source_inputs

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
        "../envs/benchmarks.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        args=lambda wc, input: build_args(BMCFG, wc.benchmark, input.get("manifest")),
    shell:
        "unstereo benchmarks build {params.args} --name {wildcards.benchmark} -o {output} > {log} 2>&1"


rule benchmarks_maxpmi:
    """MaxPMI of every template from the configured delta table (SPEC 1.2)."""
    input:
        pairs=results("benchmarks", "{benchmark}", "templates.parquet"),
        delta=lambda wc: delta_path(
            BM_SOURCES[wc.benchmark].get("delta") or BMCFG.get("delta", "released")
        ),
    output:
        results("benchmarks", "{benchmark}", "pairs.parquet"),
    log:
        f"{LOGS}/benchmarks/{{benchmark}}/maxpmi.log",
    benchmark:
        f"{LOGS}/benchmarks/{{benchmark}}/maxpmi.benchmark.tsv"
    wildcard_constraints:
        benchmark="|".join(map(re.escape, BM_SOURCES)) or "NONE",
    conda:
        "../envs/benchmarks.yaml"
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
    conda:
        "../envs/benchmarks.yaml"
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
            caption="../workflow/report/figure2.rst",
            category="Benchmarks",
        ),
        pdf=results("benchmarks", "figure2.pdf"),
        csv=results("benchmarks", "figure2.csv"),
    log:
        f"{LOGS}/benchmarks/figure2.log",
    benchmark:
        f"{LOGS}/benchmarks/figure2.benchmark.tsv"
    conda:
        "../envs/benchmarks.yaml"
    resources:
        mem_mb=1500,
        runtime=5,
    params:
        etas=" ".join(f"--eta {e}" for e in BM_ETAS),
        prefix=lambda wc, output: Path(output.png).with_suffix(""),
    shell:
        "unstereo benchmarks figure {input} {params.etas} -o {params.prefix} > {log} 2>&1"


if BMCFG.get("enabled") and BM_SOURCES:
    ALL_TARGETS.extend(
        expand(
            results("benchmarks", "{benchmark}", "{file}"),
            benchmark=BM_SOURCES,
            file=["pairs.parquet"] + [f"eta-{eta}.parquet" for eta in BM_ETAS],
        )
        + [results("benchmarks", f"figure2.{ext}") for ext in ("png", "pdf", "csv")]
    )
