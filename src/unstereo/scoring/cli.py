"""``unstereo score MODEL PAIRS -o FILE``: sentence log-likelihoods of a pair table under one model (``--texts``: of a
text table)."""

from __future__ import annotations

import click

from .. import cli_options

_SCORER_OPTIONS = [
    click.option(
        "--gguf-file", default=None, help="GGUF file inside MODEL (a folder); or pass MODEL as a .gguf path."
    ),
    click.option("--revision", default=None, help="Hub revision (branch, tag or commit) of MODEL."),
    click.option("--masked", is_flag=True, help="MODEL is a masked LM: score by pseudo-log-likelihood."),
    cli_options.batch_size,
    click.option(
        "--max-batch-size",
        default=None,
        type=click.IntRange(1),
        help="Starting batch size of 'auto' (default: 32 on CPU, 128 on CUDA).",
    ),
    click.option(
        "--dtype",
        default="auto",
        show_default=True,
        type=click.Choice(["auto", "float32", "bfloat16", "float16"]),
        help="Weights dtype; auto = float32 on CPU, bfloat16 on GPU. Log-probs are always computed in fp32.",
    ),
    click.option(
        "--device", default="auto", show_default=True, help="auto (cuda > mps > cpu), cpu, cuda, cuda:1, mps."
    ),
    click.option(
        "--chunk-size",
        default=500,
        show_default=True,
        type=click.IntRange(1),
        help="Pairs (or texts) per chunk.",
    ),
    click.option(
        "--bos-policy",
        default="auto",
        show_default=True,
        type=click.Choice(["auto", "bos", "eos", "none"]),
        help="Token before each sentence: auto = BOS, else EOS, else none (first token not scored).",
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
    """The model and scorer options of ``unstereo score`` (shared by every command that scores with a model):
    --gguf-file, --revision, --masked, --batch-size, --max-batch-size, --dtype, --device, --chunk-size,
    --bos-policy, --cache, --no-cache."""
    for option in reversed(_SCORER_OPTIONS):
        f = option(f)
    return f


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
@cli_options.threads
@cli_options.external_dir
def score(
    model: str,
    pairs: str,
    output,
    texts: bool,
    name,
    gguf_file,
    revision,
    masked,
    batch_size,
    max_batch_size,
    dtype,
    device,
    chunk_size,
    bos_policy,
    reference_quirks,
    cache_path,
    no_cache,
    threads,
    external_dir,
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
    if threads:
        import torch

        torch.set_num_threads(threads)
    from .cache import resolve_cache_path
    from .run import score_file

    spec = cli_options.resolve_cli_model(model, None, external_dir, gguf_file=gguf_file, revision=revision)
    df = score_file(
        spec,
        pairs,
        output,
        texts=texts,
        name=name or model,
        masked=masked,
        batch_size=batch_size,
        max_batch_size=max_batch_size,
        dtype=dtype,
        device=device,
        chunk_size=chunk_size,
        bos_policy=bos_policy,
        reference_quirks=reference_quirks,
        cache=None if no_cache else resolve_cache_path(cache_path, output),
    )
    click.echo(f"{output}: {len(df)} {'texts' if texts else 'pairs'} scored with {name or model}", err=True)
