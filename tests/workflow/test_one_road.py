"""One road from the config to a command: a dry run of the workflow (every job, ``--forceall``)
on the shipped config and the methods test config prints each job's command line; a command that gets its config
section as ``--settings`` must carry no flag for a value that section holds. Allowed beside it: paths (options of
a ``click.Path`` type: inputs, outputs, -o, caches, resource folders), the model argument (and its
``--api-key-env``, ``--llm-perturb``), ``--threads`` and the job's names (``--name``, fairpair's ``--model``).

Which option a section holds is the command's own reading of ``--settings``: the key each flag generated from the
section's schema overrides (:meth:`unstereo.config.settings.Section.command`), applied to the JSON the rule
passed."""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import click
import pytest
from _paths import REPO

from unstereo.cli import cli as main
from unstereo.config import read_section_arg
from unstereo.config.settings import NO_DEFAULT, lookup

CONFIGS = [REPO / "config" / "config.yaml", REPO / ".test" / "config-methods.yaml"]
#: Non-path options allowed beside --settings: the job's threads and names, the model argument's own options.
ALLOWED = {"threads", "name", "model_name", "api_key_env", "llm_model", "cache_path"}
#: Where a command line ends in a rule's shell command.
ENDS = {">", ">>", "2>&1", "|", "&&", ";"}


def dry_run(config: Path) -> str:
    exe = shutil.which("snakemake", path=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    assert exe, "snakemake not installed"
    cmd = [exe, "-s", str(REPO / "Snakefile"), "--directory", str(REPO), "--configfile", str(config),
           "--cores", "1", "--dry-run", "--forceall", "--printshellcmds", "--nolock"]  # fmt: skip
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, (run.stdout + run.stderr)[-3000:]
    return run.stdout + run.stderr


def command_lines(text: str) -> list[list[str]]:
    """The argument lists (after ``unstereo``) of every ``unstereo`` command printed."""
    out = []
    for line in text.splitlines():
        if "unstereo " not in line:
            continue
        try:
            tokens = shlex.split(line)
        except ValueError:
            continue
        if "unstereo" not in tokens:
            continue
        args = tokens[tokens.index("unstereo") + 1 :]
        end = next((i for i, t in enumerate(args) if t in ENDS), len(args))
        out.append(args[:end])
    return out


def resolve(args: list[str]) -> tuple[str, click.Command, list[str]]:
    """(command path, command, its arguments) of ``unstereo ARGS``."""
    cmd, path = main, []
    while isinstance(cmd, click.Group) and args:
        sub = cmd.get_command(click.Context(cmd), args[0])
        if sub is None:
            break
        path.append(args[0])
        cmd, args = sub, args[1:]
    assert not isinstance(cmd, click.Group), f"unstereo {' '.join(path)}: not a command"
    return " ".join(path), cmd, args


def flags_held(cmd: click.Command, args: list[str]) -> list[str]:
    """The flags of ``args`` for a value the ``--settings`` section holds, paths and :data:`ALLOWED` aside."""
    options = {
        opt: p for p in cmd.params if isinstance(p, click.Option) for opt in (*p.opts, *p.secondary_opts)
    }
    given = [(a.split("=", 1)[0], i) for i, a in enumerate(args) if a.split("=", 1)[0] in options]
    value = next((args[i + 1] for flag, i in given if flag == "--settings"), None)
    if value is None:
        return []
    callback = cmd.callback
    section = callback.settings_section
    data = read_section_arg(value, section)
    held = []
    for flag, _ in given:
        param = options[flag]
        if param.name == "settings" or param.name in ALLOWED or isinstance(param.type, click.Path):
            continue
        path = callback.settings_paths.get(
            param.name
        )  # flags generated from the schema (unstereo.config.settings)
        if path is not None and lookup(data, path) is not NO_DEFAULT:
            held.append(f"{flag} ({section}.{path})")
    return held


@pytest.fixture(scope="module", params=CONFIGS, ids=lambda p: p.name)
def commands(request) -> list[list[str]]:
    lines = command_lines(dry_run(request.param))
    assert lines, "the dry run printed no unstereo command"
    return lines


def test_no_command_takes_settings_and_config_flags(commands):
    bad, with_settings = [], set()
    for args in commands:
        name, cmd, rest = resolve(args)
        if "--settings" in rest:
            with_settings.add(name)
        held = flags_held(cmd, rest)
        if held:
            bad.append(f"unstereo {name}: {', '.join(held)}")
    assert not bad, "commands with --settings and config flags:\n" + "\n".join(bad)
    assert with_settings, "no command got --settings"


def test_every_settings_command_says_its_section():
    def walk(group):
        ctx = click.Context(group)
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            if isinstance(cmd, click.Group):
                yield from walk(cmd)
            elif any(p.name == "settings" for p in cmd.params):
                yield cmd

    commands = list(walk(main))
    assert len(commands) > 10
    for cmd in commands:
        assert isinstance(getattr(cmd.callback, "settings_section", None), str), cmd.name


def test_flags_held_finds_a_config_flag_beside_settings():
    """The check itself: fairpair summary with its section and a --bootstrap flag (the section's ``bootstrap``)."""
    _, cmd, args = resolve(
        ["fairpair", "summary", "a.parquet", "-o", "s.parquet", "--settings", '{"bootstrap": 5}']
    )
    assert flags_held(cmd, args) == []
    assert flags_held(cmd, [*args, "--bootstrap", "7"]) == ["--bootstrap (fairpair.bootstrap)"]


#: The commands of the corpus, benchmarks, metrics, report and robustness sections that read section keys (each of their rules
#: passes the section, or the paper reproduction's own, as --settings and spells no config flag).
SECTION_COMMANDS = {"corpus count", "corpus merge", "corpus delta", "corpus appendix", "benchmarks build",
                    "benchmarks figure", "metrics", "report compare", "robustness construct", "robustness metrics",
                    "robustness report"}  # fmt: skip


def test_the_section_commands_rules_pass_settings(commands, request):
    seen: dict[str, bool] = {}
    for args in commands:
        name, _, rest = resolve(args)
        if name in SECTION_COMMANDS:
            seen[name] = seen.get(name, True) and "--settings" in rest
    assert all(seen.values()), f"without --settings: {sorted(n for n, ok in seen.items() if not ok)}"
    assert request.node.callspec.id in {c.name for c in CONFIGS}
    if (
        request.node.callspec.id == "config.yaml"
    ):  # the shipped config runs every one of them (paper included)
        assert set(seen) == SECTION_COMMANDS
