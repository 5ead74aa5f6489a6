"""The ``unstereo`` command line: one subcommand per stage.

Subcommands live next to their stage (``unstereo/<stage>/cli.py``) and are imported lazily, so ``unstereo --help``
stays fast and one stage's heavy imports (torch, spaCy) never slow down another.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys

import click

from . import __version__
from .errors import UnstereoError

# subcommand -> "module:attribute" of a click command or group.
SUBCOMMANDS: dict[str, str] = {
    "resources": "unstereo.resources.cli:group",
    "corpus": "unstereo.corpus.cli:group",
    "vocabulary": "unstereo.vocabulary.cli:group",
    "benchmarks": "unstereo.benchmarks.cli:group",
    "llm": "unstereo.llm.cli:group",
    "generate": "unstereo.generate.cli:group",
    "score": "unstereo.scoring.cli:score",
    "metrics": "unstereo.metrics.cli:metrics",
    "report": "unstereo.report.cli:group",
    "config": "unstereo.config_cli:config",
    "fairpair": "unstereo.fairpair.cli:group",
    "sentiment": "unstereo.sentiment.cli:group",
    "robustness": "unstereo.robustness.cli:group",
    "biastest": "unstereo.biastest.cli:group",
}


def _available(name: str) -> bool:
    """True when the subcommand's module exists (stages land one by one)."""
    try:
        return importlib.util.find_spec(SUBCOMMANDS[name].split(":")[0]) is not None
    except ModuleNotFoundError:
        return False


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(n for n in SUBCOMMANDS if _available(n))

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        if cmd_name not in SUBCOMMANDS or not _available(cmd_name):
            return None
        module, attr = SUBCOMMANDS[cmd_name].split(":")
        return getattr(importlib.import_module(module), attr)


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="unstereo")
def cli() -> None:
    """Measure social bias in language models: UnStereoEval and related methods.

    Every stage of the Snakemake workflow is a subcommand here; run `unstereo STAGE --help` for its options.
    """


def main(argv: list[str] | None = None) -> None:
    """Console entry point: library errors become one clear line on stderr and exit status 1."""
    try:
        cli.main(args=argv, prog_name="unstereo", standalone_mode=False)
    except click.exceptions.Abort:
        click.echo("Aborted.", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        exc.show()
        sys.exit(exc.exit_code)
    except click.exceptions.Exit as exc:
        sys.exit(exc.exit_code)
    except UnstereoError as exc:
        click.echo(f"unstereo: error: {exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
