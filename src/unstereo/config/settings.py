"""A config section's settings, declared once, in its schema: a typed settings object built from the schema, and the
command-line flags that override it, generated from the same schema.

:class:`Section` reads one section's schema (``fairpair.schema.yaml``, ...): its properties, types, defaults and
descriptions. From them it makes

- the settings object (:meth:`Section.build`): a frozen dataclass whose fields are the section's keys (a nested
  object with properties of its own, e.g. ``fairpair.prompts``, is a nested dataclass), every value validated and
  every default filled in by the schema (:func:`unstereo.config.load_section`); a bad value is a
  :class:`~unstereo.errors.ConfigError` naming its key;
- the override flags (:meth:`Section.options`): one click option per chosen key, named after its dotted path
  (``prompts.max_prompts`` -> ``--prompts-max-prompts``), typed from the schema (``format: path``: a file or folder),
  default None ("the section's"), its help the schema's ``description`` and default;
- the command decorator (:meth:`Section.command`): ``--settings`` (the section as inline JSON or a YAML/JSON file,
  :func:`unstereo.config.read_section_arg`), the override flags, and the settings object handed to the command
  whole as its ``settings`` parameter. A flag given on the command line overrides the section's value, which
  overrides the schema's default.

A command's other parameters (paths, ``--threads``, a model argument) stay ordinary click options. No default is
written anywhere but in the schema.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import json
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from unstereo.errors import ConfigError

#: Marks a property without a ``default`` in its schema.
NO_DEFAULT = object()


@dataclass(frozen=True)
class Setting:
    """One key of a section: its dotted ``path``, its (resolved) ``schema``, its schema ``default``
    (:data:`NO_DEFAULT` when it has none) and ``description``; ``nested``: an object whose keys are settings too."""

    path: str
    schema: Mapping[str, Any]
    default: Any
    description: str
    nested: bool

    @property
    def flag(self) -> str:
        """The override flag: the dotted path with ``-`` for ``.`` and ``_`` (``ngrams.max_n`` -> ``--ngrams-max-n``)."""
        return "--" + self.path.replace(".", "-").replace("_", "-")

    @property
    def param(self) -> str:
        """The click parameter name of the flag (kept apart from the command's own parameters)."""
        return "setting__" + self.path.replace(".", "__")


def _types(schema: Mapping[str, Any]) -> list[str]:
    """The schema's types; for an ``anyOf`` without a type of its own, its branches' (``[number, string]`` for
    a number or ``inf``)."""
    t = schema.get("type")
    if t is None and isinstance(schema.get("anyOf"), list):
        return list(
            dict.fromkeys(
                k for branch in schema["anyOf"] if isinstance(branch, Mapping) for k in _types(branch)
            )
        )
    t = t or []
    return [t] if isinstance(t, str) else list(t)


def _is_nested(schema: Mapping[str, Any]) -> bool:
    """An object (never null) with properties of its own and no free-named keys: its keys are settings."""
    return (
        _types(schema) == ["object"]
        and bool(schema.get("properties"))
        and not isinstance(schema.get("additionalProperties"), Mapping)
    )


def _is_pair(schema: Mapping[str, Any]) -> bool:
    """An array of exactly two strings (``[original, perturbed]``): ``A:B`` on the command line."""
    items = schema.get("items")
    return (
        _types(schema) == ["array"]
        and schema.get("minItems") == 2
        and schema.get("maxItems") == 2
        and isinstance(items, Mapping)
        and _types(items) == ["string"]
    )


class _SchemaValue(click.ParamType):
    """A command-line word as the value a schema takes: an integer, a number or a string, tried in that order among
    the schema's types (``auto`` or ``8`` for ``[integer, string]``); ``A:B`` for a pair; an enum as a choice. The
    schema checks the value afterwards (:meth:`Section.build`)."""

    def __init__(self, schema: Mapping[str, Any]):
        self.schema = schema
        self.name = (
            "A:B" if _is_pair(schema) else "/".join(t for t in _types(schema) if t != "null") or "value"
        )

    def convert(self, value: Any, param: click.Parameter | None, ctx: click.Context | None) -> Any:
        if not isinstance(value, str):
            return value
        if _is_pair(self.schema):
            a, sep, b = value.partition(":")
            if not sep or not a.strip() or not b.strip():
                self.fail(f"{value!r} is not A:B", param, ctx)
            return [a.strip(), b.strip()]
        types = _types(self.schema)
        if value in (_string_enum(self.schema) or ()):
            return value  # a word the schema names (``inf``), not the number float() would read
        for kind, parse in (("integer", int), ("number", float)):
            if kind in types:
                try:
                    return parse(value)
                except ValueError:
                    pass
        if "string" in types or not types:
            enum = self.schema.get("enum") or _string_enum(self.schema)
            if enum and value not in enum:
                self.fail(f"{value!r} is not one of {', '.join(map(str, enum))}", param, ctx)
            return value
        self.fail(f"{value!r} is not of type {self.name}", param, ctx)


def _string_enum(schema: Mapping[str, Any]) -> list[Any] | None:
    """The enum of an ``anyOf``'s string branch (``inf`` beside the numbers of an eta)."""
    for branch in schema.get("anyOf") or ():
        if isinstance(branch, Mapping) and _types(branch) == ["string"]:
            return branch.get("enum")
    return None


def _show(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def with_options(f: Any, options: Iterable[Callable[[Any], Any]]) -> Any:
    """``f`` decorated with click ``options``, listed in ``--help`` in the order given (decorators apply bottom-up)."""
    for option in reversed(list(options)):
        f = option(f)
    return f


def _help(setting: Setting) -> str:
    text = " ".join(setting.description.split())
    if setting.default is not NO_DEFAULT:
        text += f" [default: the section's, else {_show(setting.default)}]"
    return text.replace("%", "%%")


def lookup(data: Any, path: str) -> Any:
    """``data``'s value at the dotted ``path``; :data:`NO_DEFAULT` when a step is absent."""
    for step in path.split("."):
        if not isinstance(data, Mapping) or step not in data:
            return NO_DEFAULT
        data = data[step]
    return data


def _put(data: dict[str, Any], path: str, value: Any) -> None:
    *parents, last = path.split(".")
    for step in parents:
        inner = data.get(step)
        data[step] = inner = dict(inner) if isinstance(inner, Mapping) else {}
        data = inner
    data[last] = value


class Section:
    """The settings of config section ``name`` declared by ``schema`` (a mapping; local ``$ref``s such as
    ``#/$defs/pair`` are followed; a reference to another file's value (not an object) is followed by
    ``refs(ref) -> schema`` where given; an object of another file is a leaf). ``validate(data) -> data``: fills in
    the defaults and raises a ConfigError naming ``name.<key>`` (default: the schema alone, without other files;
    :meth:`of` uses the config's own validation)."""

    def __init__(
        self,
        name: str,
        schema: Mapping[str, Any],
        validate: Callable[[dict[str, Any]], dict[str, Any]] | None = None,
        refs: Callable[[str], Mapping[str, Any]] | None = None,
    ):
        self.name = name
        self.schema = schema
        self._refs = refs
        self._validate = validate or functools.partial(_validate_alone, name, schema)
        self.settings: dict[str, Setting] = {}
        self._classes: dict[str, type] = {}
        self._walk(schema, "")
        self.type = self._dataclass(schema, "")

    @classmethod
    def of(cls, name: str) -> Section:
        """The section ``name`` of the config (its schema file from the method registry)."""
        return _section(name)

    # ---------------------------------------------------------------------------------------------- schema
    def _resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        ref = schema.get("$ref")
        if not isinstance(ref, str) or not (ref.startswith("#/") or self._refs is not None):
            return schema
        target: Any = self.schema
        if ref.startswith("#/"):
            for step in ref[2:].split("/"):
                target = target[step]
        else:  # another file's definition of a value (common.schema.yaml#/$defs/etas): its type, default, bounds
            assert self._refs is not None
            target = self._refs(ref)
            if not _types(target) or "object" in _types(target):
                return schema  # an object of another file (a model spec) stays one setting, as given
        merged = {**self._resolve(target), **{k: v for k, v in schema.items() if k != "$ref"}}
        return merged

    def _walk(self, schema: Mapping[str, Any], prefix: str) -> None:
        for key, sub in (schema.get("properties") or {}).items():
            sub = self._resolve(sub)
            if isinstance(sub.get("items"), Mapping):
                sub = {**sub, "items": self._resolve(sub["items"])}
            path = f"{prefix}{key}"
            nested = _is_nested(sub)
            self.settings[path] = Setting(
                path, sub, sub.get("default", NO_DEFAULT), sub.get("description", ""), nested
            )
            if nested:
                self._walk(sub, f"{path}.")

    def _dataclass(self, schema: Mapping[str, Any], prefix: str) -> type:
        fields = []
        for key in schema.get("properties") or {}:
            if not key.isidentifier():
                raise ConfigError(
                    f"a section key must be a Python name: {key!r}", key=f"{self.name}.{prefix}{key}"
                )
            setting = self.settings[f"{prefix}{key}"]
            kind: Any = self._dataclass(setting.schema, f"{setting.path}.") if setting.nested else Any
            fields.append((key, kind))
        title = "".join(p.title() for p in f"{self.name}.{prefix}".replace("_", ".").split(".") if p)
        cls = dataclasses.make_dataclass(f"{title}Settings", fields, frozen=True)
        self._classes[prefix] = cls
        return cls

    # ---------------------------------------------------------------------------------------------- object
    def build(self, data: Mapping[str, Any] | None = None, overrides: Mapping[str, Any] | None = None) -> Any:
        """The settings object of ``data`` (the section's keys; absent ones take the schema's defaults) with
        ``overrides`` (dotted path -> value) over it; validated: a bad value is a ConfigError naming its key."""
        merged = copy.deepcopy(dict(data or {}))
        for path, value in (overrides or {}).items():
            if path not in self.settings:
                raise ConfigError("not a key of this section", key=f"{self.name}.{path}")
            _put(merged, path, value)
        return self.instance(self._validate(merged))

    def instance(self, data: Mapping[str, Any], prefix: str = "") -> Any:
        """The settings object of an already validated section ``data`` (a key without a default in the schema and
        absent from ``data`` is None)."""
        values: dict[str, Any] = {f.name: None for f in dataclasses.fields(self._classes[prefix])}
        for key, value in data.items():
            setting = self.settings[f"{prefix}{key}"]
            values[key] = self.instance(value, f"{setting.path}.") if setting.nested else value
        return self._classes[prefix](**values)

    def rebuild(self, change: Callable[[dict[str, Any]], dict[str, Any]]) -> Any:
        """Inside a command of :meth:`command`: its settings object again, with ``change`` applied to the section
        ``--settings`` gave (the flags still over it), e.g. an entry of the section for one item over its keys."""
        raw, given = click.get_current_context().meta[f"settings.{self.name}"]
        try:
            return self.build(change(copy.deepcopy(raw)), given)
        except ConfigError as exc:
            raise click.UsageError(f"--settings: {exc}") from exc

    def default(self, path: str) -> Any:
        """The schema's default of ``path`` (a ConfigError when it declares none)."""
        setting = self.settings.get(path)
        if setting is None or setting.default is NO_DEFAULT:
            raise ConfigError("no default in the schema", key=f"{self.name}.{path}")
        return copy.deepcopy(setting.default)

    # ---------------------------------------------------------------------------------------------- click
    def option(self, path: str) -> Callable[[Any], Any]:
        """The click option overriding ``path`` (a scalar, a pair or an array of them: repeat the flag)."""
        setting = self.settings.get(path)
        if setting is None:
            raise ConfigError("not a key of this section", key=f"{self.name}.{path}")
        schema = setting.schema
        types = _types(schema)
        if setting.nested or "object" in types:
            raise ConfigError("an object has no flag: give it in --settings", key=f"{self.name}.{path}")
        if types == ["boolean"]:
            flag = setting.flag
            return click.option(f"{flag}/--no-{flag[2:]}", setting.param, default=None, help=_help(setting))
        if "array" in types and not _is_pair(schema):
            return click.option(setting.flag, setting.param, multiple=True, type=_SchemaValue(schema.get("items") or {}),
                                help=_help(setting) + " (repeat the flag)")  # fmt: skip
        kind = (
            click.Path() if schema.get("format") == "path" else _SchemaValue(schema)
        )  # a path: the command reads it
        return click.option(setting.flag, setting.param, default=None, type=kind, help=_help(setting))

    def given(self, kwargs: dict[str, Any], paths: Iterable[str]) -> dict[str, Any]:
        """The override flags of ``paths`` (:meth:`options`) that a command's ``kwargs`` hold, popped from them:
        dotted path -> value, for the flags given on the command line (a repeated flag as a list)."""
        given = {}
        for path in paths:
            value = kwargs.pop(self.settings[path].param)
            if value is not None and value != ():
                given[path] = list(value) if isinstance(value, tuple) else value
        return given

    def options(self, paths: Iterable[str]) -> Callable[[Any], Any]:
        """The override options of ``paths``, in that order in ``--help``."""
        chosen = [self.option(p) for p in paths]
        return lambda f: with_options(f, chosen)

    def command(
        self, *paths: str, required: Iterable[str] = (), entry: Iterable[str] = ()
    ) -> Callable[[Any], Any]:
        """``--settings`` and the override flags of ``paths``; the command receives the settings object whole as its
        ``settings`` parameter (flag > ``--settings`` > schema default). ``required``: keys that the flag or
        ``--settings`` must give (the schema's default is not enough). ``entry``: keys of a model entry that the
        workflow folds into the ``--settings`` JSON beside the section's (``revision``, ``masked``:
        :data:`unstereo.workflow.rules.ENTRY_OPTIONS`; not keys of the section): each goes to the command's own
        option of that name when the command line left it unset."""
        needed = tuple(required)
        folded_keys = tuple(k for k in entry if k not in self.settings)
        params = (
            {self.settings[p].param: p for p in paths} if all(p in self.settings for p in paths) else None
        )
        if params is None:
            missing = next(p for p in paths if p not in self.settings)
            raise ConfigError("not a key of this section", key=f"{self.name}.{missing}")

        def decorate(f):
            @functools.wraps(f)
            def wrapper(*args, **kwargs):
                from unstereo.config import read_section_arg

                raw = read_section_arg(kwargs.pop("settings", None), self.name)
                if folded_keys and isinstance(raw, Mapping):
                    raw = dict(raw)
                    for key in folded_keys:
                        value = raw.pop(key, None)
                        if value is not None and kwargs.get(key) in (None, False):
                            kwargs[key] = value
                given = self.given(kwargs, paths)
                for path in needed:
                    if path not in given and lookup(raw, path) in (NO_DEFAULT, None):
                        flag = self.settings[path].flag
                        raise click.UsageError(f"{flag} is required (or {self.name}.{path} in --settings)")
                click.get_current_context().meta[f"settings.{self.name}"] = (raw, given)
                try:
                    kwargs["settings"] = self.build(raw, given)
                except ConfigError as exc:
                    path = (exc.key or "").removeprefix(f"{self.name}.")
                    # the flag of the key, or of the array it is an item of (etas.0 -> --etas)
                    flag = next((p for p in given if path == p or path.startswith(p + ".")), None)
                    where = f"{self.settings[flag].flag}: " if flag else "--settings: "
                    raise click.UsageError(where + str(exc)) from exc
                return f(*args, **kwargs)

            wrapper.settings_section = self.name  # type: ignore[attr-defined]
            wrapper.settings_paths = dict(params)  # type: ignore[attr-defined]  # flag's parameter -> its key
            decorated = self.options(paths)(wrapper)
            return click.option(
                "--settings",
                default=None,
                help=f"the {self.name} config section: inline JSON or a YAML/JSON file (a whole config or the "
                "section); a flag below overrides its value, which overrides the schema's default",
            )(decorated)

        return decorate


def _validate_alone(name: str, schema: Mapping[str, Any], data: dict[str, Any]) -> dict[str, Any]:
    from unstereo.config import validate_section

    return validate_section(name, schema, data)


@functools.cache
def _section(name: str) -> Section:
    from unstereo import config

    path = config.section_schema_path(name)
    resolver = config.config_schema()[1].resolver()
    return Section(
        name,
        config.read_schema(Path(path)),
        functools.partial(config.load_section, name),
        lambda ref: resolver.lookup(ref).contents,
    )


def section(name: str) -> Section:
    """:meth:`Section.of`: the config section ``name``'s settings (cached)."""
    return _section(name)


def command_seed(settings: Any) -> int:
    """The seed a command uses from its settings object: the section's ``seed``, or 0 where it is null. Null means
    "derived from the global seed", which the workflow's rule works out and folds into ``--settings``
    (:func:`unstereo.workflow.rules.settings_json`); a command run alone starts at 0."""
    return settings.seed if settings.seed is not None else 0


def as_dict(settings: Any) -> dict[str, Any]:
    """A settings object back as the section mapping (nested objects as mappings; a copy)."""
    return dataclasses.asdict(settings)
