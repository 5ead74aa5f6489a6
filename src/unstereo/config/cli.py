"""``unstereo config``: check a workflow config file against the schema."""

from __future__ import annotations

import click
import yaml

from unstereo.config import load_config


@click.group("config")
def config() -> None:
    """Validate configuration files."""


@config.command("validate")
@click.argument("path", type=click.Path(exists=True, dir_okay=False))
@click.option("--show", is_flag=True, help="print the config with defaults filled in")
def validate(path: str, show: bool) -> None:
    """Validate PATH against workflow/schemas/config.schema.yaml (names the first bad key)."""
    cfg = load_config(path)
    if show:
        click.echo(yaml.safe_dump(cfg, sort_keys=False))
    else:
        click.echo(f"{path}: valid")
