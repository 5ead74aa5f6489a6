"""``unstereo score MODEL PAIRS -o FILE``: sentence log-likelihoods of a pair table under one model (``--texts``: of a
text table)."""

from __future__ import annotations

import click

from unstereo import cli_options
from unstereo.config.settings import section, with_options

#: The score section's settings (score.schema.yaml): ``unstereo score`` and ``unstereo robustness score`` get them
#: whole as ``settings`` (``--settings``, the workflow passes the section with the model entry's options folded in).
SECTION = section("score")
#: The keys a scoring command reads from the section (their flags generated from the schema).
SCORER_KEYS = (
    "batch_size",
    "max_batch_size",
    "dtype",
    "device",
    "bos_policy",
    "chunk_size",
    "reference_quirks",
)

_CACHE_OPTIONS = [
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
    """The options of a command that scores tables with a model through the score cache, beside the section's
    (:data:`score_settings`): the model options the section does not hold (--gguf-file, --revision, --masked:
    :func:`unstereo.cli_options.request_options`), --cache, --no-cache, --threads, --external-dir. The command
    builds its request with :func:`scorer_request`."""
    f = with_options(f, [*_CACHE_OPTIONS, cli_options.threads, cli_options.external_dir])
    return cli_options.request_options(section=SECTION)(f)


#: ``--settings`` (the score section, the model entry's ``revision`` and ``masked`` folded in by the rule) and the
#: flags of :data:`SCORER_KEYS`; the command gets the settings object whole.
score_settings = SECTION.command(*SCORER_KEYS, entry=("revision", "masked"))


def scorer_request(model: str, settings, options: dict):
    """The request of a scoring command: MODEL, the section's model keys, the command's own model options
    (:func:`unstereo.cli_options.request_from_settings`)."""
    return cli_options.request_from_settings(model, settings, options, SECTION)


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
@score_settings
def score(
    model: str, pairs: str, output, texts: bool, name, cache_path, no_cache, settings, **model_options
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
    reference_quirks = settings.reference_quirks
    if texts and reference_quirks:
        raise click.UsageError("--reference-quirks re-fills pair templates; it does not apply to --texts")
    request = scorer_request(model, settings, model_options)
    request.apply_threads()
    from unstereo.scoring.cache import resolve_cache_path
    from unstereo.scoring.run import score_file

    df = score_file(
        request,
        pairs,
        output,
        texts=texts,
        name=name or model,
        chunk_size=settings.chunk_size,
        reference_quirks=reference_quirks,
        cache=None if no_cache else resolve_cache_path(cache_path, output),
    )
    click.echo(f"{output}: {len(df)} {'texts' if texts else 'pairs'} scored with {name or model}", err=True)
