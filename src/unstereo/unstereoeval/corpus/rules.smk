# Rules of the corpus stage (logic in src/unstereo/unstereoeval/corpus): one count job per shard (scatter), a merge (gather),
# the delta table, the released PILE delta converted to the same schema, and the paper's appendix A.

import re

from unstereo.unstereoeval.corpus.shards import (
    count_mem_mb,
    merge_mem_mb,
    shard_inputs,
    shard_size_mb,
    shards as corpus_shards,
)
from unstereo.package_data import repo_path

CORPUS = config["corpus"]
# Every command gets the section as --settings JSON (unstereo.unstereoeval.corpus.cli: the keys it reads); beside it
# only paths (a shard, the output folder, the pairs file as the rule's input).
CORPUS_PAIRS = repo_path(CORPUS["pairs"], workflow.basedir)
CORPUS_SHARDS = corpus_shards(CORPUS["inputs"], EXTERNAL)
CORPUS_FILES = ["unigrams.parquet", "cooccurrence.parquet", "stats.json"]
# a count job leaves its counter's runs (integer word ids) for the merge, which sums them fastest
CORPUS_RUNS = ["runs", "stats.json"]
CORPUS_APPENDIX = [
    "table4.csv",
    "table4.md",
    "fig4a_pmi.png",
    "fig4a_pmi.pdf",
    "fig4b_delta.png",
    "fig4b_delta.pdf",
    "fig5_kendall_tau.png",
    "fig5_kendall_tau.pdf",
    "fig5_kendall_tau.csv",
    "summary.json",
]


rule corpus_count:
    """Unigram and windowed co-occurrence counts of one shard as runs (constant memory: a run goes to disk when
    the spill limits are reached); no merge inside the job."""
    input:
        unpack(lambda wc: shard_inputs(CORPUS_SHARDS[wc.shard], EXTERNAL)),
        # the targets when `targets` is null: every word of the pairs
        pairs=CORPUS_PAIRS,
    output:
        runs=directory(results("corpus", "counts", "{shard}", "runs")),
        stats=results("corpus", "counts", "{shard}", "stats.json"),
    log:
        f"{LOGS}/corpus/count/{{shard}}.log",
    benchmark:
        f"{BENCH}/corpus/count/{{shard}}.tsv"
    wildcard_constraints:
        shard="|".join(map(re.escape, CORPUS_SHARDS)) or "NONE",
    priority: rule_priority("corpus_count")
    conda:
        "env.yaml"
    threads: 1
    resources:
        # memory is bounded by the spill sizes, not the shard; time grows with it (20 MB/s worst case)
        mem_mb=lambda wc: count_mem_mb(
            shard_size_mb(CORPUS_SHARDS[wc.shard]),
            CORPUS["spill_types"],
            CORPUS["spill_rows"],
        ),
        runtime=lambda wc: 10 + int(shard_size_mb(CORPUS_SHARDS[wc.shard]) / 20 / 60),
    params:
        path=lambda wc: CORPUS_SHARDS[wc.shard].path,
        out=lambda wc, output: Path(output.stats).parent,
        settings=lambda wc: model_rules.settings_json(CORPUS, drop=()),
    shell:
        "unstereo corpus count {params.path} -o {params.out} --runs --pairs {input.pairs} "
        "--settings {params.settings:q} > {log} 2>&1"


rule corpus_merge:
    """Sum the shards' runs (bounded memory: partitions by word hash)."""
    input:
        [
            results("corpus", "counts", shard, f)
            for shard in CORPUS_SHARDS
            for f in CORPUS_RUNS
        ],
    output:
        [results("corpus", "merged", f) for f in CORPUS_FILES],
    log:
        f"{LOGS}/corpus/merge.log",
    benchmark:
        f"{BENCH}/corpus/merge.tsv"
    priority: rule_priority("corpus_merge")
    conda:
        "env.yaml"
    resources:
        # bounded by a partition's rows, not the corpus; time with the text (~12 s per GB of .zst here)
        mem_mb=merge_mem_mb(CORPUS["merge_rows_per_partition"]),
        runtime=10 + int(sum(map(shard_size_mb, CORPUS_SHARDS.values())) / 50 / 60),
    params:
        dirs=[results("corpus", "counts", shard) for shard in CORPUS_SHARDS],
        out=lambda wc, output: Path(output[0]).parent,
        settings=lambda wc: model_rules.settings_json(CORPUS, drop=()),
    shell:
        "unstereo corpus merge {params.dirs} -o {params.out} --settings {params.settings:q} > {log} 2>&1"


rule corpus_delta:
    """PMI and delta per word (she/he and every gendered pair; Eq. 4)."""
    input:
        counts=[results("corpus", "merged", f) for f in CORPUS_FILES],
        pairs=CORPUS_PAIRS,
    output:
        results("delta", "corpus.parquet"),
    log:
        f"{LOGS}/corpus/delta.log",
    benchmark:
        f"{BENCH}/corpus/delta.tsv"
    priority: rule_priority("corpus_delta")
    conda:
        "env.yaml"
    resources:
        mem_mb=lambda wc, input: 2000 + min(30000, 20 * int(input.size_mb)),
        runtime=30,
    params:
        counts=lambda wc, input: Path(input.counts[0]).parent,
        settings=lambda wc: model_rules.settings_json(CORPUS, drop=()),
    shell:
        "unstereo corpus delta {params.counts} -o {output} --pairs {input.pairs} "
        "--settings {params.settings:q} > {log} 2>&1"


rule released_delta:
    """The released PILE delta table (pmi_file_w_counts.csv) in the DELTA schema."""
    input:
        manifest=resource_manifest("reference"),
    output:
        results("delta", "released.parquet"),
    log:
        f"{LOGS}/corpus/released_delta.log",
    priority: rule_priority("released_delta")
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        csv=lambda wc, input: Path(input.manifest).parent
        / "unstereo-eval"
        / "data"
        / "pmi_file_w_counts.csv",
    shell:
        "unstereo corpus import-delta {params.csv} -o {output} > {log} 2>&1"


rule corpus_appendix:
    """Appendix A: Table 4, Figure 4 (PMI she/he, delta histogram), Figure 5 (Kendall tau between pairs)."""
    input:
        delta=results("delta", "corpus.parquet"),
        pairs=CORPUS_PAIRS,
    output:
        [
            (
                report(
                    results("corpus", "appendix", f),
                    caption="captions/corpus_appendix.rst",
                    category=METHODS["unstereoeval"].report_category("corpus"),
                )
                if f.endswith(".png")
                else results("corpus", "appendix", f)
            )
            for f in CORPUS_APPENDIX
        ],
    log:
        f"{LOGS}/corpus/appendix.log",
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=lambda wc, input: 2000 + min(30000, 10 * int(input.size_mb)),
        runtime=60,
    params:
        out=lambda wc, output: Path(output[0]).parent,
        settings=lambda wc: model_rules.settings_json(CORPUS, drop=()),
    shell:
        "unstereo corpus appendix {input.delta} -o {params.out} --pairs {input.pairs} "
        "--settings {params.settings:q} > {log} 2>&1"


if CORPUS["enabled"]:
    ALL_TARGETS.extend(
        [
            results("delta", "corpus.parquet"),
            results("delta", "released.parquet"),
            *[results("corpus", "appendix", f) for f in CORPUS_APPENDIX],
        ]
    )
