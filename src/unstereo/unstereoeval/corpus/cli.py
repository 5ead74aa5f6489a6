"""``unstereo corpus``: count, merge, delta, import-delta, appendix (UnStereoEval paper, section 2.1 and
appendix A)."""

from __future__ import annotations

from pathlib import Path

import click

from unstereo import cli_options
from unstereo.errors import InputError


@click.group("corpus")
def group() -> None:
    """Word statistics of a corpus: windowed co-occurrence counts, PMI/delta tables, appendix A."""


@group.command("count")
@click.argument("inputs", nargs=-1, required=True, type=click.Path(path_type=Path))
@cli_options.output("output directory", kind="path", dest="out")
@click.option("--window", default=10, show_default=True, help="tokens i, j co-occur when |i - j| < window")
@click.option(
    "--targets",
    type=click.Path(path_type=Path),
    help="pairs CSV (female, male) or word list; default data/gendered_pairs.csv",
)
@click.option(
    "--stopwords", default="spacy", show_default=True, help="'spacy', 'none' or a file (one word a line)"
)
@click.option("--text-key", default="text", show_default=True, help="JSON key holding a document's text")
@click.option("--on-bad-line", type=click.Choice(["error", "skip"]), default="error", show_default=True)
@click.option("--chunk-mb", default=1.0, show_default=True, help="input batch size in MB")
@click.option(
    "--spill-types", default=2_000_000, show_default=True, help="spill to disk after this many distinct words"
)
@click.option(
    "--spill-rows", default=20_000_000, show_default=True, help="spill after this many co-occurrence rows"
)
@click.option("--engine", type=click.Choice(["fast", "naive"]), default="fast", show_default=True)
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
def count_cmd(
    inputs,
    out,
    window,
    targets,
    stopwords,
    text_key,
    on_bad_line,
    chunk_mb,
    spill_types,
    spill_rows,
    engine,
    unsorted,
    runs,
):
    """Count INPUTS (.jsonl, .jsonl.zst, .txt; one document a line) as one shard into OUTPUT/
    (unigrams.parquet, cooccurrence.parquet, stats.json; with --runs: runs/ and stats.json)."""
    from unstereo.unstereoeval.corpus.count import count_files
    from unstereo.unstereoeval.lexicon import load_stopwords, load_targets

    count_files(
        inputs,
        out,
        targets=load_targets(targets),
        stopwords=load_stopwords(stopwords),
        window=window,
        text_key=text_key,
        on_bad_line=on_bad_line,
        chunk_mb=chunk_mb,
        spill_types=spill_types,
        spill_rows=spill_rows,
        engine=engine,
        stopwords_name=str(stopwords),
        ordered=not unsorted,
        runs=runs,
    )


@group.command("merge")
@click.argument("dirs", nargs=-1, required=True, type=click.Path(path_type=Path))
@cli_options.output(kind="path", dest="out")
@click.option("--rows-per-partition", default=5_000_000, show_default=True, help="memory bound of the merge")
def merge_cmd(dirs, out, rows_per_partition):
    """Sum the count directories DIRS into OUTPUT/."""
    from unstereo.unstereoeval.corpus.merge import merge_count_dirs

    merge_count_dirs(dirs, out, rows_per_partition=rows_per_partition)


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
            raise InputError(f"--weight wants FEMALE:MALE=NUMBER, not {item!r}") from exc
    unknown = set(override) - {p.name for p in pairs}
    if unknown:
        raise InputError(f"--weight names pairs not in the pair list: {sorted(unknown)}")
    return [replace(p, weight=override.get(p.name, p.weight)) for p in pairs]


@group.command("delta")
@click.argument("counts", type=click.Path(path_type=Path))
@cli_options.output("delta parquet", kind="path", dest="out")
@click.option("--pair", default="she:he", show_default=True, help="main pair for the `delta` column")
@click.option(
    "--pairs",
    "pairs_file",
    type=click.Path(path_type=Path),
    help="gendered pairs CSV (default data/gendered_pairs.csv)",
)
@click.option(
    "--eq4-pair", multiple=True, help="pairs used by delta_eq4 (FEMALE:MALE, repeatable; default all)"
)
@click.option("--weight", "weight_opts", multiple=True, help="FEMALE:MALE=W overrides a pair's Eq. 4 weight")
@click.option("--eq4-missing", type=click.Choice(["skip", "nan"]), default="skip", show_default=True)
@click.option("--min-count", default=1, show_default=True, help="keep words with c(w) >= this")
def delta_cmd(counts, out, pair, pairs_file, eq4_pair, weight_opts, eq4_missing, min_count):
    """PMI and delta per word from a (merged) count directory COUNTS."""
    from unstereo.tables import DELTA, write_table
    from unstereo.unstereoeval.corpus.delta import compute_delta
    from unstereo.unstereoeval.corpus.merge import read_counts
    from unstereo.unstereoeval.lexicon import load_pairs, parse_pair

    uni, co, stats = read_counts(counts)
    pairs = _weights(load_pairs(pairs_file), weight_opts)
    eq4_pairs = [":".join(parse_pair(p)) for p in eq4_pair] or None
    table = compute_delta(
        uni,
        co,
        int(stats["n_tokens"]),
        int(stats["n_pairs"]),
        pairs,
        main_pair=parse_pair(pair),
        eq4_pairs=eq4_pairs,
        eq4_missing=eq4_missing,
        min_count=min_count,
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
@click.option("--pair", default="she:he", show_default=True)
@click.option("--pairs", "pairs_file", type=click.Path(path_type=Path))
@click.option("--bins", default=60, show_default=True)
@click.option(
    "--words",
    type=click.Path(path_type=Path),
    help="restrict to these words (a table with a `word` column, or one word a line), e.g. an English vocabulary; "
    "Table 4's relative counts are percentages of them",
)
def appendix_cmd(delta, out, pair, pairs_file, bins, words):
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
    write_appendix(table, load_pairs(pairs_file), out, main_pair=parse_pair(pair), bins=bins)
