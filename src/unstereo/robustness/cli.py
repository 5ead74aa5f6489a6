"""``unstereo robustness ...``: alternate constructions of a benchmark, their scores, rank swaps and figures."""

from __future__ import annotations

from pathlib import Path

import click

from unstereo import cli_options
from unstereo.config.settings import command_seed, section
from unstereo.defaults import DEFAULT_EPS
from unstereo.unstereoeval.api import score_settings, scorer_options, scorer_request

#: The robustness section's settings (robustness.schema.yaml): construct, metrics and report get them whole as
#: ``settings`` (``--settings``, the workflow passes the section), with override flags generated from the schema.
SECTION = section("robustness")


@click.group("robustness")
def group() -> None:
    """Dataset-construction robustness ("Tail wagging", docs/methods.md#dataset-construction-robustness): how
    much a bias score moves when the benchmark is rebuilt harmlessly (clauses, adjectives, synonyms, negation,
    sub-samples)."""


@group.command("construct")
@click.argument("pairs", type=cli_options.EXISTING_FILE)
@cli_options.output("Directory: writes DIR/{construction}/pairs.parquet per construction.", kind="dir")
@click.option(
    "--delta",
    type=cli_options.EXISTING_FILE,
    default=None,
    help="Delta table: recompute MaxPMI of the constructed templates (else they keep the original pair's).",
)
@click.option(
    "--release-dir",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    default=None,
    help="reference/tail-wagging/winogender/data, for the release:FILE constructions (the released files).",
)
@SECTION.command("constructions", "adjectives", "synonyms")
def construct(pairs: Path, output: Path, delta, release_dir, settings) -> None:
    """Build the section's constructions of the pair table PAIRS (``original`` always first; pair ids: the original
    id plus @construction) into DIR/NAME/pairs.parquet (``release:FILE`` into DIR/release_FILE/)."""
    from unstereo.robustness.build import construction_dir, construction_names, with_original
    from unstereo.robustness.constructions import load_synonyms
    from unstereo.robustness.run import construct_file

    names = with_original(settings.constructions)
    construction_names(names)
    syn = load_synonyms(settings.synonyms) if "synonyms" in names else None
    for name in names:
        out = Path(output) / construction_dir(name) / "pairs.parquet"
        df = construct_file(
            pairs,
            name,
            out,
            adjectives=list(settings.adjectives) if settings.adjectives else None,
            synonyms=syn,
            delta=delta,
            release_dir=release_dir,
        )
        click.echo(f"{out}: {len(df)} pairs, {int(df['changed'].sum())} changed", err=True)


@group.command("score")
@click.argument("model")
@click.argument("pairs", nargs=-1, required=True, type=cli_options.EXISTING_FILE)
@cli_options.output("SCORES parquet of every construction.")
@click.option("--name", required=True, help="Model name for the `model` column.")
@cli_options.output(
    "Write the forward-pass cost per construction here (parquet).",
    flag="--cost",
    dest="cost_out",
    required=False,
    short=None,
)
@scorer_options
@score_settings
def score(model, pairs, output, name, cost_out, cache_path, no_cache, settings, **model_options) -> None:
    """Score the construction tables PAIRS (of one benchmark) under MODEL, through the score cache."""
    request = scorer_request(model, settings, model_options)
    request.apply_threads()
    from unstereo.robustness.run import score_constructions
    from unstereo.scoring.cache import resolve_cache_path

    _, cost = score_constructions(
        request,
        list(pairs),
        output,
        name=name,
        cache=None if no_cache else resolve_cache_path(cache_path, output),
        chunk_size=settings.chunk_size,
        cost_out=cost_out,
        reference_quirks=settings.reference_quirks,
    )
    click.echo(
        f"{output}: {int(cost['texts'].sum())} sentences, {int(cost['forward_passes'].sum())} forward passes",
        err=True,
    )


@group.command("metrics")
@cli_options.input_files("--scores", "scores_files", "SCORES tables (robustness score).", required=True)
@cli_options.input_files("--pairs", "pairs_files", "Construction pair tables.", required=True)
@cli_options.input_files("--cost", "cost_files", "Cost tables to gather into cost.parquet.")
@cli_options.output(
    "Directory for scores.parquet, rank_swaps.parquet, rankings.parquet, summary.parquet.", kind="dir"
)
@cli_options.eps(DEFAULT_EPS)
@cli_options.eps_grid
@SECTION.command("etas", "fractions", "trials", "seed", "metric")
def metrics(scores_files, pairs_files, cost_files, output, eps, eps_grid, settings) -> None:
    """US, PD, AuFC per (model, benchmark, construction, trial, eta), their distributions, rankings and swaps."""
    import pandas as pd

    from unstereo.robustness import stats
    from unstereo.robustness.run import concat_pairs, gather_cost, robustness_scores, sampling_cost
    from unstereo.robustness.schemas import COST, RANK_SWAPS, RANKINGS, SUMMARY
    from unstereo.robustness.schemas import SCORES as ROBUSTNESS_SCORES
    from unstereo.tables import SCORES, read_table, write_table

    scores = pd.concat([read_table(p, SCORES) for p in scores_files], ignore_index=True)
    pairs = pd.concat([concat_pairs([p]) for p in pairs_files], ignore_index=True)
    table = robustness_scores(
        scores,
        pairs,
        etas=tuple(settings.etas),
        fractions=tuple(settings.fractions),
        trials=settings.trials,
        seed=command_seed(settings),
        eps=eps,
        eps_grid=eps_grid,
    )
    metric = settings.metric
    output = Path(output)
    write_table(table, output / "scores.parquet", ROBUSTNESS_SCORES)
    write_table(stats.rank_swaps(table, metric), output / "rank_swaps.parquet", RANK_SWAPS)
    write_table(stats.rankings(table, metric), output / "rankings.parquet", RANKINGS)
    write_table(stats.summary(table), output / "summary.parquet", SUMMARY)
    if cost_files:
        cost = gather_cost([*(read_table(p, COST) for p in cost_files), sampling_cost(table)])
        write_table(cost, output / "cost.parquet", COST)
    click.echo(f"{output}: {len(table)} score rows", err=True)


@group.command("report")
@click.argument("results", type=click.Path(exists=True, file_okay=False, path_type=Path))
@cli_options.output("Directory for the figures and HTML tables.", kind="dir")
@SECTION.command("metric")
def report(results: Path, output: Path, settings) -> None:
    """Figures 3 and 4 (constructions.png, subsampling.png) and HTML tables from a metrics directory RESULTS."""
    metric = settings.metric
    from unstereo.robustness.figures import html_table, plot_constructions, plot_subsampling
    from unstereo.tables import read_table

    scores = read_table(results / "scores.parquet")
    plot_constructions(scores, output / "constructions.png", metric)
    plot_subsampling(scores, output / "subsampling.png", metric)
    summary = read_table(results / "summary.parquet")
    html_table(
        summary[summary["metric"] == metric],
        output / "summary.html",
        f"{metric} per construction (mean and 95 % interval over trials)",
    )
    html_table(
        read_table(results / "rank_swaps.parquet"),
        output / "rank_swaps.html",
        "How often two models swap order",
    )
    cost = results / "cost.parquet"
    if cost.exists():
        html_table(
            read_table(cost), output / "cost.html", "Forward passes per construction vs a naive rescoring"
        )
    click.echo(f"{output}: figures and tables written", err=True)


@group.command("release")
@click.argument("data_dir", type=click.Path(exists=True, file_okay=False, path_type=Path))
@cli_options.output("CSV of the match rate per file.")
@click.option("--file", "names", multiple=True, help="Release files to rebuild (default: all).")
def release(data_dir: Path, output: Path, names) -> None:
    """Rebuild the released Winogender constructions (DATA_DIR = reference/tail-wagging/winogender/data) from its
    original templates and compare them row for row; print every difference no known cause explains."""
    import pandas as pd

    from unstereo.robustness.release import EXPLANATIONS, RELEASE_FILES, rebuild
    from unstereo.tables import write_table

    results = rebuild(data_dir, tuple(names) or RELEASE_FILES)
    table = pd.DataFrame([r.as_row() for r in results]).fillna(0)
    write_table(table, output)
    click.echo(table.to_string(index=False))
    for key, text in EXPLANATIONS.items():
        click.echo(f"explained:{key}: {text}")
    for r in results:
        for sid, ours, theirs in r.unexplained:
            click.echo(f"UNEXPLAINED {r.name} {sid}\n  ours:    {ours}\n  release: {theirs}")


@group.command("release-pairs")
@click.argument("file", type=cli_options.EXISTING_FILE)
@cli_options.output("PAIRS parquet.")
@click.option("--benchmark", default="Winogender", show_default=True)
def release_pairs(file: Path, output: Path, benchmark: str) -> None:
    """A released construction FILE (e.g. object_clause_back.tsv) as a fixed alternative: a PAIRS table."""
    from unstereo.robustness.release import load_release
    from unstereo.tables import PAIRS, write_table

    df = load_release(file, benchmark)
    write_table(df, output, PAIRS)
    click.echo(f"{output}: {len(df)} pairs", err=True)
