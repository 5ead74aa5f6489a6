"""``unstereo corpus``: count, merge, delta, import-delta, appendix (UnStereoEval paper, section 2.1 and
appendix A)."""

from __future__ import annotations

from pathlib import Path

import click

from unstereo import cli_options
from unstereo.config.settings import section
from unstereo.errors import InputError


@click.group("corpus")
def group() -> None:
    """Word statistics of a corpus: windowed co-occurrence counts, PMI/delta tables, appendix A."""


#: The corpus section's settings (corpus.schema.yaml): each command gets them whole as ``settings`` (``--settings``,
#: the workflow passes the section), with override flags generated from the schema for the keys it reads.
SECTION = section("corpus")


@group.command("count")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@cli_options.output("output directory", kind="path", dest="out")
@click.option(
    "--unsorted",
    is_flag=True,
    help="rows unsorted (faster; for shards that `corpus merge` sums and sorts anyway)",
)
@click.option(
    "--runs",
    is_flag=True,
    help="leave the counts as runs (OUTPUT/runs/, integer word ids) for `corpus merge`, which sums them fastest: "
    "no merge inside this job (for shards; `corpus delta` wants a merged directory)",
)
@SECTION.command("window", "targets", "pairs", "stopwords", "text_key", "on_bad_line", "chunk_mb", "spill_types",
                 "spill_rows", "engine")  # fmt: skip
def count_cmd(inputs, out, unsorted, runs, settings):
    """Count INPUTS (.jsonl, .jsonl.zst, .txt; one document a line) as one shard into OUTPUT/
    (unigrams.parquet, cooccurrence.parquet, stats.json; with --runs: runs/ and stats.json)."""
    from unstereo.unstereoeval.corpus.count import count_files
    from unstereo.unstereoeval.lexicon import load_stopwords, load_targets

    count_files(
        inputs,
        out,
        # null targets: every word of the section's pairs (corpus.schema.yaml)
        targets=load_targets(settings.targets or settings.pairs),
        stopwords=load_stopwords(settings.stopwords),
        window=settings.window,
        text_key=settings.text_key,
        on_bad_line=settings.on_bad_line,
        chunk_mb=settings.chunk_mb,
        spill_types=settings.spill_types,
        spill_rows=settings.spill_rows,
        engine=settings.engine,
        stopwords_name=str(settings.stopwords),
        ordered=not unsorted,
        runs=runs,
    )


@group.command("merge")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@cli_options.output(kind="path", dest="out")
@SECTION.command("merge_rows_per_partition")
def merge_cmd(dirs, out, settings):
    """Sum the count directories DIRS into OUTPUT/."""
    from unstereo.unstereoeval.corpus.merge import merge_count_dirs

    merge_count_dirs(dirs, out, rows_per_partition=settings.merge_rows_per_partition)


def _weights(pairs, weight_opts):
    from dataclasses import replace

    from unstereo.unstereoeval.lexicon import parse_pair

    override = {}
    for item in weight_opts:
        name, _, value = item.partition("=")
        f, m = parse_pair(name)
        try:
            override[f"{f}:{m}"] = float(value)
        except ValueError as exc:
            raise InputError(f"corpus.eq4_weights wants FEMALE:MALE=NUMBER, not {item!r}") from exc
    unknown = set(override) - {p.name for p in pairs}
    if unknown:
        raise InputError(f"corpus.eq4_weights names pairs not in the pair list: {sorted(unknown)}")
    return [replace(p, weight=override.get(p.name, p.weight)) for p in pairs]


@group.command("delta")
@click.argument("counts", type=click.Path(path_type=Path))
@cli_options.output("delta parquet", kind="path", dest="out")
@SECTION.command("main_pair", "pairs", "eq4_pairs", "eq4_weights", "eq4_missing", "min_count")
def delta_cmd(counts, out, settings):
    """PMI and delta per word from a (merged) count directory COUNTS."""
    from unstereo.tables import DELTA, write_table
    from unstereo.unstereoeval.corpus.delta import compute_delta
    from unstereo.unstereoeval.corpus.merge import read_counts
    from unstereo.unstereoeval.lexicon import load_pairs, parse_pair

    uni, co, stats = read_counts(counts)
    pairs = _weights(load_pairs(settings.pairs), settings.eq4_weights)
    eq4_pairs = [":".join(parse_pair(p)) for p in settings.eq4_pairs] or None
    table = compute_delta(
        uni,
        co,
        int(stats["n_tokens"]),
        int(stats["n_pairs"]),
        pairs,
        main_pair=parse_pair(settings.main_pair),
        eq4_pairs=eq4_pairs,
        eq4_missing=settings.eq4_missing,
        min_count=settings.min_count,
    )
    write_table(table, out, DELTA)
    click.echo(
        f"{out}: {len(table)} words, {int(table['delta'].notna().sum())} with a defined delta", err=True
    )


@group.command("import-delta")
@click.argument("csv", type=click.Path(path_type=Path))
@cli_options.output(kind="path", dest="out")
def import_delta_cmd(csv, out):
    """Convert the released PILE table pmi_file_w_counts.csv (word, pmi_diff, counts, freq) to the DELTA parquet."""
    from unstereo.tables import DELTA, read_delta, write_table

    df = read_delta(csv)
    df["count"] = df["count"].astype("int64")
    write_table(df.reset_index(drop=True), out, DELTA)
    click.echo(f"{out}: {len(df)} words", err=True)


@group.command("appendix")
@click.argument("delta", type=click.Path(path_type=Path))
@cli_options.output("output directory", kind="path", dest="out")
@click.option(
    "--words",
    type=click.Path(path_type=Path),
    help="restrict to these words (a table with a `word` column, or one word a line), e.g. an English vocabulary; "
    "Table 4's relative counts are percentages of them",
)
@SECTION.command("main_pair", "pairs", "appendix_bins")
def appendix_cmd(delta, out, words, settings):
    """Appendix A of the paper from a corpus delta table: Table 4, Figures 4 and 5 (PNG, PDF, CSV)."""
    from unstereo.tables import read_table
    from unstereo.unstereoeval.corpus.appendix import write_appendix
    from unstereo.unstereoeval.lexicon import load_pairs, parse_pair

    table = read_table(delta, "delta")
    if words:
        if words.suffix in (".parquet", ".csv", ".gz"):
            keep = set(read_table(words)["word"].astype(str))
        else:
            keep = {w.strip() for w in words.read_text(encoding="utf-8").splitlines() if w.strip()}
        table = table[table["word"].isin(keep)].reset_index(drop=True)
    write_appendix(
        table,
        load_pairs(settings.pairs),
        out,
        main_pair=parse_pair(settings.main_pair),
        bins=settings.appendix_bins,
    )
