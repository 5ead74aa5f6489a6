"""``unstereo report ...``: ingest the released scores, build tables and figures, check against the paper."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import click

from unstereo import cli_options
from unstereo.cli_options import EXISTING_FILE
from unstereo.config.settings import section
from unstereo.defaults import PAPER_BENCHMARKS
from unstereo.io import write_text
from unstereo.log import get_logger
from unstereo.models.registry import load_registry
from unstereo.tables import read_table, write_table

log = get_logger("unstereoeval.report.cli")

#: The report section's settings (report.schema.yaml): `compare`, `ingest`, `tables` and `figures` get them whole as
#: ``settings`` (``--settings``; the workflow passes the section to `compare`, the others read only the registry, a
#: path the rules give), with override flags generated from the schema (its files among them).
SECTION = section("report")


@click.group("report")
def group() -> None:
    """Tables, figures and the reproduction check of the paper."""


@group.command("ingest")
@click.argument("results_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@click.option(
    "--benchmark",
    required=True,
    type=click.Choice(PAPER_BENCHMARKS),
    help="which released benchmark to read",
)
@cli_options.output("SCORES parquet")
@SECTION.command("registry")
def ingest(results_dir: Path, benchmark: str, output: Path, settings) -> None:
    """Read the released per-model score files under RESULTS_DIR (``unstereo-eval/results``) into one SCORES table.

    Model ids come from the registry's reference_name -> id mapping (others: ``__`` -> ``/``). All rows are kept
    (for USE-k also the pairs the naturalness filter removed; the pair table decides what is scored).
    """
    from unstereo.models.registry import name_map
    from unstereo.unstereoeval.metrics.released import ingest_released

    table = ingest_released(results_dir, benchmark, name_map(load_registry(settings.registry)))
    write_table(table, output, "scores")
    log.info("wrote %d rows to %s", len(table), output)


@group.command("tables")
@click.argument("metrics_file", type=EXISTING_FILE)
@cli_options.output(kind="dir", dest="out_dir", flag="--out-dir")
@click.option(
    "--paper/--generic",
    default=False,
    show_default=True,
    help="the paper's Tables 1-3 and 8-22, or a table per registered metric (US, PD, AuFC, ...) and eta and a "
    "gap table for any models",
)
@SECTION.command("registry")
def tables(metrics_file: Path, out_dir: Path, paper: bool, settings) -> None:
    """Write each table of METRICS_FILE as CSV (full precision), Markdown, LaTeX and HTML into OUT_DIR."""
    from unstereo.render.formats import write_table_files
    from unstereo.unstereoeval.report.table_builders import generic_tables, paper_tables

    metrics = read_table(metrics_file, "metrics")
    reg = load_registry(settings.registry)
    built = paper_tables(metrics, reg) if paper else generic_tables(metrics, reg)
    for table in built.values():
        write_table_files(table, out_dir)
    log.info("wrote %d tables to %s", len(built), out_dir)


@group.command("figures")
@click.argument("curves_file", type=EXISTING_FILE)
@cli_options.output("stem: writes .png .pdf .csv")
@click.option("--eta", default="inf", show_default=True, help="which eta's curves to draw")
@click.option("--title", default=None, help="figure title")
@SECTION.command("registry")
def figures(curves_file: Path, output: Path, eta: str, title: str | None, settings) -> None:
    """Fairness curves (US vs eps) per model and benchmark, deduplicated models dashed (the paper's Figure 6)."""
    from unstereo.unstereoeval.eta import parse_eta
    from unstereo.unstereoeval.report.figures import figure_data, plot_fairness_curves

    curves = read_table(curves_file)
    data = figure_data(curves, load_registry(settings.registry), parse_eta(eta))
    stem = output.with_suffix("") if output.suffix in (".png", ".pdf", ".csv") else output
    paths = plot_fairness_curves(data, stem, title)
    log.info("wrote %s", ", ".join(map(str, paths)))


@group.command("table7")
@click.argument(
    "props_paths", metavar="PROPERTIES.json...", nargs=-1, required=True, type=click.Path(exists=True)
)
@click.option("-o", "--out-dir", required=True, type=click.Path(file_okay=False), help="writes table07.*")
def table7_cmd(props_paths: tuple[str, ...], out_dir: str) -> None:
    """Table 7 of the paper (benchmark properties) from the JSON files of `benchmarks card`."""
    from unstereo.render.formats import write_table_files
    from unstereo.unstereoeval.benchmarks.properties import read_properties
    from unstereo.unstereoeval.report.table7 import properties_table

    for path in write_table_files(properties_table(read_properties(props_paths)), out_dir):
        click.echo(str(path))


@group.command("generation")
@click.argument(
    "generate_dirs",
    metavar="GENERATE_DIR...",
    nargs=-1,
    required=True,
    type=click.Path(exists=True, file_okay=False),
)
@click.option(
    "-o", "--out-dir", required=True, type=click.Path(file_okay=False),
    help="writes generation.html and generation_filters.{csv,md,tex,html}",
)  # fmt: skip
def generation_cmd(generate_dirs: tuple[str, ...], out_dir: str) -> None:
    """The generation section: counts of every filter and the kept pairs of the generate stage's benchmark folders
    (results/generate/USE-k, each with summary.json and full.parquet)."""
    from unstereo.errors import InputError
    from unstereo.render.formats import write_table_files
    from unstereo.unstereoeval.report.generation import filter_table, generation_html, read_generate_dir

    dirs = {}
    for d in generate_dirs:
        if not (Path(d) / "summary.json").is_file():
            raise InputError("not a generate benchmark folder (no summary.json)", path=d)
        summary, full = read_generate_dir(d)
        dirs[summary.get("benchmark", Path(d).name)] = (summary, full)
    for path in write_table_files(filter_table({b: s for b, (s, _) in dirs.items()}), out_dir):
        click.echo(str(path))
    page = Path(out_dir) / "generation.html"
    write_text(page, generation_html(dirs))
    click.echo(str(page))


@group.command("compare")
@click.argument("metrics_file", type=EXISTING_FILE)
@click.option(
    "--clean",
    type=EXISTING_FILE,
    default=None,
    help="metrics computed with the reference switches off, summarised for contrast",
)
@cli_options.output("reproduction.md")
@cli_options.output("every cell as CSV", flag="--csv", dest="csv_out", required=False, short=None)
@cli_options.output(
    "the summary (cells compared, within rounding, explained, unexplained) as reStructuredText",
    flag="--summary",
    dest="summary_out",
    required=False,
    short=None,
)
@cli_options.input_files(
    "--properties",
    "properties",
    "properties.json of `benchmarks card` (repeatable): adds Table 7 to the comparison",
)
@SECTION.command("published", "known_differences", "registry", "strict")
def compare_cmd(metrics_file, clean, output, csv_out, summary_out, properties, settings) -> None:
    """Compare every published number with the reproduced cell; write reproduction.md (and the cells as CSV)."""
    from unstereo.unstereoeval.report.compare import (
        compare,
        load_known,
        load_published,
        reproduction_markdown,
        stale_known,
        summary_rst,
        without_table,
    )
    from unstereo.unstereoeval.report.table_builders import paper_tables

    reg = load_registry(settings.registry)
    pub, kn = load_published(settings.published), load_known(settings.known_differences)
    metrics = read_table(metrics_file, "metrics")
    extra = {}
    if properties:
        from unstereo.unstereoeval.benchmarks.properties import read_properties
        from unstereo.unstereoeval.report.table7 import properties_table

        extra[7] = properties_table(read_properties(properties))
    else:  # no properties given: Table 7 (its published cells and known differences) is not part of this comparison
        pub, kn = without_table(pub, kn, 7)
    result = compare({**paper_tables(metrics, reg), **extra}, pub, kn)
    clean_result = None
    if clean is not None:
        clean_result = compare({**paper_tables(read_table(clean, "metrics"), reg), **extra}, pub, kn)
    head = metrics[
        (metrics["model"] == "EleutherAI/gpt-j-6b")
        & (metrics["benchmark"] == "USE-5")
        & (metrics["eta"] == math.inf)
    ]
    headline = None
    if len(head):
        h = head.iloc[0]
        headline = {
            "US": f"{h['us']:.4f} %",
            "std": f"{h['us_std']:.4f}",
            "PD": f"{h['pd']:+.2f}",
            "AuFC": f"{h['aufc']:.5f}",
        }
    write_text(output, reproduction_markdown(result, clean_result, headline))
    if csv_out is not None:
        write_table(result, csv_out)
    if summary_out is not None:
        write_text(summary_out, summary_rst(result))
    within = int(result["within_rounding"].sum())
    unexplained = int((result["diagnosis"] == "unexplained").sum())
    stale = stale_known(result, kn)
    log.info("%d of %d cells within rounding; %d off and unexplained", within, len(result), unexplained)
    for k in stale.itertuples(index=False):
        log.warning("known difference explains no cell: table %s, %s, %s (expects %s)", k.table, k.row, k.column,
                    k.reproduced)  # fmt: skip
    if settings.strict and (unexplained or len(stale)):
        raise click.ClickException(
            f"{unexplained} published number(s) not reproduced and unexplained, {len(stale)} known difference(s) "
            f"that explain no cell; see {output}"
        )


def _config_options(command: Any) -> Any:
    """``--configfile`` and ``--config-json`` (read by :func:`_config_arg`) on a report command that reads the
    workflow's config."""
    command = click.option(
        "--config-json",
        help="the validated config as JSON instead of --configfile (what the workflow's rule passes)",
    )(command)
    return click.option(
        "--configfile",
        type=EXISTING_FILE,
        help="the workflow's config (validated, defaults filled in); says which methods ran and where their tables are",
    )(command)


def _config_arg(configfile: Path | None, config_json: str | None) -> dict:
    """The config of ``--configfile`` (validated, defaults filled in) or ``--config-json``: exactly one of them."""
    import json

    from unstereo.config import load_config

    if (configfile is None) == (config_json is None):
        raise click.UsageError("give exactly one of --configfile and --config-json")
    if configfile is not None:
        return load_config(configfile)
    try:
        return json.loads(config_json)
    except json.JSONDecodeError as exc:
        raise click.BadParameter(f"not JSON: {exc}", param_hint="--config-json") from exc


@group.command("model-card")
@_config_options
@cli_options.output("MODEL_CARD parquet (results/model_card.parquet)")
@cli_options.output(
    "MODEL_CARD_TAU parquet: Kendall tau-b between every two methods' model rankings",
    flag="--tau",
    dest="tau_out",
    short=None,
)
@cli_options.output(
    "write per model {model}.html, .md and .png and the tau table (tau.html, tau.md) here",
    kind="dir",
    flag="--pages-dir",
    dest="pages_dir",
    required=False,
    short=None,
)
@click.option("--model", "models", multiple=True,
              help="models to write pages for (repeatable; default every model on the card)")  # fmt: skip
@cli_options.output(
    "MODEL_CARD_TESTS parquet: paired permutation or bootstrap tests between the models, Holm-adjusted; "
    "with --pages-dir also comparisons.html/.md (findings, tests, agreement)",
    flag="--tests",
    dest="tests_out",
    required=False,
    short=None,
)
def model_card(
    configfile: Path | None,
    config_json: str | None,
    output: Path,
    tau_out: Path,
    pages_dir: Path | None,
    models: tuple[str, ...],
    tests_out: Path | None,
) -> None:
    """The cross-method model card: every enabled method's headline metric per model with its interval, the
    models' rank per metric (1 = most biased) and Kendall's tau-b between the methods' rankings."""
    from unstereo.model_card.card import enabled_methods, write_card

    config = _config_arg(configfile, config_json)
    if not enabled_methods(config):
        raise click.ClickException(
            "no method with headline metrics is enabled in the config: nothing to card"
        )
    card, tau = write_card(config, output, tau_out, pages_dir, list(models) if models else None, tests_out)
    log.info("wrote %d headline rows of %d model(s) to %s, %d tau row(s) to %s", len(card), card["model"].nunique(),
             output, len(tau), tau_out)  # fmt: skip


@group.command("occupations")
@_config_options
@click.option("--stats", "stats", required=True, type=EXISTING_FILE,
              help="Winogender's occupations-stats.tsv (the reference resource: winogender/data/occupations-stats.tsv)")  # fmt: skip
@cli_options.output("OCCUPATION_LEANS parquet (results/occupation_leans.parquet; a CSV is written beside it)")
@cli_options.output(
    "OCCUPATION_CORRELATIONS parquet: the leans against the share of women and against each other",
    flag="--correlations",
    dest="corr_out",
    short=None,
)
@cli_options.output(
    "write occupations.html, .md and .png (findings, figure, tables) here",
    kind="dir",
    flag="--pages-dir",
    dest="pages_dir",
    required=False,
    short=None,
)
def occupations(
    configfile: Path | None, config_json: str | None, stats: Path, output: Path, corr_out: Path,
    pages_dir: Path | None,
) -> None:  # fmt: skip
    """Agreement on occupations: every method's per-occupation gender lean from its per-item outputs, correlated
    with the share of women (BLS, Bergsma) and between methods (docs/methods.md#agreement-on-occupations)."""
    from unstereo.model_card.occupations import write

    config = _config_arg(configfile, config_json)
    leans, corr = write(config, stats, output, corr_out, pages_dir)
    log.info("wrote %d lean rows (%d models, %d occupations or terms) to %s, %d correlations to %s", len(leans),
             leans["model"].nunique(), leans["occupation"].nunique(), output, len(corr), corr_out)  # fmt: skip


@group.command("model-card-variants")
@_config_options
@cli_options.output(
    "VARIANT_CHANGES parquet: each model variant against its base (results/model_card_variants.parquet)"
)
@cli_options.output(
    "VARIANT_DOSE parquet: dose-response over strength", flag="--dose", dest="dose_out", short=None
)
@cli_options.output(
    "VARIANT_TOGETHER parquet: which metrics move under each intervention",
    flag="--together",
    dest="together_out",
    short=None,
)
@cli_options.output(
    "VARIANT_OCCUPATIONS parquet: the per-occupation slopes of each variant against its base's (empty without --leans)",
    flag="--occupations",
    dest="occupations_out",
    short=None,
)
@cli_options.output(
    "write variants.html, .md and .png (findings, tables, figure) here", kind="dir", flag="--pages-dir",
    dest="pages_dir", short=None,
)  # fmt: skip
@click.option("--leans", type=EXISTING_FILE, default=None,
              help="OCCUPATION_LEANS parquet (unstereo report occupations) for the per-occupation comparison")  # fmt: skip
@click.option("--perplexity", type=EXISTING_FILE, default=None,
              help="the variants stage's perplexity.parquet: each variant's perplexity against its base, in the findings")  # fmt: skip
def model_card_variants(
    configfile: Path | None, config_json: str | None, output: Path, dose_out: Path, together_out: Path,
    occupations_out: Path, pages_dir: Path, leans: Path | None, perplexity: Path | None,
) -> None:  # fmt: skip
    """Model variants against their bases: every headline metric of the card, the card's paired tests (Holm),
    dose-response over strength, which metrics move together, and the per-occupation leans
    (docs/methods.md#variants-against-their-bases)."""
    from unstereo.model_card.variant_page import write

    config = _config_arg(configfile, config_json)
    changes = write(config, output, dose_out, together_out, occupations_out, pages_dir, leans, perplexity)
    log.info("wrote %d variant change row(s) of %d variant(s) to %s", len(changes), changes["variant"].nunique(),
             output)  # fmt: skip
