"""``unstereo vocabulary``: English vocabulary (``english``), seed words (``seeds``), or both (``select``)."""

from __future__ import annotations

import os
from pathlib import Path

import click

from unstereo import cli_options
from unstereo.io import write_json
from unstereo.tables import DELTA, read_delta, read_table, write_table
from unstereo.unstereoeval.vocabulary.english import (
    ALPHABETS,
    FREQ_POPULATIONS,
    EnglishFilter,
    english_vocabulary,
    load_lid,
    load_wordnet,
)
from unstereo.unstereoeval.vocabulary.plot import delta_histogram
from unstereo.unstereoeval.vocabulary.seeds import (
    PAPER_SEEDS,
    REGIONS,
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


def english_options(f):
    """Options of the English-vocabulary step (shared by `english` and `select`)."""
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
        click.option(
            "--lid-threshold",
            type=float,
            default=0.6,
            show_default=True,
            help="English when lid en conf > this.",
        ),
        click.option(
            "--freq-quantile",
            type=float,
            default=0.2,
            show_default=True,
            help="Keep words whose count is > this quantile of the population's counts; 0 = no cutoff.",
        ),
        click.option(
            "--freq-population",
            type=click.Choice(FREQ_POPULATIONS),
            default="alphabetic",
            show_default=True,
            help="Words the count quantile is taken over: all alphabetic words (authors' code) or the English ones.",
        ),
        click.option(
            "--alphabet",
            type=click.Choice(ALPHABETS),
            default="unicode",
            show_default=True,
            help="unicode = str.isalpha (authors' code); ascii = letters a-z only.",
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def seed_options(f):
    """Options of the seed-word step (shared by `seeds` and `select`)."""
    opts = [
        click.option(
            "--bin-edges",
            type=int,
            default=20,
            show_default=True,
            help="Equally spaced bin edges from -M to M (the paper's '20 equal-sized bins' = 20 edges, 19 bins).",
        ),
        click.option(
            "--max-abs", type=float, default=None, help="M; default ceil(max |delta|) of the vocabulary."
        ),
        click.option(
            "--region",
            type=click.Choice(REGIONS),
            default="bound",
            show_default=True,
            help="Sample from |delta| <= --bound, or from one bin (--bin-index, default the bin containing 0).",
        ),
        click.option(
            "--bound", type=float, default=0.263, show_default=True, help="|delta| bound of region 'bound'."
        ),
        click.option("--bin-index", type=int, default=None, help="0-based bin for region 'bin'."),
        click.option("--sample-size", type=int, default=100, show_default=True, help="Words per sample."),
        click.option(
            "--seeds",
            "seed_list",
            default=",".join(map(str, PAPER_SEEDS)),
            show_default=True,
            help="Comma-separated sample seeds, one sample each; empty = derive --n-samples seeds from --seed.",
        ),
        cli_options.seed(0, "Base seed when --seeds is empty."),
        click.option(
            "--n-samples", type=int, default=5, show_default=True, help="Samples when --seeds is empty."
        ),
    ]
    for opt in reversed(opts):
        f = opt(f)
    return f


def _english_params(kw: dict) -> EnglishFilter:
    return EnglishFilter(
        lid_threshold=kw["lid_threshold"],
        freq_quantile=kw["freq_quantile"],
        freq_population=kw["freq_population"],
        alphabet=kw["alphabet"],
    )


def _seed_params(kw: dict) -> SeedSelection:
    seeds = parse_seeds(kw["seed_list"]) or derive_seeds(kw["seed"], kw["n_samples"])
    return SeedSelection(
        bin_edges=kw["bin_edges"],
        max_abs=kw["max_abs"],
        region=kw["region"],
        bound=kw["bound"],
        bin_index=kw["bin_index"],
        sample_size=kw["sample_size"],
        seeds=seeds,
    )


def _run_english(delta_path: Path, vocab_out: Path, kw: dict) -> tuple:
    params = _english_params(kw)
    lid = load_lid(kw["lid_path"])
    wordnet = load_wordnet(kw["wordnet_dir"])
    vocab, stats = english_vocabulary(read_delta(delta_path), lid, wordnet, params)
    stats["input"] = str(delta_path)
    write_table(vocab, vocab_out, DELTA)
    return vocab, stats


def _run_seeds(vocab, out: Path, figure: Path | None, kw: dict) -> dict:
    params = _seed_params(kw)
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
@english_options
def english_cmd(delta: Path, output: Path, summary: Path | None, **kw) -> None:
    """Filter DELTA (corpus-stage parquet or the released pmi_file_w_counts.csv) to the English vocabulary."""
    _, stats = _run_english(delta, output, kw)
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
@seed_options
def seeds_cmd(vocabulary: Path, output: Path, figure: Path | None, summary: Path | None, **kw) -> None:
    """Sample seed words from VOCABULARY (any delta table: the `english` output, parquet or CSV)."""
    info = _run_seeds(read_delta(vocabulary), output, figure, kw)
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
@english_options
@seed_options
def select_cmd(
    delta: Path, output: Path, vocab_out: Path | None, figure: Path | None, summary: Path | None, **kw
) -> None:
    """English vocabulary and seed words from DELTA in one go (`english` then `seeds`)."""
    vocab_out = vocab_out or output.with_name("vocabulary.parquet")
    figure = figure or output.with_name("delta_histogram")
    summary = summary or output.with_name("summary.json")
    vocab, stats = _run_english(delta, vocab_out, kw)
    info = _run_seeds(vocab, output, figure, kw)
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
@english_options
@seed_options
def compare_cmd(
    seeds_csv: Path, released: Path, delta_path: Path, vocab_path: Path, output: Path, reconstruct: bool, **kw
) -> None:
    """Compare SEEDS_CSV (from `seeds`/`select`) with RELEASED seed words (JSON {word: n}); pass the same options
    as for `select` so the pool is rebuilt identically."""
    from unstereo.unstereoeval.vocabulary.compare import compare_report, read_released_seeds
    from unstereo.unstereoeval.vocabulary.seeds import sampling_pool

    params = _seed_params(kw)
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
        lid=load_lid(kw["lid_path"]),
        wordnet=load_wordnet(kw["wordnet_dir"]),
        lid_threshold=kw["lid_threshold"],
        reconstruct=reconstruct,
    )
    write_json(output, rep)
    o = rep["overlap"]
    click.echo(
        f"ours {o['ours']}, released {o['released']}, intersection {o['intersection']}, Jaccard {o['jaccard']:.4f}"
    )
