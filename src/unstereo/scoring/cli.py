"""``unstereo score MODEL PAIRS -o FILE``: sentence log-likelihoods of a pair table under one model (``--texts``: of a
text table)."""

from __future__ import annotations

import click


def _batch_size(ctx, param, value: str) -> int | str:
    if value == "auto":
        return value
    try:
        size = int(value)
    except ValueError:
        raise click.BadParameter("an integer >= 1 or 'auto'") from None
    if size < 1:
        raise click.BadParameter("an integer >= 1 or 'auto'")
    return size


@click.command("score")
@click.argument("model")
@click.argument("pairs", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o", "--output", required=True, type=click.Path(dir_okay=False), help="SCORES parquet to write."
)
@click.option(
    "--texts",
    is_flag=True,
    help="PAIRS is a text table (id, text): write TEXT_SCORES, one row per text (id, model, logp, ntok).",
)
@click.option("--name", default=None, help="Model name for the `model` column (default: MODEL as given).")
@click.option(
    "--gguf-file", default=None, help="GGUF file inside MODEL (a folder); or pass MODEL as a .gguf path."
)
@click.option("--revision", default=None, help="Hub revision (branch, tag or commit) of MODEL.")
@click.option("--masked", is_flag=True, help="MODEL is a masked LM: score by pseudo-log-likelihood.")
@click.option(
    "--batch-size",
    default="auto",
    show_default=True,
    callback=_batch_size,
    help="Sentences per forward pass (halved on out-of-memory), or 'auto': device-dependent start, logits memory bounded.",
)
@click.option(
    "--max-batch-size",
    default=None,
    type=click.IntRange(1),
    help="Starting batch size of 'auto' (default: 32 on CPU, 128 on CUDA).",
)
@click.option(
    "--dtype",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "float32", "bfloat16", "float16"]),
    help="Weights dtype; auto = float32 on CPU, bfloat16 on GPU. Log-probs are always computed in fp32.",
)
@click.option(
    "--device", default="auto", show_default=True, help="auto (cuda > mps > cpu), cpu, cuda, cuda:1, mps."
)
@click.option(
    "--chunk-size", default=500, show_default=True, type=click.IntRange(1), help="Pairs (or texts) per chunk."
)
@click.option(
    "--bos-policy",
    default="auto",
    show_default=True,
    type=click.Choice(["auto", "bos", "eos", "none"]),
    help="Token before each sentence: auto = BOS, else EOS, else none (first token not scored).",
)
@click.option(
    "--reference-quirks/--no-reference-quirks",
    default=False,
    show_default=True,
    help="Re-fill sentences from the template with the reference code's capitalize() (SPEC 1.4 quirk 1).",
)
@click.option(
    "--threads", default=None, type=click.IntRange(1), help="CPU threads for torch (default: torch's)."
)
def score(
    model: str,
    pairs: str,
    output: str,
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
    threads,
) -> None:
    """Score every pair of PAIRS (a pair table) under MODEL and write a SCORES table.

    MODEL is a hub id, a local Hugging Face folder, or a GGUF file (converted once to a folder beside it).
    Output columns: pair_id, model, benchmark, logp_female, logp_male, ntok_female, ntok_male (ln p in nats, BOS
    prepended and not scored) and run metadata (model_id, model_revision, dtype, batch_size, device, bos_policy,
    package versions). Scores are written in chunks beside the output; an interrupted run resumes where it stopped.

    With --texts, PAIRS is a text table (columns id, text; other columns ignored) and the output has one row per
    text: id, model, logp, ntok and the same run metadata. Each distinct text of a chunk is scored once.
    """
    if texts and reference_quirks:
        raise click.UsageError("--reference-quirks re-fills pair templates; it does not apply to --texts")
    if threads:
        import torch

        torch.set_num_threads(threads)
    from .run import score_file

    df = score_file(
        model,
        pairs,
        output,
        texts=texts,
        name=name,
        gguf_file=gguf_file,
        revision=revision,
        masked=masked,
        batch_size=batch_size,
        max_batch_size=max_batch_size,
        dtype=dtype,
        device=device,
        chunk_size=chunk_size,
        bos_policy=bos_policy,
        reference_quirks=reference_quirks,
    )
    click.echo(f"{output}: {len(df)} {'texts' if texts else 'pairs'} scored with {name or model}", err=True)
