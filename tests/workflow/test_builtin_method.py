"""A new built-in method is one folder: added to a copy of the repository, it touches src/unstereo/<name>/, one row of
the README's method table and one section of config/config.yaml, and nothing else; `unstereo --help`, config
validation, `snakemake -n`, a run and `outputs_check` find it.

It reuses the toy method of tests/test_method_registry.py (its files, moved from a plugin package into the source
tree). docs/adding-a-method.md ("A built-in method") is written from :func:`add_builtin_toy` below.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest
import yaml
from _paths import REPO
from test_method_registry import TOY_FILES

GIT = shutil.which("git")

# what a built-in method's conda env installs: the checkout it lives in (src/unstereo/<name>/ -> ../../..), with the
# method's pyproject extra when it has one (the toy needs the core package only)
BUILTIN_ENV = """
    # conda env for the toy rules (pinned). The project is installed from the checkout (../../..), core only.
    name: unstereo-toy
    channels:
      - conda-forge
      - nodefaults
    dependencies:
      - python=3.11
      - pip
      - pip:
          - -e ../../..
"""
#: ``git diff --numstat`` of the shared files after adding the method: one README row, the 5-line config section.
SHARED_EDITS = ["1", "0", "README.md", "5", "0", "config/config.yaml"]

README_ROW = (
    "| toy | a toy gap per item (a test of the method registry) | `unstereo toy` | `toy:` | `toy/` |\n"
)
CONFIG_SECTION = """
# ------------------------------------------------------------------------------------------------------- toy
toy:
  enabled: true
  models: [tiny, small]
"""


def _git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t"}
    env["GIT_COMMITTER_EMAIL"] = "t@t"
    res = subprocess.run([GIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    return res.stdout


def copy_checkout(dest: Path) -> Path:
    """The repository's tracked files (as they are in the working tree) in ``dest``, committed in a fresh git
    repository, so that ``git status`` there shows what a change touched."""
    for rel in _git(REPO, "ls-files", "-z").split("\0"):
        src = REPO / rel
        if not rel or not (src.exists() or src.is_symlink()):
            continue  # deleted in the working tree
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if src.is_symlink():
            target.symlink_to(os.readlink(src))
        else:
            shutil.copy2(src, target)
    _git(dest, "init", "-q")
    _git(dest, "add", "-A")
    _git(dest, "commit", "-q", "-m", "checkout")
    return dest


def add_builtin_toy(checkout: Path) -> None:
    """The toy method as a built-in: its folder, one README table row, one config/config.yaml section."""
    folder = checkout / "src" / "unstereo" / "toy"
    for rel, text in TOY_FILES.items():
        if not rel.startswith("toy_method/"):
            continue  # a built-in needs no entry point: the registry scans unstereo/*/method.py
        path = folder / rel.removeprefix("toy_method/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n").replace("toy_method.", "unstereo.toy."))
    (folder / "env.yaml").write_text(textwrap.dedent(BUILTIN_ENV).lstrip("\n"))
    readme = checkout / "README.md"
    text = readme.read_text()
    anchor = next(line for line in text.splitlines(keepends=True) if line.startswith("| BiasTestGPT |"))
    readme.write_text(text.replace(anchor, anchor + README_ROW))
    with open(checkout / "config" / "config.yaml", "a") as fh:
        fh.write(CONFIG_SECTION)


def _env(checkout: Path) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    # the copy's package only (not this checkout's, nor an editable install's)
    return {
        **os.environ,
        "PYTHONPATH": str(checkout / "src"),
        "PATH": bindir + os.pathsep + os.environ["PATH"],
    }


def _run(checkout: Path, *args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        args, cwd=cwd or checkout, env=_env(checkout), capture_output=True, text=True, timeout=300
    )


@pytest.mark.skipif(GIT is None, reason="git not installed")
def test_a_builtin_method_is_one_folder_a_readme_row_and_a_config_section(tmp_path):
    checkout = copy_checkout(tmp_path / "repo")
    add_builtin_toy(checkout)

    # touched: its folder, README.md's table, config/config.yaml's section; nothing else
    status = _git(checkout, "status", "--porcelain", "--untracked-files=all").splitlines()
    assert sorted(line for line in status if not line.startswith("??")) == [
        " M README.md",
        " M config/config.yaml",
    ]
    new = sorted(line[3:] for line in status if line.startswith("??"))
    assert new == sorted(
        f"src/unstereo/toy/{p}"
        for p in ("__init__.py", "method.py", "schemas.py", "cli.py", "headline.py", "toy.schema.yaml")
        + ("rules.smk", "captions/table.rst", "env.yaml")
    )
    assert _git(checkout, "diff", "--numstat").split() == SHARED_EDITS

    python = sys.executable
    # the CLI
    helped = _run(checkout, python, "-m", "unstereo.cli", "--help")
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "Toy method: a table of toy gaps." in helped.stdout
    # config validation: the section is known, its defaults filled in, a bad key named
    valid = _run(checkout, python, "-m", "unstereo.cli", "config", "validate", "config/config.yaml")
    assert valid.returncode == 0 and "valid" in valid.stdout, valid.stderr[-2000:]
    (tmp_path / "bad.yaml").write_text(yaml.safe_dump({"toy": {"enabled": True, "bogus": 1}}))
    bad = _run(checkout, python, "-m", "unstereo.cli", "config", "validate", str(tmp_path / "bad.yaml"))
    assert bad.returncode == 1 and "config key 'toy.bogus'" in bad.stderr, bad.stderr[-2000:]

    # the Snakefile: the embedded default config (with the new section) schedules the toy's rule
    snakemake = [python, "-m", "snakemake", "-s", str(checkout / "Snakefile"), "--cores", "1"]
    dry = _run(checkout, *snakemake, "-n", "--nolock", "--quiet", "rules")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "toy_table" in dry.stdout + dry.stderr

    # a run of the toy alone, checked by outputs_check against its table schema
    work = tmp_path / "work"
    work.mkdir()
    config = {
        "results_dir": "res",
        "external_dir": "ext",
        "toy": {"enabled": True, "models": ["tiny"], "n": 2},
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    run = _run(checkout, *snakemake, "--configfile", "config.yaml", cwd=work)
    assert run.returncode == 0, run.stderr[-3000:]
    assert list(pd.read_parquet(work / "res" / "toy" / "tiny" / "table.parquet")["gap"]) == [0.0, 0.5]
    checked = _run(
        checkout, python, "-m", "unstereo.workflow.outputs_check", "--configfile", "config.yaml",
        "--snakefile", str(checkout / "Snakefile"), cwd=work,
    )  # fmt: skip
    assert checked.returncode == 0 and "0 problem(s)" in checked.stdout, checked.stdout + checked.stderr

    # running it changed no tracked file
    assert _git(checkout, "diff", "--numstat").split() == SHARED_EDITS
