"""`unstereo --help` lists the subcommands from their declared help (unstereo.cli.SHORT_HELP, each method's
cli_help) without importing any stage, and the declared help says what each command's own help says."""

from __future__ import annotations

import subprocess
import sys

import click
import pytest

from unstereo import cli as cli_module
from unstereo.cli import SHORT_HELP, cli, short_helps, subcommands
from unstereo.method_registry import Method, MethodRegistryError


@pytest.mark.parametrize("name", sorted(subcommands()))
def test_short_help_table_matches_each_commands_own_help(name):
    cmd = cli.get_command(click.Context(cli), name)
    where = "unstereo.cli.SHORT_HELP" if name in SHORT_HELP else "its method's cli_help (method.py)"
    assert name in short_helps(), f"declare the help of {name!r} in {where}"
    stub = click.Command(name, help=short_helps()[name])
    assert not cmd.hidden and not cmd.deprecated and cmd.short_help is None
    # click's width (80 columns less 6 less the longest name) and others
    for limit in (10, 45, 57, 74, 1000):
        assert stub.get_short_help_str(limit) == cmd.get_short_help_str(limit), (name, limit)


def test_declared_help_names_no_gone_command():
    assert set(short_helps()) <= set(subcommands())
    with pytest.raises(MethodRegistryError, match="cli_help names 'toi'"):
        Method("toy", "Toy", cli={"toy": "toy_method.cli:group"}, cli_help={"toi": "Toy."}, category="Toy")


def _listing(group_format_commands) -> str:
    ctx = click.Context(cli, info_name="unstereo")
    formatter = ctx.make_formatter()
    group_format_commands(cli, ctx, formatter)
    return formatter.getvalue()


def test_help_listing_equals_clicks_own_from_the_commands():
    assert _listing(cli_module.LazyGroup.format_commands) == _listing(click.Group.format_commands)


def test_help_listing_imports_a_command_without_declared_help(monkeypatch):
    monkeypatch.setattr(cli_module, "short_helps", lambda: {})
    assert _listing(cli_module.LazyGroup.format_commands) == _listing(click.Group.format_commands)


def test_help_imports_no_stage():
    code = (
        "import sys\nfrom unstereo.cli import main\ntry:\n    main(['--help'])\nexcept SystemExit:\n    pass\n"
        "print(' '.join(sorted(m for m in sys.modules if m.endswith('.cli') or m in ('pandas', 'numpy', 'torch'))))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "Commands:" in out.stdout and "score       Score every pair" in out.stdout
    assert out.stdout.splitlines()[-1] == "unstereo.cli"
