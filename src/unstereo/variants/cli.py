"""``unstereo variants``: model variants (docs/methods.md#model-variants): train (one variant's folder), perplexity
(the variants against their bases on held-out text)."""

from __future__ import annotations

import click

from unstereo import cli_options
from unstereo.config.settings import as_dict, command_seed, section

#: The variants section's settings (variants.schema.yaml), whole from ``--settings`` (the workflow passes the
#: section), with override flags for the keys each command reads.
SECTION = section("variants")


@click.group("variants")
def group() -> None:
    """Model variants: a base model fine-tuned by an intervention (CDA, regularisation, control)."""


@group.command("train")
@click.argument("name")
@cli_options.output("the variant's folder (weights, tokenizer, history.json, variant.json)", kind="dir",
                    dest="out_dir", flag="--out-dir")  # fmt: skip
@cli_options.external_dir
@cli_options.threads
@SECTION.command("seed", "device", "steps")
def train_cmd(name, out_dir, external_dir, threads, settings) -> None:
    """Fine-tune variant NAME of the settings' `models` (its base, intervention and strength) into OUT_DIR.

    Resumable: a checkpoint every `checkpoint_every` steps in OUT_DIR; variant.json is written last."""
    from unstereo.variants.build import build_variant

    cfg = as_dict(settings)
    record = build_variant(cfg, name, out_dir, seed=command_seed(settings), external_dir=external_dir,
                           device=cfg["device"], threads=threads)  # fmt: skip
    click.echo(f"{name}: {record['intervention']} (strength {record['strength']:g}) of {record['base_model']}"
               f" -> {out_dir}")  # fmt: skip


@group.command("perplexity")
@click.argument("variants", nargs=-1, required=True, type=click.Path(exists=True, file_okay=False))
@cli_options.output("perplexity table (.parquet or .csv)")
@cli_options.external_dir
@cli_options.threads
@SECTION.command("seed", "device")
def perplexity_cmd(variants, output, external_dir, threads, settings) -> None:
    """Perplexity of each variant folder in VARIANTS and of its base on the held-out sentences of the settings."""
    from unstereo.tables import write_table
    from unstereo.variants.perplexity import perplexity_table
    from unstereo.variants.schemas import PERPLEXITY

    if threads:
        import torch

        torch.set_num_threads(threads)
    cfg = as_dict(settings)
    df = perplexity_table(list(variants), cfg, seed=command_seed(settings), external_dir=external_dir,
                          device=cfg["device"])  # fmt: skip
    write_table(df, output, PERPLEXITY)
    click.echo(df.to_string(index=False))
