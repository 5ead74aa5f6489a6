"""``unstereo benchmarks``: build pair tables, add MaxPMI, apply the eta constraint, size table and Figure 2."""

from __future__ import annotations

import time
from pathlib import Path

import click

from unstereo import cli_options
from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.tables import PAIRS, read_delta, read_table, write_table

log = get_logger("unstereoeval.benchmarks")
ETAS_HELP = "eta values [default: inf 1.0 0.8 0.65 0.5 0.3]"


def _etas(values: tuple[str, ...]) -> list[float]:
    from unstereo.unstereoeval.eta import parse_etas

    try:
        return parse_etas(values)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--eta") from None


@click.group("benchmarks")
def group() -> None:
    """Benchmarks as pair tables: Winobias, Winogender, released USE, user templates; MaxPMI and eta filtering."""


@group.command("build")
@click.argument("sources", nargs=-1, required=True, type=click.Path(exists=True))
@click.option(
    "--kind",
    required=True,
    type=click.Choice(["winobias", "winogender", "use-raw", "use-released", "templates", "pairs"]),
    help="winobias: folder with the 8 original files (or released coref__Winobias__templates.*.csv); "
    "winogender: all_sentences.tsv (or the released template csv); use-raw: data/datasets/raw/USE-*.csv; "
    "use-released: data/datasets/preprocessed/*.csv.gz; templates: CSV/TSV/JSONL/parquet with a template column; "
    "pairs: an existing pair table",
)
@click.option(
    "--name", help="benchmark name and pair-id prefix (default: Winobias, Winogender, or the file stem)"
)
@click.option(
    "--split",
    "splits",
    multiple=True,
    type=click.Choice(["dev", "test"]),
    help="winobias splits [default: both]",
)
@click.option(
    "--natural-only/--all-rows",
    default=True,
    show_default=True,
    help="use-raw: keep only rows with is_natural (the released benchmark)",
)
@click.option(
    "--raw", type=click.Path(exists=True, dir_okay=False), help="use-released: the raw USE file (pair ids)"
)
@cli_options.reference_quirks(
    "fill with the reference code's .strip().capitalize() and quote deletion, and keep its Winobias "
    "bracket / Winogender apostrophe artifacts"
)
@click.option(
    "--on-bad-row",
    type=click.Choice(["error", "drop"]),
    default="error",
    show_default=True,
    help="error: stop naming file and line; drop: drop the row, log and count it",
)
@click.option(
    "--delta", type=click.Path(exists=True, dir_okay=False), help="also fill max_pmi from this table"
)
@click.option(
    "--max-pairs",
    type=click.IntRange(min=1),
    help="keep a seeded uniform sample of this many pairs (in file order) [default: all]",
)
@click.option("--sample-seed", type=int, default=0, show_default=True, help="seed of --max-pairs")
@cli_options.output("pair table (.parquet/.csv)")
def build_cmd(
    sources: tuple[str, ...],
    kind: str,
    name: str | None,
    splits: tuple[str, ...],
    natural_only: bool,
    raw: str | None,
    reference_quirks: bool,
    on_bad_row: str,
    delta: str | None,
    max_pairs: int | None,
    sample_seed: int,
    output: Path,
) -> None:
    """Read SOURCES (one benchmark) into the pair table OUTPUT."""
    from unstereo.unstereoeval.benchmarks.maxpmi import add_max_pmi
    from unstereo.unstereoeval.benchmarks.pairs import sample_pairs
    from unstereo.unstereoeval.benchmarks.readers import SPLITS, build_pairs

    pairs = build_pairs(
        kind,
        sources,
        name,
        splits=splits or SPLITS,
        natural_only=natural_only,
        raw=raw,
        reference_quirks=reference_quirks,
        on_bad_row=on_bad_row,
    )
    read = len(pairs)
    pairs = sample_pairs(pairs, max_pairs, sample_seed)
    if len(pairs) < read:
        log.info("kept a sample of %d of %d pairs (seed %d)", len(pairs), read, sample_seed)
    if delta:
        pairs = add_max_pmi(pairs, read_delta(delta))
    write_table(pairs, output, PAIRS)
    click.echo(f"{output}: {len(pairs)} pairs")


@group.command("maxpmi")
@click.argument("pairs_path", metavar="PAIRS", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--delta",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="delta table: corpus-stage parquet or the released pmi_file_w_counts.csv",
)
@click.option("--eta", help="also keep only pairs with -ETA <= max_pmi <= ETA")
@cli_options.output("pair table (.parquet/.csv)")
def maxpmi_cmd(pairs_path: str, delta: str, eta: str | None, output: Path) -> None:
    """Fill max_pmi and max_pmi_word of the pair table PAIRS (docs/methods.md#maxpmi-and-eta)."""
    from unstereo.unstereoeval.benchmarks.eta_filter import filter_eta
    from unstereo.unstereoeval.benchmarks.maxpmi import _tokenizer, add_max_pmi

    pairs = read_table(pairs_path, PAIRS)
    table = read_delta(delta)
    _tokenizer()  # load spaCy outside the timing
    start = time.perf_counter()
    pairs = add_max_pmi(pairs, table)
    undefined = int(pairs["max_pmi"].isna().sum())
    log.info(
        "MaxPMI of %d pairs in %.2f s; undefined for %d", len(pairs), time.perf_counter() - start, undefined
    )
    if eta is not None:
        pairs = filter_eta(pairs, _etas((eta,))[0])
    write_table(pairs, output, PAIRS)
    click.echo(f"{output}: {len(pairs)} pairs ({undefined} with undefined MaxPMI)")


@group.command("filter")
@click.argument("pairs_path", metavar="PAIRS", type=click.Path(exists=True, dir_okay=False))
@cli_options.etas(required=True)
@cli_options.output(
    "output file; with several --eta it must contain {eta} (written as str(float(eta)): inf, 1.0, 0.65)",
    kind="text",
)
def filter_cmd(pairs_path: str, etas: tuple[str, ...], output: str) -> None:
    """Keep the pairs of PAIRS with -eta <= max_pmi <= eta (undefined max_pmi kept only for eta = inf)."""
    from unstereo.unstereoeval.benchmarks.eta_filter import filter_eta
    from unstereo.unstereoeval.eta import eta_label

    values = _etas(etas)
    if len(values) > 1 and "{eta}" not in output:
        raise click.BadParameter("with several --eta the output must contain {eta}", param_hint="-o")
    pairs = read_table(pairs_path, PAIRS)
    if pairs["max_pmi"].isna().all() and len(pairs):
        log.warning("%s: max_pmi is empty for every pair: was `benchmarks maxpmi` run?", pairs_path)
    for eta in values:
        out = output.replace("{eta}", eta_label(eta))
        kept = filter_eta(pairs, eta)
        write_table(kept, out, PAIRS)
        click.echo(f"{out}: {len(kept)} of {len(pairs)} pairs (eta={eta_label(eta)})")


def _sizes(pairs_paths: tuple[str, ...], etas: tuple[str, ...]):
    import pandas as pd

    from unstereo.unstereoeval.benchmarks.eta_filter import PAPER_ETAS, eta_sizes

    frames = {}
    for path in pairs_paths:
        df = read_table(path, PAIRS)
        for name, group in df.groupby("benchmark", sort=False):
            if name in frames:
                raise InputError(f"benchmark {name!r} appears in more than one input", path=path)
            frames[name] = group
    if not frames:
        return pd.DataFrame(columns=["benchmark", "eta", "n", "fraction"])
    return eta_sizes(frames, _etas(etas) if etas else PAPER_ETAS)


@group.command("sizes")
@click.argument("pairs_paths", metavar="PAIRS...", nargs=-1, required=True, type=click.Path(exists=True))
@cli_options.etas(help=ETAS_HELP)
@cli_options.output("CSV/parquet table (default: print)", required=False)
def sizes_cmd(pairs_paths: tuple[str, ...], etas: tuple[str, ...], output: Path | None) -> None:
    """Benchmark size after each eta (columns benchmark, eta, n, fraction)."""
    sizes = _sizes(pairs_paths, etas)
    if output:
        write_table(sizes, output)
        click.echo(f"{output}: {len(sizes)} rows")
    else:
        table = sizes.pivot(index="benchmark", columns="eta", values="n").sort_index(axis=1, ascending=False)
        click.echo(table.loc[list(dict.fromkeys(sizes["benchmark"]))].to_string())


@group.command("figure")
@click.argument("pairs_paths", metavar="PAIRS...", nargs=-1, required=True, type=click.Path(exists=True))
@cli_options.etas(help=ETAS_HELP)
@cli_options.output("output prefix: writes PREFIX.png, PREFIX.pdf and PREFIX.csv (its data)", kind="text")
def figure_cmd(pairs_paths: tuple[str, ...], etas: tuple[str, ...], output: str) -> None:
    """Figure 2: benchmark size vs eta, one line per benchmark (PNG, PDF and the CSV data)."""
    from unstereo.unstereoeval.benchmarks.figure import plot_sizes

    prefix = Path(output)
    if prefix.suffix in (".png", ".pdf", ".csv"):
        prefix = prefix.with_suffix("")
    for path in plot_sizes(_sizes(pairs_paths, etas), prefix):
        click.echo(str(path))


@group.command("card")
@click.argument("pairs_path", metavar="PAIRS", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "--delta", type=click.Path(exists=True, dir_okay=False), help="DELTA table for the seed-word row"
)
@click.option("--name", default=None, help="benchmark name [default: the table's benchmark column]")
@click.option("-o", "--output", required=True, type=click.Path(dir_okay=False), help="card (Markdown)")
@click.option("--json", "json_out", type=click.Path(dir_okay=False), help="also the properties as JSON")
@click.option("--html", "html_out", type=click.Path(dir_okay=False), help="also the card as an HTML page")
def card_cmd(
    pairs_path: str,
    delta: str | None,
    name: str | None,
    output: str,
    json_out: str | None,
    html_out: str | None,
) -> None:
    """A benchmark card: the Table 7 properties of PAIRS (sentences, seed words, gendered words, pronouns,
    pronoun positions, length, seed-word delta) as Markdown, and as JSON for `report table7`."""
    from unstereo.io import write_json, write_text
    from unstereo.unstereoeval.benchmarks.properties import benchmark_properties, card_html, card_markdown

    pairs = read_table(pairs_path, PAIRS)
    if name is None:
        names = list(dict.fromkeys(pairs["benchmark"].astype(str)))
        name = names[0] if len(names) == 1 else Path(pairs_path).parent.name
    props = benchmark_properties(pairs, read_delta(delta) if delta else None)
    write_text(output, card_markdown(name, props, source=str(pairs_path)))
    if json_out:
        write_json(json_out, {"benchmark": name, **props})
    if html_out:
        write_text(html_out, card_html(name, props, source=str(pairs_path)))
    click.echo(f"{output}: {name}, {props['# sentences']} sentences")


@group.command("export")
@click.argument("pairs_path", metavar="PAIRS", type=click.Path(exists=True, dir_okay=False))
@click.option("-o", "--out-dir", required=True, type=click.Path(file_okay=False), help="the dataset folder")
@click.option("--name", default=None, help="dataset name [default: the table's benchmark]")
@click.option(
    "--generated",
    "generate_dir",
    type=click.Path(exists=True, file_okay=False),
    help="the benchmark's generate folder (results/generate/USE-k): generator, prompts, seed words, filters, counts",
)
@click.option(
    "--prompts-dir",
    type=click.Path(exists=True, file_okay=False),
    help="prompts [default: the run's settings]",
)
def export_cmd(
    pairs_path: str, out_dir: str, name: str | None, generate_dir: str | None, prompts_dir: str | None
):
    """Write PAIRS as a folder that `datasets.load_dataset(OUT_DIR)` reads: parquet data (split `test`), a dataset
    card (README.md) with the provenance, and provenance.json."""
    from unstereo.unstereoeval.benchmarks.export import export_benchmark

    pairs = read_table(pairs_path, PAIRS)
    for path in export_benchmark(pairs, out_dir, name, generate_dir, prompts_dir):
        click.echo(str(path))
