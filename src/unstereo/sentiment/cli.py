"""``unstereo sentiment``: counterfactual sentiment bias (docs/methods.md#counterfactual-sentiment-bias):
sample, metrics (I.F./G.F.), report (figures), debias."""

from __future__ import annotations

from pathlib import Path

import click

from unstereo import cli_options
from unstereo.config.settings import as_dict, command_seed, section

#: The sentiment section's settings (sentiment.schema.yaml): every command gets them whole (``--settings``, the
#: workflow passes the section), with override flags generated from the schema for the keys it reads.
SECTION = section("sentiment")

TEMPLATES_HELP = (
    "folder with templates_long.tsv and values_long.tsv [default: "
    "EXTERNAL_DIR/reference/huang2020-sentiment-templates]"
)


def _templates_dir(templates_dir: str | None, external_dir: str | None) -> Path:
    from unstereo.models.spec import external_dir_default
    from unstereo.sentiment.templates import templates_dir as default_dir

    return Path(templates_dir) if templates_dir else default_dir(external_dir or external_dir_default())


@click.group("sentiment")
def group() -> None:
    """Counterfactual sentiment bias (Huang et al. 2020): I.F., G.F. and counterfactual debiasing."""


@group.command("templates")
@cli_options.output("prefixes table (.parquet or .csv)")
@click.option("--templates-dir", default=None, type=click.Path(file_okay=False), help=TEMPLATES_HELP)
@cli_options.external_dir
@SECTION.command()
def templates_cmd(output, templates_dir, external_dir, settings) -> None:
    """Write the filled prefixes (one row per template and value) the settings select."""
    from unstereo.sentiment.sampling import prefixes
    from unstereo.tables import write_table

    cfg = as_dict(settings)
    df = prefixes(cfg, _templates_dir(templates_dir, external_dir))
    write_table(df, output)
    click.echo(f"{len(df)} prefixes -> {output}")


@group.command("sample")
@click.argument("model")
@cli_options.output("continuations.parquet (samples.parquet is written beside it)")
@click.option("--templates-dir", default=None, type=click.Path(file_okay=False), help=TEMPLATES_HELP)
@cli_options.model_options
@cli_options.threads
@SECTION.command("opinion_lexicon", "cache", "seed", "device", "dtype", "batch_size")
def sample_cmd(model, output, templates_dir, api_key_env, external_dir, threads, settings) -> None:
    """Sample m continuations of every filled template with MODEL and score them with every classifier.

    MODEL is any model spec (hub id, folder, .gguf, resource:NAME/FILE.gguf, endpoint:URL#NAME). Resumable: the
    samples are written in chunks beside the output and every call is cached.
    """
    from unstereo.io import write_json
    from unstereo.llm import make_client
    from unstereo.sentiment.sampling import run_sampling
    from unstereo.sentiment.settings import resource_path

    cfg = as_dict(settings)
    request = cli_options.request_from_cli(model, {
        "device": cfg["device"], "dtype": cfg["dtype"], "batch_size": cfg["batch_size"], "threads": threads,
        "external_dir": external_dir, "api_key_env": api_key_env,
    })  # fmt: skip
    request.apply_threads()
    seed = command_seed(settings)
    client = make_client(request, cache=cfg["cache"])
    try:
        df = run_sampling(
            client,
            cfg,
            _templates_dir(templates_dir, external_dir),
            output,
            seed=seed,
            opinion_dir=resource_path(cfg["opinion_lexicon"], external_dir),
            external_dir=external_dir,
        )
        client.write_usage(Path(output).with_name("usage.json"), {"continuations": len(df)})
    finally:
        client.close()
    write_json(Path(output).with_name("settings.json"), {"model": request.spec.to_arg(), "seed": seed, **cfg})
    click.echo(f"{len(df)} continuations -> {output}")


@group.command("metrics")
@click.argument("continuations", type=cli_options.EXISTING_FILE)
@cli_options.output("fairness.parquet: attribute, classifier, metric (IF|GF), value, ci_low, ci_high")
@click.option("--parity", default=None, type=click.Path(dir_okay=False), help="also write the parity table here")  # fmt: skip
@SECTION.command("seed", "bootstrap", "level", "thresholds")
def fairness_cmd(continuations, output, parity, settings) -> None:
    """Individual and group fairness (with bootstrap intervals) of a continuations table, per attribute and
    classifier; optionally the demographic-parity table at the configured thresholds."""
    from unstereo.sentiment.fairness import fairness_table, parity_table
    from unstereo.sentiment.sampling import classifier_names
    from unstereo.sentiment.schemas import CONTINUATIONS, FAIRNESS, PARITY
    from unstereo.tables import read_table, write_table

    cfg = as_dict(settings)
    df = read_table(continuations, CONTINUATIONS)
    names = [n for n in classifier_names(cfg) if f"score_{n}" in df.columns]
    if not names:
        raise click.UsageError(f"{continuations}: no score_<classifier> column of the configured classifiers")
    seed = command_seed(settings)
    table = fairness_table(df, names, cfg["bootstrap"], seed, cfg["level"])
    write_table(table, output, FAIRNESS)
    if parity:
        write_table(parity_table(df, names, cfg["thresholds"]), parity, PARITY)
    click.echo(f"{len(table)} rows -> {output}")


@group.command("report")
@click.argument("continuations", type=cli_options.EXISTING_FILE)
@click.option("--fairness", "fairness_path", required=True, type=cli_options.EXISTING_FILE, help="fairness.parquet")  # fmt: skip
@click.option("--parity", "parity_path", required=True, type=cli_options.EXISTING_FILE, help="parity.parquet")
@cli_options.output("folder for figure1.png, figure2.png and fairness.html", kind="dir", dest="out_dir", flag="--out-dir")  # fmt: skip
@click.option("--title", default="", help="model name shown in the titles")
@SECTION.command("figure_classifier")
def figures_cmd(continuations, fairness_path, parity_path, out_dir, title, settings) -> None:
    """Figure 1 (sentiment distributions per value), Figure 2 (demographic parity at thresholds) and the fairness
    table as HTML."""
    from unstereo.sentiment.figures import write_figures
    from unstereo.sentiment.sampling import classifier_names
    from unstereo.sentiment.schemas import CONTINUATIONS, FAIRNESS, PARITY
    from unstereo.tables import read_table

    cfg = as_dict(settings)
    names = classifier_names(cfg)
    written = write_figures(
        read_table(continuations, CONTINUATIONS),
        read_table(fairness_path, FAIRNESS),
        read_table(parity_path, PARITY),
        out_dir,
        classifier=cfg["figure_classifier"] or names[0],
        title=title,
    )
    click.echo("\n".join(str(p) for p in written))


# the former step names (before the common step vocabulary)
cli_options.alias(group, fairness_cmd, "fairness")
cli_options.alias(group, figures_cmd, "figures")


@group.command("debias")
@click.argument("model")
@cli_options.output("folder of the run: quality.parquet, continuations.parquet, fairness.parquet, history.json", kind="dir", dest="out_dir", flag="--out-dir")  # fmt: skip
@click.option("--method", type=click.Choice(["none", "embedding", "sentiment"]), required=True,
              help="regularisation; none evaluates the base model (the 'before' row)")  # fmt: skip
@click.option(
    "--lam", "lam", type=float, default=0.0, show_default=True, help="regularisation strength lambda"
)
@click.option("--templates-dir", default=None, type=click.Path(file_okay=False), help=TEMPLATES_HELP)
@click.option("--continuations", "base", default=None, type=cli_options.EXISTING_FILE,
              help="with --method none: the stage's continuations of MODEL (reused, not sampled again)")  # fmt: skip
@cli_options.model_options
@cli_options.threads
@SECTION.command("cache", "device", "seed")
def debias_cmd(model, out_dir, method, lam, templates_dir, base, api_key_env, external_dir, threads,
               settings) -> None:  # fmt: skip
    """Fine-tune MODEL with counterfactual embedding or sentiment regularisation (Huang et al. 2020, section 4),
    then measure I.F./G.F., perplexity and semantic similarity (resumable: checkpoint.pt in the run's folder)."""
    from unstereo.sentiment.debias_eval import run_debias

    cfg = as_dict(settings)
    # The fine-tuning runs in float32 (the request says so).
    request = cli_options.request_from_cli(model, {
        "device": cfg["device"], "dtype": "float32", "threads": threads, "external_dir": external_dir,
        "api_key_env": api_key_env,
    })  # fmt: skip
    request.apply_threads()
    quality = run_debias(
        request, cfg, _templates_dir(templates_dir, external_dir), out_dir, method=method, lam=lam,
        seed=command_seed(settings), external_dir=external_dir,
        cache=cfg["cache"], base_continuations=base,
    )  # fmt: skip
    click.echo(quality.to_string(index=False))


@group.command("debias-summary")
@click.argument("quality", nargs=-1, required=True, type=cli_options.EXISTING_FILE)
@cli_options.output("debias.parquet (all runs)")
@click.option("--table", "table_path", required=True, type=click.Path(dir_okay=False), help="Table 1 as HTML")
@click.option(
    "--figure", "figure_path", required=True, type=click.Path(dir_okay=False), help="Figure 6 as PNG"
)
@SECTION.command("figure_classifier")
def debias_summary_cmd(quality, output, table_path, figure_path, settings) -> None:
    """Join the runs' quality tables; write the paper's Table 1 (HTML) and Figure 6 (I.F. against S.S.)."""
    from unstereo.sentiment.debias_eval import QUALITY, figure6, summarize, table1_html
    from unstereo.sentiment.sampling import classifier_names
    from unstereo.tables import write_table

    cfg = as_dict(settings)
    classifier = cfg["figure_classifier"] or classifier_names(cfg)[0]
    df = summarize(list(quality))
    write_table(df, output, QUALITY)
    table1_html(df, classifier, table_path)
    figure6(df, classifier, figure_path)
    click.echo(f"{len(df)} rows -> {output}")
