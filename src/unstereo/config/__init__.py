"""Config validation against ``workflow/schemas/config.schema.yaml`` (JSON Schema, with defaults filled in).

That file holds the shared keys (``seed``, ``results_dir``, ``resources``, ...); each method's sections are added
from the method registry (:mod:`unstereo.method_registry`), one schema file per section (``corpus.schema.yaml``,
``fairpair.schema.yaml``, ...) referenced by its file name, so each stage documents its own keys and a new method's
section needs no edit here. Errors name the dotted key path, e.g. ``config key 'corpus.window'``.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Mapping
from functools import cache
from pathlib import Path
from typing import Any

import jsonschema
import yaml
from referencing import Registry, Resource
from referencing.jsonschema import DRAFT202012

from unstereo.errors import ConfigError
from unstereo.package_data import SCHEMA_DIR

SCHEMA_FILE = "config.schema.yaml"


def _load_yaml(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


@cache
def _registry(schema_dir: Path, extra: tuple[Path, ...] = ()) -> Registry:
    """The schema files of ``schema_dir`` and the ``extra`` ones (a method's own, elsewhere), each under its file
    name, so that any of them can ``$ref`` another (e.g. ``common.schema.yaml#/$defs/etas``)."""
    resources: dict = {}
    for path in [*sorted(schema_dir.glob("*.schema.yaml")), *extra]:
        if path.name in resources and path.resolve() != resources[path.name][0]:
            raise ConfigError(
                f"two schema files are named {path.name!r}: {resources[path.name][0]} and {path}"
            )
        contents = _load_yaml(path)
        # Without "$schema", jsonschema keeps our default-filling validator class when it follows a $ref
        # (a "$schema" key would switch back to the plain Draft 2020-12 class).
        contents.pop("$schema", None)
        resources[path.name] = (
            path.resolve(),
            Resource.from_contents(contents, default_specification=DRAFT202012),
        )
    return Registry().with_resources((name, resource) for name, (_, resource) in resources.items())


def config_schema(schema_dir: str | Path | None = None) -> tuple[dict[str, Any], Registry]:
    """The top-level config schema, with one property per method section of the registry (``{}`` by default),
    and the registry of schema files its ``$ref``s resolve in."""
    from unstereo import (
        method_registry,  # here: `import unstereo.config` stays light (the CLI's help imports it)
    )

    schema_dir = Path(schema_dir) if schema_dir else SCHEMA_DIR
    schema = _load_yaml(schema_dir / SCHEMA_FILE)
    properties = schema.setdefault("properties", {})
    sections = method_registry.config_sections(schema_dir)
    for section, path in sections.items():
        if section in properties:
            raise ConfigError(
                f"a method declares section {section!r}, a shared key of {SCHEMA_FILE}", key=section
            )
        if not path.is_file():
            raise ConfigError(f"schema file of config section {section!r} not found: {path}", key=section)
        properties[section] = {"$ref": path.name, "default": {}}
    extra = tuple(
        sorted(p.resolve() for p in sections.values() if p.resolve().parent != schema_dir.resolve())
    )
    return schema, _registry(schema_dir.resolve(), extra)


def _default_of(validator, subschema: dict) -> tuple[bool, Any]:
    """(True, default) of a property schema: its own ``default``, else the one of the definition its ``$ref``
    names (e.g. ``common.schema.yaml#/$defs/etas``, so that a shared definition carries a shared default)."""
    if "default" in subschema:
        return True, subschema["default"]
    ref = subschema.get("$ref")
    if isinstance(ref, str):
        # The validator's resolver knows the base URI of the schema being validated (relative refs resolve).
        target = validator._resolver.lookup(ref).contents
        if isinstance(target, dict):
            return _default_of(validator, target)
    return False, None


def _extend_with_default(validator_class):
    """A validator that also fills in ``default`` values of properties (the Snakemake convention)."""
    validate_properties = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for prop, subschema in properties.items():
                if prop not in instance and isinstance(subschema, dict):
                    found, default = _default_of(validator, subschema)
                    if found:
                        instance[prop] = copy.deepcopy(default)
        yield from validate_properties(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


_DefaultValidator = _extend_with_default(jsonschema.Draft202012Validator)


_UNKNOWN = ("additionalProperties", "unevaluatedProperties")


def _unexpected(error: jsonschema.ValidationError) -> list[str]:
    """The unknown keys an additionalProperties/unevaluatedProperties error is about."""
    if not isinstance(error.instance, dict):
        return []
    if error.validator == "additionalProperties":
        allowed = set(error.schema.get("properties", {}))
        return [str(k) for k in error.instance if k not in allowed]
    # unevaluatedProperties: the allowed keys are spread over $ref'd schemas; the message names the others
    m = re.search(r"\((.*) (?:was|were) unexpected\)", error.message)
    return re.findall(r"'([^']*)'", m.group(1)) if m else []


def _key_path(error: jsonschema.ValidationError) -> str:
    path = [str(p) for p in error.absolute_path]
    if error.validator in _UNKNOWN:
        extra = _unexpected(error)
        if extra:
            path.append(extra[0])
    if error.validator == "required" and isinstance(error.validator_value, list):
        missing = [k for k in error.validator_value if k not in (error.instance or {})]
        if missing:
            path.append(str(missing[0]))
    return ".".join(path) or "<top level>"


def check(validator: Any, data: Any, prefix: str | None = None, source: str | None = None) -> Any:
    """Fill in defaults of ``data`` in place and raise :class:`ConfigError` naming the first offending key
    (``prefix.`` prepended: a section validated alone); return ``data``."""
    # Two passes: defaults first (so that nested defaults exist), then a clean error list.
    for _ in validator.iter_errors(data):
        pass
    errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    if errors:
        err = errors[0]
        if err.validator in _UNKNOWN:
            message = "unknown key (not in the schema; see config/README.md)"
        elif err.validator == "not" and err.validator_value == {}:
            message = "this key does not apply here (see config/README.md)"
        else:
            message = err.message
        key = _key_path(err)
        if prefix:
            key = prefix if key == "<top level>" else f"{prefix}.{key}"
        raise ConfigError(message, key=key, source=source)
    return data


def validate_config(
    config: dict[str, Any], schema_dir: str | Path | None = None, source: str | None = None
) -> dict[str, Any]:
    """Validate ``config`` in place, fill in defaults, and return it.

    Raises :class:`ConfigError` naming the first offending key (unknown keys included: every object in the schema
    sets ``additionalProperties: false``).
    """
    schema, registry = config_schema(schema_dir)
    check(_DefaultValidator(schema, registry=registry), config, source=source)
    check_variant_models(config, source)
    return config


def _variant_refs(data: Any, key: str) -> Iterator[tuple[str, str]]:
    """(dotted key, name) of every model entry ``{variant: NAME}`` (or ``variant:NAME``) below ``data``."""
    from unstereo.models.spec import VARIANT_PREFIX

    if isinstance(data, Mapping):
        if isinstance(data.get("variant"), str):
            yield f"{key}.variant", data["variant"]
        for k, v in data.items():
            yield from _variant_refs(v, f"{key}.{k}")
    elif isinstance(data, list):
        for i, v in enumerate(data):
            yield from _variant_refs(v, f"{key}[{i}]")
    elif isinstance(data, str) and data.startswith(VARIANT_PREFIX):
        yield key, data[len(VARIANT_PREFIX) :]


def check_variant_models(config: Mapping[str, Any], source: str | None = None) -> None:
    """Every model variant a section names is declared in ``variants.models``, and no variant's base is a variant:
    else a :class:`ConfigError` naming the key."""
    declared = (config.get("variants") or {}).get("models") or {}
    for name, entry in declared.items():
        base = entry.get("base") if isinstance(entry, Mapping) else None
        for key, _ in _variant_refs({"base": base}, f"variants.models.{name}"):
            raise ConfigError("a variant's base is a model, not another variant", key=key, source=source)
    for section, value in config.items():
        if section == "variants":
            continue
        for key, name in _variant_refs(value, section):
            if name not in declared:
                known = ", ".join(sorted(declared)) or "none"
                raise ConfigError(
                    f"no variant {name!r} is declared in variants.models (declared: {known})",
                    key=key,
                    source=source,
                )


def load_section(
    name: str, section: dict[str, Any] | None = None, schema_dir: str | Path | None = None
) -> dict[str, Any]:
    """A copy of config section ``name`` (e.g. ``generate``, ``sentiment``, ``biastest``) validated against its
    schema file alone, every default filled in; errors name ``<name>.<key>``. The one reader of a section given on
    its own (a stage's ``--settings``); :func:`validate_config` reads a whole config."""
    path = section_schema_path(name, schema_dir)
    # every schema file it may $ref: the shared ones and the other sections' (biastest -> score.schema.yaml)
    validator = _DefaultValidator(read_schema(path), registry=config_schema(schema_dir)[1])
    return check(validator, copy.deepcopy(section or {}), prefix=name)


def section_schema_path(name: str, schema_dir: str | Path | None = None) -> Path:
    """The schema file of config section ``name`` (a method's, from the registry, or a shared one)."""
    from unstereo import method_registry

    schema_dir = Path(schema_dir) if schema_dir else SCHEMA_DIR
    path = method_registry.config_sections(schema_dir).get(name) or schema_dir / f"{name}.schema.yaml"
    if not path.is_file():
        raise ConfigError(f"no schema file for config section {name!r}: {path}", key=name)
    return path


def read_schema(path: Path) -> dict[str, Any]:
    """A schema file's contents (YAML)."""
    return _load_yaml(path)


def validate_section(name: str, schema: Mapping[str, Any], section: dict[str, Any] | None) -> dict[str, Any]:
    """A copy of ``section`` validated against ``schema`` (a self-contained schema: no reference to another file),
    every default filled in; errors name ``<name>.<key>``."""
    return check(_DefaultValidator(schema), copy.deepcopy(section or {}), prefix=name)


def read_section_arg(value: str | None, name: str) -> dict[str, Any]:
    """The mapping a stage's ``--settings`` gives for config section ``name``: inline JSON, or a YAML/JSON file
    holding the section or a whole config with a ``name`` key (``{}`` for none). Not yet validated: pass it (with
    any command-line overrides) to :func:`load_section`."""
    import json

    if not value:
        return {}
    text = value
    path = Path(value)
    try:
        if not value.lstrip().startswith("{") and path.is_file():
            text = path.read_text(encoding="utf-8")
        data = json.loads(text) if text.lstrip().startswith("{") else yaml.safe_load(text)
    except (json.JSONDecodeError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(f"--settings is neither JSON nor a readable YAML file: {exc}") from exc
    if not isinstance(data, dict):
        raise ConfigError("--settings must be a mapping")
    if isinstance(data.get(name), dict):
        data = data[name]
    return data


def load_config(path: str | Path, schema_dir: str | Path | None = None) -> dict[str, Any]:
    """Read a YAML config file and validate it (see :func:`validate_config`)."""
    path = Path(path)
    try:
        config = _load_yaml(path) or {}
    except yaml.YAMLError as exc:
        raise ConfigError(f"not valid YAML: {exc}", source=str(path)) from exc
    except UnicodeDecodeError as exc:  # random bytes, a binary file given by mistake
        raise ConfigError(
            f"not a text file (not UTF-8: {exc.reason} at byte {exc.start})", source=str(path)
        ) from exc
    except OSError as exc:
        raise ConfigError(f"cannot read it: {exc.strerror or exc}", source=str(path)) from exc
    return validate_config(config, schema_dir=schema_dir, source=str(path))
