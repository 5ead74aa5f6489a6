"""The method registry: each built-in method declared once, and a toy method from a temporary package, registered
through the entry-point group only, found by the CLI, the Snakefile, config validation, outputs_check and the report.

docs/adding-a-method.md is written from :func:`write_toy_method` below.
"""

from __future__ import annotations

import importlib
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import click
import pandas as pd
import pytest
import yaml

from unstereo import cli as cli_module
from unstereo import method_registry
from unstereo.config import config_schema, validate_config
from unstereo.errors import ConfigError
from unstereo.method_registry import Method, MethodRegistryError
from unstereo.model_card.headline import HeadlineMetric
from unstereo.package_data import SCHEMA_DIR
from unstereo.tables import TableSchema
from unstereo.workflow import outputs_check

REPO = Path(__file__).resolve().parents[1]
PACKAGE = Path(method_registry.__file__).parent  # src/unstereo (or the installed package)
BUILTIN = ["unstereoeval", "variants", "fairpair", "sentiment", "robustness", "biastest"]
SHARED_KEYS = {"seed", "results_dir", "external_dir", "reference_mirror", "resources"}


@pytest.fixture(autouse=True)
def fresh_registry():
    """Every test reads the registry afresh, and leaves none of its own methods behind."""
    method_registry.methods.cache_clear()
    cli_module.subcommands.cache_clear()
    yield
    method_registry.methods.cache_clear()
    cli_module.subcommands.cache_clear()


# ---- the built-in methods ------------------------------------------------------------------------------------------


def test_each_builtin_method_is_declared_once_in_its_own_package():
    modules = method_registry.builtin_modules()
    assert modules == sorted(f"unstereo.{p}.method" for p in BUILTIN)
    methods = method_registry.methods()
    assert list(methods) == BUILTIN  # rules order: UnStereoEval's stages first, then by `order`
    for name, m in methods.items():
        assert isinstance(m, Method) and m.name == name and m.title and m.category
        assert importlib.import_module(f"unstereo.{name}.method").METHOD is m, name


def test_rules_files_keep_the_include_order_and_exist():
    # the order of the hand-written includes this replaces; each rules file lives in its package folder
    expected = [
        f"unstereoeval/{s}" for s in ("corpus", "vocabulary", "benchmarks", "generate", "score", "report")
    ]
    expected += ["variants", "fairpair", "sentiment", "robustness", "biastest"]
    assert method_registry.rules_files() == [str(PACKAGE / n / "rules.smk") for n in expected]
    assert all(Path(f).is_file() for f in method_registry.rules_files())
    # the shared rules files stay shared; no method's rules are left there
    assert sorted(p.name for p in (REPO / "rules").glob("*.smk")) == [
        "common.smk",
        "model_card.smk",
        "resources.smk",
    ]


def test_each_builtin_method_is_one_folder():
    """Rules, config schemas, conda envs and captions of a built-in method are files of its package folder(s); the
    shared ones (rules/, envs/resources.yaml, the shared schemas, the model card's captions) are not a method's."""
    for name, m in method_registry.methods().items():
        # UnStereoEval's stages are folders of its package
        folders = {PACKAGE / name} | {PACKAGE / name / s for s in m.config if name == "unstereoeval"}
        files = [*m.rules, *m.envs, *m.captions, *(m.schema_path(s) for s in m.config)]
        assert files and all(Path(f).is_absolute() and Path(f).exists() for f in files), name
        assert all(Path(f).parent in folders for f in files), name
        for section in m.config:
            assert m.schema_path(section).name == f"{section}.schema.yaml"
        assert {Path(r).name for r in m.rules} == {"rules.smk"}
        assert {Path(e).name for e in m.envs} <= {"env.yaml"} and {Path(c).name for c in m.captions} == {
            "captions"
        }
    assert sorted(p.name for p in (REPO / "envs").iterdir()) == ["resources.yaml"]
    assert sorted(p.name for p in (REPO / "workflow" / "report").iterdir()) == [
        "model_card.rst",
        "model_card_comparisons.rst",
        "model_card_models.rst",
        "model_card_occupations.rst",
        "model_card_tau.rst",
        "model_card_variants.rst",
    ]
    assert sorted(p.name for p in SCHEMA_DIR.iterdir()) == [
        "common.schema.yaml",
        "config.schema.yaml",
        "model.schema.yaml",
    ]


def _rules_text(m: Method) -> str:
    return "\n".join(Path(r).read_text() for r in m.rules)


def test_conda_and_caption_paths_of_the_rules_files_resolve():
    """Every `conda:` and `caption=` path of a rules file names an existing file relative to that rules file (as
    Snakemake reads them); a method's own are among its declared envs and captions."""
    shared = [REPO / "rules" / n for n in ("common.smk", "resources.smk", "model_card.smk")]
    declared = {Path(e).resolve() for m in method_registry.methods().values() for e in m.envs}
    declared.add((REPO / "envs" / "resources.yaml").resolve())
    seen_envs: set[Path] = set()
    for smk in [*map(Path, method_registry.rules_files()), *shared]:
        text = smk.read_text()
        for env in re.findall(r"^\s*conda:\s*\n\s*\"([^\"]+)\"", text, re.M):
            path = (smk.parent / env).resolve()
            assert path in declared, (smk, env)
            seen_envs.add(path)
        for caption in re.findall(r"caption=f?\"([^\"]+)\"", text):
            if "{" in caption:  # an f-string: every file of its pattern
                pattern = re.sub(r"\{[^}]*\}", "*", caption)
                assert list(smk.parent.glob(pattern)), (smk, caption)
            else:
                assert (smk.parent / caption).is_file(), (smk, caption)
    assert seen_envs == declared  # no env file left unused


def test_env_files_install_the_checkout_with_a_declared_extra():
    """Each env installs the repository it lives in (`-e <relative path to the root>[extra]`, as conda reads the
    file) with an extra of pyproject.toml that its method declares."""
    import tomllib

    extras = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]["optional-dependencies"]
    for name, m in method_registry.methods().items():
        assert set(m.extras) <= set(extras), name
        for env in map(Path, m.envs):
            (spec,) = re.findall(r"^\s*- -e (\S+)$", env.read_text(), re.M)
            path, extra = re.fullmatch(r"(.+)\[(\w+)\]", spec).groups()
            assert (env.parent / path).resolve() == REPO, env
            assert extra in m.extras, env


def test_declared_resources_are_known_and_cover_the_rules():
    """The offline resources a method declares exist, and every resource a rules file names literally is declared."""
    from unstereo.resources import RESOURCES

    for name, m in method_registry.methods().items():
        assert set(m.resources) <= set(RESOURCES), name
        named = set(re.findall(r"resource_manifest\(\"([\w-]+)\"\)", _rules_text(m)))
        assert named <= set(m.resources), (name, named)


def test_cli_groups_resolve_and_are_all_subcommands():
    groups = method_registry.cli_groups()
    assert set(groups) == {
        "corpus",
        "vocabulary",
        "benchmarks",
        "generate",
        "score",
        "metrics",
        "report",
    } | set(BUILTIN[1:])
    for name, ref in groups.items():
        assert isinstance(method_registry.load_ref(ref), click.Command), name
    assert cli_module.SUBCOMMANDS == {**cli_module.INFRASTRUCTURE, **groups}


def test_every_table_entry_resolves_to_a_table_schema():
    tables = method_registry.tables()
    assert tables == outputs_check.TABLES
    assert {"corpus", "scores", "metrics", "paper", "fairpair", "sentiment", "robustness", "biastest"} <= set(
        tables
    )
    for folder, entries in tables.items():
        for pattern, ref in entries:
            assert isinstance(outputs_check.resolve_schema(ref), TableSchema), (folder, pattern, ref)
    # FairPair's schemas live beside it now
    assert outputs_check.schema_of(Path("res/fairpair/summary.parquet"), "res").name == "fairpair_summary"
    assert method_registry.method("fairpair").tables["fairpair"][1][1] == "unstereo.fairpair.schemas:SUMMARY"


def test_config_sections_are_the_schemas_method_sections():
    schema, _ = config_schema()
    sections = method_registry.config_sections()
    assert set(schema["properties"]) == SHARED_KEYS | set(sections)
    for section, path in sections.items():
        package = {m: n for n, meth in method_registry.methods().items() for m in meth.config}[section]
        folder = PACKAGE / package / (section if package == "unstereoeval" else "")
        assert path == folder / f"{section}.schema.yaml" and path.is_file()
        assert schema["properties"][section] == {"$ref": path.name, "default": {}}
    # the file on disk lists the shared keys only; the sections come from the registry
    on_disk = yaml.safe_load((REPO / "workflow" / "schemas" / "config.schema.yaml").read_text())
    assert set(on_disk["properties"]) == SHARED_KEYS


def test_headline_metrics_and_report_categories():
    expected = {
        "unstereoeval": {"us": "lower", "aufc": "lower"},
        "fairpair": {"f": "higher"},
        "sentiment": {"if": "higher", "gf": "higher"},
        "robustness": {"rank_swap_rate": "higher"},
        "biastest": {"ss": "away"},
        "variants": {},  # a stage that derives models for the methods: no headline of its own
    }
    methods = method_registry.methods()
    assert {n: {h.name: h.more_biased for h in m.headline} for n, m in methods.items()} == expected
    assert methods["biastest"].headline[0].ideal == 50.0
    assert methods["variants"].headline_module is None
    for name, m in methods.items():
        if name == "variants":
            continue
        # UnStereoEval's headline lives with its report (metrics never imports report)
        module = (
            "unstereo.unstereoeval.report.headline" if name == "unstereoeval" else f"unstereo.{name}.headline"
        )
        assert m.headline_module == module
        # the headline module reads the metrics from the declaration: declared once
        assert importlib.import_module(m.headline_module).METRICS is m.headline
    # the categories the report groups by, as the rules used to spell them
    assert method_registry.report_categories() == {
        "unstereoeval": ("Metrics", "Corpus statistics", "Benchmarks", "Generation", "Paper reproduction"),
        "fairpair": ("FairPair",),
        "sentiment": ("Counterfactual sentiment",),
        "robustness": ("Robustness",),
        "biastest": ("BiasTestGPT",),
        "variants": ("Model variants",),
    }
    assert methods["unstereoeval"].report_category("paper") == "Paper reproduction"
    assert (
        methods["unstereoeval"].report_category("score") == "Metrics"
    )  # a stage without its own: the method's


def test_bad_declarations_are_refused_with_the_method_named(monkeypatch):
    with pytest.raises(MethodRegistryError, match="'toy'.*not a 'module:attribute'"):
        Method("toy", "Toy", cli={"toy": "toy_method.cli"}, category="Toy")
    with pytest.raises(MethodRegistryError, match="report category"):
        Method("toy", "Toy")
    with pytest.raises(MethodRegistryError, match="identifier"):
        Method("toy-method", "Toy", category="Toy")
    with pytest.raises(MethodRegistryError, match="HeadlineMetric"):
        Method("toy", "Toy", category="Toy", headline=("us",))
    with pytest.raises(MethodRegistryError, match="need a headline_module"):
        Method("toy", "Toy", category="Toy", headline=(HeadlineMetric("g", "G", "higher"),))
    with pytest.raises(MethodRegistryError, match="module name"):
        Method("toy", "Toy", category="Toy", headline_module="toy_method.headline:headline")
    # two methods claiming one config section, results folder, subcommand or name: the second names the first
    fairpair = method_registry.method("fairpair")
    clash = Method("toy", "Toy", config={"fairpair": "x.schema.yaml"}, category="Toy")
    with monkeypatch.context() as mp:
        mp.setattr(method_registry, "_discover", lambda: [(fairpair, "A"), (clash, "B")])
        method_registry.methods.cache_clear()
        with pytest.raises(
            MethodRegistryError, match="B: config section 'fairpair' is already declared by A"
        ):
            method_registry.methods()
    method_registry.methods.cache_clear()
    with pytest.raises(MethodRegistryError, match="no method 'nope' is registered"):
        method_registry.method("nope")


# ---- a toy method from a temporary package, registered through the entry-point group only --------------------------

TOY_FILES = {
    "toy_method/__init__.py": '"""A toy bias method: the smallest complete method package."""\n',
    # the declaration: everything the workflow needs to know of the method
    "toy_method/method.py": """
        from pathlib import Path

        from unstereo.headline_metric import HeadlineMetric
        from unstereo.method_registry import Method

        HERE = Path(__file__).parent
        METHOD = Method(
            name="toy",
            title="Toy method",
            cli={"toy": "toy_method.cli:group"},
            cli_help={"toy": "Toy method: a table of toy gaps."},
            config={"toy": HERE / "toy.schema.yaml"},
            rules=(HERE / "rules.smk",),
            envs=(HERE / "env.yaml",),
            captions=(HERE / "captions",),
            tables={"toy": (("*/table.parquet", "toy_method.schemas:TABLE"),)},
            category="Toy results",
            headline=(HeadlineMetric("toy_gap", "Toy gap", more_biased="higher"),),
            headline_module="toy_method.headline",
        )
    """,
    # its table: columns documented, validated on write and by outputs_check
    "toy_method/schemas.py": """
        from unstereo.tables import Column, TableSchema

        TABLE = TableSchema(
            "toy_table",
            "one row per (model, item): a toy gap",
            (Column("model", "str", "model name"), Column("item", "int", "item index"),
             Column("gap", "float", "the toy gap")),
            unique=("model", "item"),
        )
    """,
    # its CLI group: the logic the rule calls
    "toy_method/cli.py": """
        import click
        import pandas as pd


        @click.group()
        def group():
            \"\"\"Toy method: a table of toy gaps.\"\"\"


        @group.command("table")
        @click.argument("output")
        @click.option("--model", required=True)
        @click.option("--n", type=int, default=3)
        def table(output, model, n):
            \"\"\"Write the toy table of MODEL.\"\"\"
            from unstereo.tables import write_table

            from .schemas import TABLE

            df = pd.DataFrame({"model": model, "item": range(n), "gap": [0.5 * i for i in range(n)]})
            write_table(df, output, TABLE)
    """,
    # its headline metric per model, for the cross-method model card (a HEADLINE table), and what the card's rule
    # needs: whether the method runs, the tables the headline reads, the models it covers
    "toy_method/headline.py": """
        from pathlib import Path

        import pandas as pd

        from unstereo.model_card.headline import Headline, headline_table


        class ToyHeadline(Headline):  # no items, resampling or occupation leans: the protocol's defaults
            def enabled(self, config):
                return bool(config["toy"]["enabled"])

            def models(self, config):
                return list(config["toy"]["models"])

            def sources(self, config):
                return [str(Path(config["results_dir"]) / "toy" / m / "table.parquet") for m in self.models(config)]

            def headline(self, config):
                rows = []
                for model in config["toy"]["models"]:
                    t = pd.read_parquet(Path(config["results_dir"]) / "toy" / model / "table.parquet")
                    rows.append({"method": "toy", "model": model, "metric": "toy_gap", "value": t["gap"].mean(),
                                 "n": len(t), "scope": "all items"})
                return headline_table(rows)  # no interval: ci_low/ci_high NaN


        API = ToyHeadline()
    """,
    # its config section: every key documented, unknown keys rejected
    "toy_method/toy.schema.yaml": """
        description: the toy method (a test of the method registry)
        type: object
        additionalProperties: false
        properties:
          enabled:
            type: boolean
            default: false
            description: run the toy method
          models:
            type: array
            items: {type: string}
            default: [tiny]
            description: model names
          n:
            type: integer
            minimum: 1
            default: 3
            description: items per model
    """,
    # its rules: thin, calling the CLI; final outputs to ALL_TARGETS, report category from the registry; the conda
    # env and the caption are files of its folder (paths relative to the rules file)
    "toy_method/rules.smk": """
        if config["toy"]["enabled"]:

            rule toy_table:
                output:
                    report(
                        results("toy", "{model}", "table.parquet"),
                        caption="captions/table.rst",
                        category=METHODS["toy"].category,
                        subcategory="{model}",
                    ),
                params:
                    n=config["toy"]["n"],
                conda:
                    "env.yaml"
                shell:
                    "unstereo toy table {output} --model {wildcards.model} --n {params.n}"

            ALL_TARGETS.extend(results("toy", m, "table.parquet") for m in config["toy"]["models"])
    """,
    # its report caption (reStructuredText), shown with the table in `snakemake --report`
    "toy_method/captions/table.rst": "The toy gap of each item: a test of the method registry.\n",
    # its conda env (`snakemake --sdm conda`): a plugin installs its own distribution, which pulls unstereo
    "toy_method/env.yaml": """
        name: toy-method
        channels:
          - conda-forge
          - nodefaults
        dependencies:
          - python=3.11
          - pip
          - pip:
              - toy-method
    """,
    # what makes it found: an entry point in the `unstereo.methods` group (pip writes this from pyproject.toml's
    # [project.entry-points."unstereo.methods"] toy = "toy_method.method:METHOD")
    "toy_method-0.1.dist-info/METADATA": "Metadata-Version: 2.1\nName: toy-method\nVersion: 0.1\n",
    "toy_method-0.1.dist-info/entry_points.txt": "[unstereo.methods]\ntoy = toy_method.method:METHOD\n",
}


def write_toy_method(site: Path) -> Path:
    """The toy method's package and its distribution metadata under ``site`` (a sys.path entry)."""
    for rel, text in TOY_FILES.items():
        path = site / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(text).lstrip("\n"))
    return site


def _env(site: Path) -> dict[str, str]:
    bindir = str(Path(sys.executable).parent)
    path = os.pathsep.join(p for p in (str(site), os.environ.get("PYTHONPATH")) if p)
    return {**os.environ, "PYTHONPATH": path, "PATH": bindir + os.pathsep + os.environ["PATH"]}


def _snakemake(workdir: Path, site: Path, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("snakemake", path=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    assert exe, "snakemake not installed"
    cmd = [exe, "-s", str(REPO / "Snakefile"), "--directory", str(workdir), "--configfile", "config.yaml"]
    return subprocess.run(
        [*cmd, *args], cwd=workdir, env=_env(site), capture_output=True, text=True, timeout=300
    )


@pytest.fixture
def toy(tmp_path, monkeypatch):
    """The toy method installed on sys.path (this process and subprocesses) and a workdir whose config enables it."""
    site = write_toy_method(tmp_path / "site")
    monkeypatch.syspath_prepend(str(site))
    method_registry.methods.cache_clear()
    cli_module.subcommands.cache_clear()
    work = tmp_path / "work"
    work.mkdir()
    config = {
        "results_dir": "res",
        "external_dir": "ext",
        "toy": {"enabled": True, "models": ["tiny", "small"]},
        "report": {"enabled": True},  # the model card: the toy's headline next to nothing else
    }
    (work / "config.yaml").write_text(yaml.safe_dump(config))
    return site, work


def test_toy_method_is_registered_by_its_entry_point(toy):
    methods = method_registry.methods()
    assert list(methods)[-1] == "toy"  # after the built-ins (default order 100)
    toy_method = methods["toy"]
    assert toy_method.headline == (HeadlineMetric("toy_gap", "Toy gap", more_biased="higher"),)
    assert method_registry.rules_files()[-1] == str(toy[0] / "toy_method" / "rules.smk")
    assert "toy" in cli_module.SUBCOMMANDS


def test_toy_method_config_section_is_validated(toy):
    config = validate_config({"toy": {"enabled": True}})
    assert config["toy"] == {"enabled": True, "models": ["tiny"], "n": 3}  # its schema's defaults
    with pytest.raises(ConfigError, match=r"config key 'toy\.bogus'.*unknown key"):
        validate_config({"toy": {"enabled": True, "bogus": 1}})
    with pytest.raises(ConfigError, match=r"config key 'toy\.n'"):
        validate_config({"toy": {"n": 0}})
    # and without the method registered, the section itself is unknown
    method_registry.methods.cache_clear()
    sys.path.remove(str(toy[0]))
    with pytest.raises(ConfigError, match="config key 'toy'"):
        validate_config({"toy": {"enabled": True}})


def test_toy_method_tables_are_checked_against_its_schema(toy, tmp_path):
    res = tmp_path / "res"
    good = res / "toy" / "tiny" / "table.parquet"
    good.parent.mkdir(parents=True)
    pd.DataFrame({"model": ["tiny", "tiny"], "item": [0, 1], "gap": [0.0, 0.5]}).to_parquet(good)
    assert outputs_check.schema_of(good, res).name == "toy_table"
    assert outputs_check.check_file(good, res) is None
    drifted = res / "toy" / "small" / "table.parquet"
    drifted.parent.mkdir(parents=True)
    pd.DataFrame({"model": ["small"], "item": [0], "gap_pct": [50.0]}).to_parquet(drifted)  # gap renamed
    why = outputs_check.check_file(drifted, res)
    assert why is not None and "toy_method.schemas:TABLE" in why and "gap" in why


def test_toy_method_end_to_end(toy):
    """`unstereo --help`, `snakemake -n`, a real run checked by outputs_check, and the report's category."""
    site, work = toy
    env = _env(site)
    helped = subprocess.run(
        [sys.executable, "-m", "unstereo.cli", "--help"], env=env, capture_output=True, text=True, timeout=120
    )
    assert helped.returncode == 0, helped.stderr[-2000:]
    assert "toy" in helped.stdout and "Toy method: a table of toy gaps." in helped.stdout

    dry = _snakemake(work, site, "-n", "--quiet", "rules")
    assert dry.returncode == 0, dry.stderr[-3000:]
    assert "toy_table" in dry.stdout + dry.stderr

    run = _snakemake(work, site, "--cores", "1")
    assert run.returncode == 0, run.stderr[-3000:]
    table = pd.read_parquet(work / "res" / "toy" / "small" / "table.parquet")
    assert list(table["gap"]) == [0.0, 0.5, 1.0]  # n = 3 items, gap 0.5 * i

    headline = importlib.import_module(method_registry.method("toy").headline_module).API.headline
    rows = headline({"results_dir": str(work / "res"), "toy": {"models": ["tiny", "small"]}})
    assert rows[["model", "metric", "value", "n"]].values.tolist() == [
        ["tiny", "toy_gap", 0.5, 3],  # mean of 0, 0.5, 1.0
        ["small", "toy_gap", 0.5, 3],
    ]

    checked = subprocess.run(
        [sys.executable, "-m", "unstereo.workflow.outputs_check", "--configfile", "config.yaml",
         "--snakefile", str(REPO / "Snakefile")],
        cwd=work, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert checked.returncode == 0, checked.stderr[-3000:]
    assert "0 problem(s)" in checked.stdout  # the toy's tables and the model card's, each against its schema

    # the cross-method model card has the toy's headline, read through its declaration alone
    card = pd.read_parquet(work / "res" / "model_card.parquet")
    assert card[["method", "model", "metric", "value"]].values.tolist() == [
        ["toy", "small", "toy_gap", 0.5],
        ["toy", "tiny", "toy_gap", 0.5],
    ]
    assert set(card["rank"]) == {1.0}  # a tie: both models share the best rank

    reported = _snakemake(work, site, "--report", "report.html")
    assert reported.returncode == 0, reported.stderr[-3000:]
    html = (work / "report.html").read_text(errors="replace")
    assert "Toy results" in html and "table.parquet" in html  # the category the method declares
    assert "a test of the method registry" in html  # its caption, found relative to its rules file
    assert "Model card" in html and "tiny.png" in html  # and the toy on the model card


def test_a_broken_entry_point_is_one_clear_line(tmp_path, monkeypatch, capsys):
    dist = tmp_path / "broken-0.1.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: broken\nVersion: 0.1\n")
    (dist / "entry_points.txt").write_text("[unstereo.methods]\nbroken = no_such_module.method:METHOD\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(SystemExit) as exc:
        cli_module.main(["--help"])
    assert exc.value.code == 1
    err = capsys.readouterr().err
    assert (
        "entry point broken = no_such_module.method:METHOD: cannot load it" in err and "Traceback" not in err
    )
