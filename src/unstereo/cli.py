"""The ``unstereo`` command line: one subcommand per stage.

Subcommands live next to their stage (``unstereo/<stage>/cli.py``) and are imported lazily: ``unstereo --help``
imports none of them (their one-line help is declared: :data:`SHORT_HELP`, each method's ``cli_help``), and one
stage's heavy imports (torch, spaCy) never slow down another. The shared infrastructure's are listed here; each
method's come from its declaration in the method registry (:mod:`unstereo.method_registry`).
"""

from __future__ import annotations

import importlib
import sys
from functools import cache

import click

from unstereo import __version__
from unstereo.errors import UnstereoError

# The shared infrastructure (not a method): subcommand -> "module:attribute" of a click command or group.
INFRASTRUCTURE: dict[str, str] = {
    "resources": "unstereo.resources.cli:group",
    "llm": "unstereo.llm.cli:group",
    "config": "unstereo.config.cli:config",
}


# The infrastructure's subcommands' help, the first paragraph of each docstring (whitespace collapsed): ``unstereo
# --help`` lists them from here, and each method's from its declaration (``Method.cli_help``), without importing
# any stage (a stage's cli.py imports pandas, numpy, ...); a subcommand with neither is imported for its help.
# tests/test_cli_help.py checks both against the commands themselves.
SHORT_HELP: dict[str, str] = {
    "resources": "Obtain the offline resources (models, corpus, WordNet, lid.176, reference data).",
    "llm": "LLM client: chat completions and text continuations (OpenAI-compatible endpoints or local "
    "transformers).",
    "config": "Validate configuration files.",
}


@cache
def subcommands() -> dict[str, str]:
    """Every subcommand: the infrastructure's, then each registered method's (UnStereoEval's stages, fairpair, ...).
    Read on first use (module attribute ``SUBCOMMANDS``), so that a broken method declaration is reported by
    :func:`main` as one clear line rather than a traceback at import."""
    from unstereo import method_registry  # not at import: `unstereo config ...` needs no method's declaration

    out = dict(INFRASTRUCTURE)
    for name, ref in method_registry.cli_groups().items():
        if name in out:
            raise method_registry.MethodRegistryError(f"a method declares subcommand {name!r}, a shared one")
        out[name] = ref
    return out


def short_helps() -> dict[str, str]:
    """Subcommand -> its one-line help as declared (:data:`SHORT_HELP`, each method's ``cli_help``)."""
    from unstereo import method_registry

    return {**SHORT_HELP, **method_registry.cli_helps()}


def __getattr__(name: str):
    if name == "SUBCOMMANDS":
        return subcommands()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class LazyGroup(click.Group):
    """A click group whose subcommands are imported on first use."""

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(subcommands())

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        # the infrastructure's own without reading the registry (which imports every method's declaration)
        ref = INFRASTRUCTURE.get(cmd_name) or subcommands().get(cmd_name)
        if ref is None:
            return None
        module, _, attr = ref.partition(":")
        return getattr(importlib.import_module(module), attr)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """click's listing, with each subcommand's help as declared (:func:`short_helps`: no import)."""
        helps = short_helps()
        commands = []
        for name in self.list_commands(ctx):
            cmd = click.Command(name, help=helps[name]) if name in helps else self.get_command(ctx, name)
            if cmd is not None and not cmd.hidden:
                commands.append((name, cmd))
        if commands:
            limit = formatter.width - 6 - max(len(name) for name, _ in commands)
            with formatter.section("Commands"):
                formatter.write_dl([(name, cmd.get_short_help_str(limit)) for name, cmd in commands])


@click.group(cls=LazyGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="unstereo")
def cli() -> None:
    """Measure social bias in language models: UnStereoEval and related methods.

    Every stage of the Snakemake workflow is a subcommand here; run `unstereo STAGE --help` for its options.
    """


def input_files(argv: list[str]) -> list[str]:
    """The arguments of a command line that name existing files or folders (``--opt=PATH`` too), after the
    subcommand names (a folder called ``config`` is not the ``config`` subcommand's input): its inputs, and outputs
    that exist already."""
    import os

    skip = 0
    group: click.Command | None = cli
    while isinstance(group, click.Group) and skip < len(argv):
        try:
            group = group.get_command(click.Context(group), argv[skip])
        except Exception:  # noqa: BLE001 - an unknown or broken subcommand: no more names to skip
            group = None
        if group is None:
            break
        skip += 1
    out = []
    for arg in argv[skip:]:
        value = arg.split("=", 1)[1] if arg.startswith("--") and "=" in arg else arg
        if value and not value.startswith("-") and value not in out and os.path.exists(value):
            out.append(value)
    return out


def _name_inputs(argv: list[str]) -> None:
    """After a failure: one line naming the command's input files, so that the log of a job among 200 says which
    files it read; Snakemake's error summary lists the rule's inputs too."""
    files = input_files(argv)
    if files:
        click.echo(f"unstereo: the failed command's files: {', '.join(files)}", err=True)


def main(argv: list[str] | None = None) -> None:
    """Console entry point: library errors become one clear line on stderr and exit status 1; any failure is
    followed by a line naming the command's input files."""
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        _main(argv)
    except SystemExit as exc:
        if exc.code not in (0, None):
            _name_inputs(argv)
        raise
    except KeyboardInterrupt:
        _name_inputs(argv)
        sys.exit(130)
    except Exception:
        # a defect (or an error no check foresaw): its traceback, then the files it was reading
        import traceback

        traceback.print_exc()
        _name_inputs(argv)
        sys.exit(1)


def _main(argv: list[str]) -> None:
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
    except OSError as exc:
        if exc.filename is None:  # not about a file: a defect, shown with its traceback
            raise
        # a file that cannot be opened, read or written (missing, a folder, no permission, disk full): the file
        # and the reason, as the UnstereoError above
        where = exc.filename if exc.filename2 is None else f"{exc.filename} -> {exc.filename2}"
        click.echo(f"unstereo: error: {where}: {exc.strerror or exc}", err=True)
        sys.exit(1)


if __name__ == "__main__":
    main()
