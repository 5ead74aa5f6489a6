"""``unstereo resources``: obtain and verify the offline resources."""

from __future__ import annotations

import click

from unstereo.resources import RESOURCES, fetch, verify


@click.group("resources")
def group() -> None:
    """Obtain the offline resources (models, corpus, WordNet, lid.176, reference data)."""


@group.command("fetch")
@click.argument("names", nargs=-1, required=True, type=click.Choice(sorted(RESOURCES)))
@click.option("--external-dir", default="data/external", show_default=True, type=click.Path(file_okay=False))
@click.option(
    "--mirror",
    type=click.Path(file_okay=False),
    help="local copy of the reference data to prefer; when missing, the data is downloaded instead",
)
@click.option(
    "--origin",
    envvar="UNSTEREO_REFERENCE_ORIGIN",
    help="server of the reference archives ({origin}/{owner}/{repo}/archive/{commit}.tar.gz); "
    "default: $UNSTEREO_REFERENCE_ORIGIN, else the public origin",
)
@click.option("--force", is_flag=True, help="fetch again even when complete")
def fetch_cmd(
    names: tuple[str, ...], external_dir: str, mirror: str | None, origin: str | None, force: bool
) -> None:
    """Fetch NAMES into EXTERNAL_DIR/<name> (idempotent; checksummed)."""
    for name in names:
        reference = name == "reference"
        path = fetch(
            name,
            external_dir,
            mirror=mirror if reference else None,
            origin=origin if reference else None,
            force=force,
        )
        click.echo(f"{name}: {path}")


@group.command("verify")
@click.argument("names", nargs=-1, required=True, type=click.Choice(sorted(RESOURCES)))
@click.option("--external-dir", default="data/external", show_default=True, type=click.Path(file_okay=False))
def verify_cmd(names: tuple[str, ...], external_dir: str) -> None:
    """Recompute the checksums of fetched resources."""
    for name in names:
        verify(name, external_dir)
        click.echo(f"{name}: ok")


@group.command("list")
def list_cmd() -> None:
    """List the known resources."""
    for name, res in sorted(RESOURCES.items()):
        click.echo(f"{name:12s} {res.doc}")
