"""``unstereo score MODEL PAIRS -o FILE``: sentence log-likelihoods of a pair table under one model (``--texts``: of a
text table)."""

from __future__ import annotations

import click

from unstereo import cli_options

_CACHE_OPTIONS = [
    click.option(
        "--chunk-size",
        default=500,
        show_default=True,
        type=click.IntRange(1),
        help="Pairs (or texts) per chunk.",
    ),
    click.option(
        "--cache",
        "cache_path",
        default=None,
        help="Score cache file (SQLite), shared by every table scored with it: a text already scored under the same "
        "model and settings costs no forward pass. Default: $UNSTEREO_SCORE_CACHE, else score-cache.sqlite beside -o.",
    ),
    click.option("--no-cache", is_flag=True, help="Score every text, read and write no cache."),
]


def scorer_options(f):
    """The options of a command that scores tables with a model through the score cache: the model options
    (:func:`unstereo.models.request.options`: --gguf-file, --revision, --masked, --batch-size, --max-batch-size,
    --dtype, --device, --bos-policy) and --chunk-size, --cache, --no-cache, --threads, --external-dir. The command
    builds its request with :func:`unstereo.models.request.request_from_cli`."""
    for option in reversed([*_CACHE_OPTIONS, cli_options.threads, cli_options.external_dir]):
        f = option(f)
    return cli_options.request_options()(f)


#: ``--settings``: the score section (as the workflow passes it); the options given override it.
score_settings = cli_options.settings("score")


@click.command("score")
@click.argument("model")
@click.argument("pairs", type=click.Path(exists=True, dir_okay=False))
@cli_options.output("SCORES parquet to write.")
@click.option(
    "--texts",
    is_flag=True,
    help="PAIRS is a text table (id, text): write TEXT_SCORES, one row per text (id, model, logp, ntok).",
)
@click.option("--name", default=None, help="Model name for the `model` column (default: MODEL as given).")
@scorer_options
@cli_options.reference_quirks(
    "Re-fill sentences from the template with the reference code's capitalize() "
    "(docs/methods.md#quirk-1-capitalize)."
)
@score_settings
def score(
    model: str,
    pairs: str,
    output,
    texts: bool,
    name,
    chunk_size,
    reference_quirks,
    cache_path,
    no_cache,
    **model_options,
) -> None:
    """Score every pair of PAIRS (a pair table) under MODEL and write a SCORES table.

    MODEL is a model spec: a hub id (optionally @REVISION), a local Hugging Face folder, a GGUF file (converted
    once to a folder beside it) or resource:NAME/FILE.gguf (an offline resource under --external-dir).
    Output columns: pair_id, model, benchmark, logp_female, logp_male, ntok_female, ntok_male (ln p in nats, BOS
    prepended and not scored) and run metadata (model_id, model_revision, dtype, batch_size, device, bos_policy,
    package versions). Scores are written in chunks beside the output; an interrupted run resumes where it stopped.
    Every score goes into the score cache (--cache): a sentence already scored under the same model and settings,
    by this or any other table, costs no forward pass (--no-cache scores everything).

    With --texts, PAIRS is a text table (columns id, text; other columns ignored) and the output has one row per
    text: id, model, logp, ntok and the same run metadata. Each distinct text of a chunk is scored once.
    """
    if texts and reference_quirks:
        raise click.UsageError("--reference-quirks re-fills pair templates; it does not apply to --texts")
    request = cli_options.request_from_cli(model, model_options)
    request.apply_threads()
    from unstereo.scoring.cache import resolve_cache_path
    from unstereo.scoring.run import score_file

    df = score_file(
        request,
        pairs,
        output,
        texts=texts,
        name=name or model,
        chunk_size=chunk_size,
        reference_quirks=reference_quirks,
        cache=None if no_cache else resolve_cache_path(cache_path, output),
    )
    click.echo(f"{output}: {len(df)} {'texts' if texts else 'pairs'} scored with {name or model}", err=True)
