# Rules of the vocabulary stage (see src/unstereo/unstereoeval/vocabulary for the logic). Append final outputs to ALL_TARGETS.

VOCAB = config["vocabulary"]
# Every command gets the section as --settings JSON (a function's value: Snakemake reads a plain string param as a
# wildcard pattern); beside it only paths and, when the section lists no sample seeds, the base seed the stage
# derives from the global one (not a section key).
VOCAB_SEED = "" if VOCAB["seeds"] else f"--seed {stage_seed('vocabulary')}"


rule vocabulary_english:
    """English vocabulary: alphabetic words, lid.176 en > threshold OR a WordNet synset, above the count quantile."""
    input:
        delta=delta_path(VOCAB["delta"]),
        lid=resource_manifest("lid176"),
        wordnet=resource_manifest("wordnet"),
    output:
        vocab=results("vocabulary", "vocabulary.parquet"),
        summary=results("vocabulary", "english.json"),
    log:
        f"{LOGS}/vocabulary/english.log",
    benchmark:
        f"{BENCH}/vocabulary/english.tsv"
    priority: rule_priority("vocabulary_english")
    conda:
        "env.yaml"
    resources:
        mem_mb=4000,
        runtime=60,
    params:
        lid=lambda wc, input: Path(input.lid).parent,
        wordnet=lambda wc, input: Path(input.wordnet).parent,
        settings=lambda wc: model_rules.settings_json(VOCAB, drop=()),
    shell:
        "unstereo vocabulary english {input.delta} -o {output.vocab} --summary {output.summary} "
        "--lid {params.lid} --wordnet {params.wordnet} --settings {params.settings:q} > {log} 2>&1"


rule vocabulary_seeds:
    """Seed words: seeded samples from the central delta region, united; histogram of delta (figure 4b style)."""
    input:
        vocab=rules.vocabulary_english.output.vocab,
    output:
        seeds=results("vocabulary", "seed_words.csv"),
        summary=results("vocabulary", "seeds.json"),
        png=results("vocabulary", "delta_histogram.png"),
        pdf=results("vocabulary", "delta_histogram.pdf"),
    log:
        f"{LOGS}/vocabulary/seeds.log",
    benchmark:
        f"{BENCH}/vocabulary/seeds.tsv"
    priority: rule_priority("vocabulary_seeds")
    conda:
        "env.yaml"
    resources:
        mem_mb=2000,
        runtime=10,
    params:
        figure=lambda wc, output: Path(output.png).with_suffix(""),
        settings=lambda wc: model_rules.settings_json(VOCAB, drop=()),
        seed=VOCAB_SEED,
    shell:
        "unstereo vocabulary seeds {input.vocab} -o {output.seeds} --summary {output.summary} "
        "--figure {params.figure} --settings {params.settings:q} {params.seed} > {log} 2>&1"


rule vocabulary_compare_released:
    """Overlap of the seed words with the released 493 and why they differ (reference resource)."""
    input:
        seeds=rules.vocabulary_seeds.output.seeds,
        vocab=rules.vocabulary_english.output.vocab,
        delta=delta_path(VOCAB["delta"]),
        lid=resource_manifest("lid176"),
        wordnet=resource_manifest("wordnet"),
        ref=resource_manifest("reference"),
    output:
        report=results("vocabulary", "compare_released.json"),
    log:
        f"{LOGS}/vocabulary/compare_released.log",
    benchmark:
        f"{BENCH}/vocabulary/compare_released.tsv"
    localrule: True  # seconds on small tables: no cluster job (docs/performance.md)
    conda:
        "env.yaml"
    resources:
        mem_mb=4000,
        runtime=30,
    params:
        released=lambda wc, input: Path(input.ref).parent
        / "unstereo-eval"
        / "data"
        / "seed_words",
        lid=lambda wc, input: Path(input.lid).parent,
        wordnet=lambda wc, input: Path(input.wordnet).parent,
        settings=lambda wc: model_rules.settings_json(VOCAB, drop=()),
        seed=VOCAB_SEED,
    shell:
        "unstereo vocabulary compare {input.seeds} {params.released} --delta {input.delta} "
        "--vocabulary {input.vocab} -o {output.report} --reconstruct --lid {params.lid} "
        "--wordnet {params.wordnet} --settings {params.settings:q} {params.seed} > {log} 2>&1"


if VOCAB["enabled"]:
    ALL_TARGETS.extend(rules.vocabulary_seeds.output)
    if VOCAB["compare_released"]:
        ALL_TARGETS.append(rules.vocabulary_compare_released.output.report)
