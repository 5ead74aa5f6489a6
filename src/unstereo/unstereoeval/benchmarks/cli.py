"""``unstereo benchmarks``: build pair tables, add MaxPMI, apply the eta constraint, size table and Figure 2."""

from __future__ import annotations

import time
from pathlib import Path

import click

from unstereo import cli_options
from unstereo.config.settings import Section, section
from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.tables import PAIRS, read_delta, read_table, write_table

log = get_logger("unstereoeval.benchmarks")

#: The benchmarks section's settings (benchmarks.schema.yaml): `build`, `sizes` and `figure` get them whole as
#: ``settings`` (``--settings``, the workflow passes the section), with override flags generated from the schema.
SECTION = section("benchmarks")
#: One entry of the section's ``sources`` (its ``$defs/source``): `build` reads the entry named ``--name``, with
#: override flags generated from the definition for its reading options (its paths are the command's arguments).
SOURCE = Section("benchmarks.source", {**SECTION.schema["$defs"]["source"], "$defs": SECTION.schema["$defs"]})
SOURCE_KEYS = ("kind", "split", "natural_only", "max_pairs", "sample_seed")


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
    "--name",
    help="benchmark name and pair-id prefix (default: Winobias, Winogender, or the file stem); the source of the "
    "section's `sources` of that name gives the options below",
)
@click.option(
    "--raw",
    type=click.Path(exists=True, dir_okay=False),
    help="use-released: the raw USE file (pair ids) [default: ../raw/{dataset}.csv beside the file]",
)
@click.option(
    "--delta", type=click.Path(exists=True, dir_okay=False), help="also fill max_pmi from this table"
)
@cli_options.output("pair table (.parquet/.csv)")
@SOURCE.options(SOURCE_KEYS)
@SECTION.command("reference_quirks", "on_bad_row")
def build_cmd(
    sources: tuple[str, ...],
    name: str | None,
    raw: str | None,
    delta: str | None,
    output: Path,
    settings,
    **flags,
) -> None:
    """Read SOURCES (one benchmark) into the pair table OUTPUT. Its reading options (--kind, --split, ...) are the
    entry of `sources` named --name in --settings, the flags over it."""
    from unstereo.unstereoeval.benchmarks.maxpmi import add_max_pmi
    from unstereo.unstereoeval.benchmarks.pairs import sample_pairs
    from unstereo.unstereoeval.benchmarks.readers import build_pairs

    source = _source(settings, name, list(sources), flags)
    pairs = build_pairs(
        source.kind,
        sources,
        name,
        splits=tuple(source.split),
        natural_only=source.natural_only,
        raw=raw,
        reference_quirks=settings.reference_quirks,
        on_bad_row=settings.on_bad_row,
    )
    read = len(pairs)
    pairs = sample_pairs(pairs, source.max_pairs, source.sample_seed)
    if len(pairs) < read:
        log.info("kept a sample of %d of %d pairs (seed %d)", len(pairs), read, source.sample_seed)
    if delta:
        pairs = add_max_pmi(pairs, read_delta(delta))
    write_table(pairs, output, PAIRS)
    click.echo(f"{output}: {len(pairs)} pairs")


def _source(settings, name: str | None, paths: list[str], flags: dict):
    """The benchmark source ``name`` of the section (its entry of ``sources``, none when it lists no such name)
    with the flags over it, its defaults from the source definition; ``path`` is the files given (the command's
    paths, which the workflow resolves, as ``raw``)."""
    from unstereo.errors import ConfigError

    given = SOURCE.given(flags, SOURCE_KEYS)
    entry = dict((settings.sources or {}).get(name) or {})
    if "kind" not in entry and "kind" not in given:
        raise click.UsageError(
            f"--kind is required (or benchmarks.sources.{name or 'NAME'}.kind in --settings)"
        )
    try:
        return SOURCE.build({**entry, "path": paths}, given)
    except ConfigError as exc:
        raise click.UsageError(f"source {name!r}: {exc}") from exc


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


def _sizes(pairs_paths: tuple[str, ...], etas: list):
    import pandas as pd

    from unstereo.unstereoeval.benchmarks.eta_filter import eta_sizes
    from unstereo.unstereoeval.eta import parse_etas, unique_labels

    frames = {}
    for path in pairs_paths:
        df = read_table(path, PAIRS)
        for name, group in df.groupby("benchmark", sort=False):
            if name in frames:
                raise InputError(f"benchmark {name!r} appears in more than one input", path=path)
            frames[name] = group
    if not frames:
        return pd.DataFrame(columns=["benchmark", "eta", "n", "fraction"])
    return eta_sizes(frames, parse_etas(unique_labels(etas)))


@group.command("sizes")
@click.argument("pairs_paths", metavar="PAIRS...", nargs=-1, required=True, type=click.Path(exists=True))
@cli_options.output("CSV/parquet table (default: print)", required=False)
@SECTION.command("etas")
def sizes_cmd(pairs_paths: tuple[str, ...], output: Path | None, settings) -> None:
    """Benchmark size after each eta (columns benchmark, eta, n, fraction)."""
    sizes = _sizes(pairs_paths, settings.etas)
    if output:
        write_table(sizes, output)
        click.echo(f"{output}: {len(sizes)} rows")
    else:
        table = sizes.pivot(index="benchmark", columns="eta", values="n").sort_index(axis=1, ascending=False)
        click.echo(table.loc[list(dict.fromkeys(sizes["benchmark"]))].to_string())


@group.command("figure")
@click.argument("pairs_paths", metavar="PAIRS...", nargs=-1, required=True, type=click.Path(exists=True))
@cli_options.output("output prefix: writes PREFIX.png, PREFIX.pdf and PREFIX.csv (its data)", kind="text")
@SECTION.command("etas")
def figure_cmd(pairs_paths: tuple[str, ...], output: str, settings) -> None:
    """Figure 2: benchmark size vs eta, one line per benchmark (PNG, PDF and the CSV data)."""
    from unstereo.unstereoeval.benchmarks.figure import plot_sizes

    prefix = Path(output)
    if prefix.suffix in (".png", ".pdf", ".csv"):
        prefix = prefix.with_suffix("")
    for path in plot_sizes(_sizes(pairs_paths, settings.etas), prefix):
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
