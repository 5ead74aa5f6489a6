"""The method registry: every bias method declares itself once, and the workflow is assembled from the declarations.

A method is a package with a ``method.py`` that defines ``METHOD``, a :class:`Method`: its name, the CLI group(s) it
adds to ``unstereo``, its config section(s) and the schema file of each, its Snakemake rules file(s), conda env(s) and
report captions, its pyproject extra(s) and the offline resources its rules fetch, the tables it writes (results
folder -> path pattern -> table schema), its report category and its headline metrics. A built-in method keeps all
of its files in its package folder (``rules.smk``, ``<section>.schema.yaml``, ``env.yaml``, ``captions/*.rst``), the
way a plugin does. From these:

- :mod:`unstereo.cli` adds each method's subcommands (imported lazily, on first use);
- the ``Snakefile`` includes each method's rules files, after the shared ones, in :func:`methods` order;
- :mod:`unstereo.config` adds each section to the top-level config schema (unknown keys rejected by its schema);
- :mod:`unstereo.workflow.outputs_check` validates each table of a finished run against its schema;
- the rules put each method's results under its report category (the Snakefile's ``METHODS`` is :func:`methods`:
  ``category=METHODS[name].category``, or ``METHODS[name].report_category(stage)``);
- :mod:`unstereo.model_card.card` puts every method with a ``headline_module`` on the model card.

Built-in methods are found by scanning ``unstereo/*/method.py``; a method in another distribution registers its
``Method`` under the entry-point group :data:`ENTRY_POINT_GROUP` (``toy = toy_method.method:METHOD``). Adding a
method therefore edits no shared file: see docs/adding-a-method.md.

Declarations stay cheap to import (``unstereo --help`` reads them): commands, schemas and the headline module
are named as ``"module:attr"`` strings and imported only when used.
"""

from __future__ import annotations

import importlib
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import entry_points
from pathlib import Path

from unstereo.errors import UnstereoError
from unstereo.headline_metric import HeadlineMetric

#: The entry-point group of methods shipped by other distributions.
ENTRY_POINT_GROUP = "unstereo.methods"

_PACKAGE_DIR = Path(__file__).resolve().parent


class MethodRegistryError(UnstereoError):
    """A method declaration is malformed or clashes with another one."""


def _check_ref(owner: str, what: str, ref: str) -> None:
    module, sep, attr = ref.partition(":")
    if not (sep and module and attr):
        raise MethodRegistryError(f"method {owner!r}: {what} {ref!r} is not a 'module:attribute' reference")


def load_ref(ref: str):
    """The object a ``"module:attr"`` reference names (the module imported now)."""
    module, _, attr = ref.partition(":")
    obj = importlib.import_module(module)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


@dataclass(frozen=True, eq=False)
class Method:
    """One bias method, as the workflow sees it.

    - ``name``: the registry name (the headline table's ``method`` value), e.g. ``"fairpair"``;
    - ``title``: how people call it, e.g. ``"FairPair"``;
    - ``cli``: subcommand -> ``"module:attr"`` of its click command or group; ``cli_help``: subcommand -> the first
      paragraph of that command's help (its docstring's, whitespace collapsed), which ``unstereo --help`` lists
      without importing the command (a subcommand without one is imported for its help);
    - ``config``: config section -> its JSON Schema file, a path (absolute, e.g. ``HERE / "toy.schema.yaml"``); it
      may ``$ref`` the shared schemas of ``unstereo/config/schemas`` by file name (``common.schema.yaml#/$defs/...``,
      ``model.schema.yaml``), and a bare file name is one of those shared schemas; every section defaults to ``{}``;
    - ``rules``: its Snakemake rules files (``HERE / "rules.smk"``; a relative path is relative to the Snakefile's
      directory). The ``conda:`` and ``caption=`` paths inside a rules file are relative to that file;
    - ``envs``: the conda env files of its rules (``HERE / "env.yaml"``), ``captions``: its report caption folders
      (``HERE / "captions"``), ``extras``: the pyproject extras its commands need, ``resources``: the offline
      resources (:data:`unstereo.resources.RESOURCES`) its rules fetch whatever the config (a model or corpus named
      in the config brings its own);
    - ``tables``: results folder -> ((path pattern below it, ``"module:NAME"`` of its TableSchema), ...), first
      match wins; a pattern matches part by part, ``*`` within one folder or file name;
    - ``category``: the report category its results are listed under; ``stage_categories`` gives stages that
      have one of their own (UnStereoEval's corpus statistics, benchmarks, ...);
    - ``headline``: its headline metrics (:class:`~unstereo.headline_metric.HeadlineMetric`), and
      ``headline_module`` the module the cross-method model card reads them with: its ``API``, an instance of a
      subclass of :class:`unstereo.model_card.headline.Headline`, with ``headline(config)`` (a
      :data:`unstereo.model_card.headline.HEADLINE` table), ``sources(config)`` (the finished tables it reads),
      ``models(config)`` (the model short names the method's config lists) and ``enabled(config)``; where the method
      has them, ``items``/``item_sources``, ``resampled``/``resampled_sources`` (the card's paired tests) and
      ``occupation_leans``/``occupation_sources`` (the agreement on occupations, unstereo.model_card.occupations),
      which default to none;
    - ``order``: where its rules are included (smaller first, then by name). Rules files read only the shared
      helpers of ``rules/common.smk`` and the config, never each other's globals, so the order is only the
      include (and listing) order.
    """

    name: str
    title: str
    cli: Mapping[str, str] = field(default_factory=dict)
    cli_help: Mapping[str, str] = field(default_factory=dict)
    config: Mapping[str, str | Path] = field(default_factory=dict)
    rules: tuple[str | Path, ...] = ()
    envs: tuple[str | Path, ...] = ()
    captions: tuple[str | Path, ...] = ()
    extras: tuple[str, ...] = ()
    resources: tuple[str, ...] = ()
    tables: Mapping[str, tuple[tuple[str, str], ...]] = field(default_factory=dict)
    category: str = ""
    stage_categories: Mapping[str, str] = field(default_factory=dict)
    headline: tuple[HeadlineMetric, ...] = ()
    headline_module: str | None = None
    order: int = 100

    def __post_init__(self) -> None:
        if not self.name.isidentifier():
            raise MethodRegistryError(f"method name {self.name!r} must be an identifier (it names folders)")
        if not self.category:
            raise MethodRegistryError(f"method {self.name!r}: needs a report category")
        for sub, ref in self.cli.items():
            _check_ref(self.name, f"CLI group {sub!r}", ref)
        for sub in self.cli_help:
            if sub not in self.cli:
                raise MethodRegistryError(
                    f"method {self.name!r}: cli_help names {sub!r}, not one of its subcommands"
                )
        for folder, entries in self.tables.items():
            for entry in entries:
                if len(entry) != 2:
                    raise MethodRegistryError(
                        f"method {self.name!r}: tables[{folder!r}] entries are (pattern, 'module:NAME') pairs"
                    )
                _check_ref(self.name, f"table schema of {folder}/{entry[0]}", entry[1])
        if self.headline_module is not None and (":" in self.headline_module or not self.headline_module):
            raise MethodRegistryError(
                f"method {self.name!r}: headline_module {self.headline_module!r} is a module name (no ':attr')"
            )
        for m in self.headline:
            if not isinstance(m, HeadlineMetric):
                raise MethodRegistryError(f"method {self.name!r}: headline entries must be HeadlineMetric")
        if self.headline and self.headline_module is None:
            raise MethodRegistryError(f"method {self.name!r}: headline metrics need a headline_module")
        for what in ("rules", "envs", "captions", "extras", "resources"):
            if isinstance(getattr(self, what), str | Path):
                raise MethodRegistryError(f"method {self.name!r}: {what} is a tuple, not one path or name")

    def report_category(self, stage: str | None = None) -> str:
        """The report category of ``stage``'s results (the method's own unless the stage has one)."""
        return self.stage_categories.get(stage, self.category) if stage else self.category

    @property
    def report_categories(self) -> tuple[str, ...]:
        """Every report category the method's results appear under, its own first."""
        return tuple(dict.fromkeys((self.category, *self.stage_categories.values())))

    def schema_path(self, section: str, schema_dir: str | Path | None = None) -> Path:
        """The schema file of config ``section`` (a bare file name: in ``schema_dir``, the packaged schemas)."""
        from unstereo.package_data import SCHEMA_DIR

        path = Path(self.config[section])
        return path if len(path.parts) > 1 else Path(schema_dir or SCHEMA_DIR) / path


def _declaration(obj, where: str) -> Method:
    if not isinstance(obj, Method):
        raise MethodRegistryError(f"{where}: METHOD is a {type(obj).__name__}, not a unstereo Method")
    return obj


def builtin_modules() -> list[str]:
    """The modules declaring the built-in methods: ``unstereo.<package>.method``, found by scanning."""
    return sorted(f"{__package__}.{p.parent.name}.method" for p in _PACKAGE_DIR.glob("*/method.py"))


def _discover() -> list[tuple[Method, str]]:
    """(declaration, where it came from) of every method: the built-in packages', then the entry points'."""
    found = []
    for module in builtin_modules():
        found.append((_declaration(getattr(importlib.import_module(module), "METHOD", None), module), module))
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        where = f"entry point {ep.name} = {ep.value}"
        try:
            obj = ep.load()
        except Exception as exc:  # say which entry point: a traceback does not say where the method came from
            raise MethodRegistryError(f"{where}: cannot load it: {exc}") from exc
        found.append((_declaration(obj, where), where))
    return found


@cache
def methods() -> dict[str, Method]:
    """Every registered method by name, in rules order (``order``, then name). Raises
    :class:`MethodRegistryError` when two declare the same name, subcommand, config section or results folder."""
    owners: dict[tuple[str, str], str] = {}
    out: dict[str, Method] = {}
    for m, where in sorted(_discover(), key=lambda mw: (mw[0].order, mw[0].name)):
        claims = [("method name", m.name)]
        claims += [("subcommand", s) for s in m.cli]
        claims += [("config section", s) for s in m.config]
        claims += [("results folder", f) for f in m.tables]
        for claim in claims:
            if claim in owners:
                raise MethodRegistryError(
                    f"{where}: {claim[0]} {claim[1]!r} is already declared by {owners[claim]}"
                )
            owners[claim] = where
        out[m.name] = m
    return out


def method(name: str) -> Method:
    """The registered method ``name`` (the error lists the known ones)."""
    registered = methods()
    if name not in registered:
        raise MethodRegistryError(f"no method {name!r} is registered (known: {', '.join(registered)})")
    return registered[name]


def cli_groups() -> dict[str, str]:
    """Subcommand -> ``"module:attr"`` of every method's CLI groups."""
    return {sub: ref for m in methods().values() for sub, ref in m.cli.items()}


def cli_helps() -> dict[str, str]:
    """Subcommand -> its declared one-line help (:attr:`Method.cli_help`), for every method that declares one."""
    return {sub: text for m in methods().values() for sub, text in m.cli_help.items()}


def config_sections(schema_dir: str | Path | None = None) -> dict[str, Path]:
    """Config section -> its schema file, for every method."""
    return {s: m.schema_path(s, schema_dir) for m in methods().values() for s in m.config}


def rules_files() -> list[str]:
    """Every method's rules files, in include order."""
    return [str(r) for m in methods().values() for r in m.rules]


def tables() -> dict[str, tuple[tuple[str, str], ...]]:
    """Results folder -> (path pattern, ``"module:NAME"`` of its schema) pairs, of every method."""
    return {folder: tuple(entries) for m in methods().values() for folder, entries in m.tables.items()}


def report_categories() -> dict[str, tuple[str, ...]]:
    """Method name -> the report categories its results appear under."""
    return {name: m.report_categories for name, m in methods().items()}
