"""``unstereo vocabulary``: English vocabulary (``english``), seed words (``seeds``), or both (``select``)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from unstereo import cli_options
from unstereo.config.settings import section, with_options
from unstereo.io import write_json
from unstereo.tables import DELTA, read_delta, read_table, write_table
from unstereo.unstereoeval.vocabulary.english import (
    EnglishFilter,
    english_vocabulary,
    load_lid,
    load_wordnet,
)
from unstereo.unstereoeval.vocabulary.plot import delta_histogram
from unstereo.unstereoeval.vocabulary.seeds import (
    SeedSelection,
    delta_bin_edges,
    derive_seeds,
    parse_seeds,
    sample_seed_words,
)


def _external(name: str) -> str:
    return str(Path(os.environ.get("UNSTEREO_EXTERNAL_DIR", "data/external")) / name)


def _resource_option(flag: str, dest: str, resource: str, help: str):
    """An option naming an offline resource's path, by default the resource's folder under the external dir."""
    return click.option(
        flag,
        dest,
        type=click.Path(path_type=Path),
        default=lambda: _external(resource),
        show_default=f"$UNSTEREO_EXTERNAL_DIR/{resource} or data/external/{resource}",
        help=help,
    )


#: The vocabulary section's settings (vocabulary.schema.yaml): the commands get them whole as ``settings``
#: (``--settings``, the workflow passes the section), with override flags generated from the schema.
SECTION = section("vocabulary")
#: The section's keys each step reads (their flags): the English-vocabulary step and the seed-word step.
ENGLISH_KEYS = ("lid_threshold", "freq_quantile", "freq_population", "alphabet")
SEED_KEYS = ("bin_edges", "max_abs", "region", "bound", "bin_index", "sample_size", "seeds", "n_samples")


def resource_options(f):
    """The offline resources of the English-vocabulary step (shared by `english`, `select` and `compare`)."""
    opts = [
        _resource_option(
            "--lid",
            "lid_path",
            "lid176",
            "fastText lid.176 model file (.ftz/.bin) or the lid176 resource directory.",
        ),
        _resource_option(
            "--wordnet",
            "wordnet_dir",
            "wordnet",
            "NLTK data directory holding corpora/wordnet (the wordnet resource).",
        ),
    ]
    return with_options(f, opts)


#: ``--seed``: the base seed of the derived sample seeds (the section's ``seeds: null``); not a section key: the
#: workflow derives it from the global seed.
seed_option = cli_options.seed(0, "Base seed of the derived sample seeds (seeds null in the section).")


def _english_params(settings) -> EnglishFilter:
    return EnglishFilter(
        lid_threshold=settings.lid_threshold,
        freq_quantile=settings.freq_quantile,
        freq_population=settings.freq_population,
        alphabet=settings.alphabet,
    )


def _seed_params(settings, seed: int) -> SeedSelection:
    seeds = parse_seeds(settings.seeds) or derive_seeds(seed, settings.n_samples)
    return SeedSelection(
        bin_edges=settings.bin_edges,
        max_abs=settings.max_abs,
        region=settings.region,
        bound=settings.bound,
        bin_index=settings.bin_index,
        sample_size=settings.sample_size,
        seeds=seeds,
    )


def _run_english(delta_path: Path, vocab_out: Path, settings, lid_path: Path, wordnet_dir: Path) -> tuple:
    params = _english_params(settings)
    lid = load_lid(lid_path)
    wordnet = load_wordnet(wordnet_dir)
    vocab, stats = english_vocabulary(read_delta(delta_path), lid, wordnet, params)
    stats["input"] = str(delta_path)
    write_table(vocab, vocab_out, DELTA)
    return vocab, stats


def _run_seeds(vocab, out: Path, figure: Path | None, settings, seed: int) -> dict:
    params = _seed_params(settings, seed)
    edges = delta_bin_edges(vocab["delta"], params.bin_edges, params.max_abs)
    seeds, summary = sample_seed_words(vocab, params, edges)
    write_table(seeds, out)
    if figure is not None:
        paths = delta_histogram(vocab, seeds, edges, (summary["region_low"], summary["region_high"]), figure)
        summary["figures"] = [str(p) for p in paths]
    return summary


@click.group("vocabulary")
def group() -> None:
    """English vocabulary and seed words from a delta table (paper section 2.3, appendices B-C)."""


@group.command("english")
@click.argument("delta", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@cli_options.output("Vocabulary parquet.", kind="path")
@click.option(
    "--summary", type=click.Path(path_type=Path), default=None, help="JSON with the counts per criterion."
)
@resource_options
@SECTION.command(*ENGLISH_KEYS)
def english_cmd(delta: Path, output: Path, summary: Path | None, lid_path, wordnet_dir, settings) -> None:
    """Filter DELTA (corpus-stage parquet or the released pmi_file_w_counts.csv) to the English vocabulary."""
    _, stats = _run_english(delta, output, settings, lid_path, wordnet_dir)
    if summary is not None:
        write_json(summary, stats)


@group.command("seeds")
@click.argument("vocabulary", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@cli_options.output("Seed-word CSV.", kind="path")
@click.option(
    "--figure", type=click.Path(path_type=Path), default=None, help="Histogram prefix (.png and .pdf)."
)
@click.option(
    "--summary", type=click.Path(path_type=Path), default=None, help="JSON with bins, pool and seeds."
)
@seed_option
@SECTION.command(*SEED_KEYS)
def seeds_cmd(
    vocabulary: Path, output: Path, figure: Path | None, summary: Path | None, seed, settings
) -> None:
    """Sample seed words from VOCABULARY (any delta table: the `english` output, parquet or CSV)."""
    info = _run_seeds(read_delta(vocabulary), output, figure, settings, seed)
    info["input"] = str(vocabulary)
    if summary is not None:
        write_json(summary, info)


@group.command("select")
@click.argument("delta", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@cli_options.output("Seed-word CSV.", kind="path")
@click.option(
    "--vocabulary",
    "vocab_out",
    type=click.Path(path_type=Path),
    default=None,
    help="Vocabulary parquet [default: vocabulary.parquet beside -o].",
)
@click.option(
    "--figure",
    type=click.Path(path_type=Path),
    default=None,
    help="Histogram prefix [default: delta_histogram beside -o].",
)
@click.option(
    "--summary", type=click.Path(path_type=Path), default=None, help="JSON [default: summary.json beside -o]."
)
@resource_options
@seed_option
@SECTION.command(*ENGLISH_KEYS, *SEED_KEYS)
def select_cmd(delta: Path, output: Path, vocab_out: Path | None, figure: Path | None, summary: Path | None, lid_path,
               wordnet_dir, seed, settings) -> None:  # fmt: skip
    """English vocabulary and seed words from DELTA in one go (`english` then `seeds`)."""
    vocab_out = vocab_out or output.with_name("vocabulary.parquet")
    figure = figure or output.with_name("delta_histogram")
    summary = summary or output.with_name("summary.json")
    vocab, stats = _run_english(delta, vocab_out, settings, lid_path, wordnet_dir)
    info = _run_seeds(vocab, output, figure, settings, seed)
    write_json(summary, {"english": stats, "seeds": info})


@group.command("compare")
@click.argument("seeds_csv", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.argument("released", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--delta", "delta_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True
)
@click.option(
    "--vocabulary", "vocab_path", type=click.Path(exists=True, dir_okay=False, path_type=Path), required=True
)
@cli_options.output("JSON report.", kind="path")
@click.option(
    "--reconstruct/--no-reconstruct", default=False, help="Infer the authors' pool size (about a minute)."
)
@resource_options
@seed_option
@SECTION.command(*ENGLISH_KEYS, *SEED_KEYS)
def compare_cmd(seeds_csv: Path, released: Path, delta_path: Path, vocab_path: Path, output: Path, reconstruct: bool,
                lid_path, wordnet_dir, seed, settings) -> None:  # fmt: skip
    """Compare SEEDS_CSV (from `seeds`/`select`) with RELEASED seed words (JSON {word: n}); pass the same options
    as for `select` so the pool is rebuilt identically."""
    from unstereo.unstereoeval.vocabulary.compare import compare_report, read_released_seeds
    from unstereo.unstereoeval.vocabulary.seeds import sampling_pool

    params = _seed_params(settings, seed)
    vocab = read_delta(vocab_path)
    edges = delta_bin_edges(vocab["delta"], params.bin_edges, params.max_abs)
    pool, info = sampling_pool(vocab, params, edges)
    rep = compare_report(
        read_table(seeds_csv),
        read_released_seeds(released),
        read_delta(delta_path),
        vocab,
        pool,
        (info["region_low"], info["region_high"]),
        params.sample_size,
        params.seeds,
        lid=load_lid(lid_path),
        wordnet=load_wordnet(wordnet_dir),
        lid_threshold=settings.lid_threshold,
        reconstruct=reconstruct,
    )
    write_json(output, rep)
    o = rep["overlap"]
    click.echo(
        f"ours {o['ours']}, released {o['released']}, intersection {o['intersection']}, Jaccard {o['jaccard']:.4f}"
    )
