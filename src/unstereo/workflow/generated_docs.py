"""Documentation generated from the method registry, the config schemas and the workflow, so that it cannot drift.

Generated blocks sit between markers in the Markdown files (and, as ``#`` comments, in the Slurm profile)::

    <!-- generated: config-section corpus -->
    ...
    <!-- end generated -->

Block kinds:

- ``config-section NAME``: one table of config section ``NAME`` (key, dotted for nested objects; type, with the enum
  values; default, given below the table when it is long; description), rendered from the section's schema, which
  the method registry names (:func:`unstereo.method_registry.config_sections`); ``config-section top-level``: the
  shared keys of ``config.schema.yaml``;
- ``gpu-rules``: the rules that run a model and request a GPU when their section's ``device`` is ``cuda``, with that
  config key (:func:`gpu_rules`).

``python -m unstereo.workflow.generated_docs --write`` rewrites every block in place; ``--check`` exits 1 naming each stale
block and the command that fixes it (tests/repo/test_generated_docs.py runs the check).

How the GPU rules are found: the workflow itself is parsed (Snakemake's API, no DAG, no dry run: a parse takes
about 3 s the first time and well under 1 s after) once with every ``device`` key of the schemas set to ``cpu``
and once per ``device`` key with only that key set to ``cuda``; a rule whose parsed ``resources`` gain ``gpu`` is
controlled by that key. So the list follows whatever ``rules/*.smk`` declare (through
``unstereo.workflow.rules.job_resources`` or by hand) and no rule name is kept anywhere by hand.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import yaml

#: The repository root (the Markdown files below are relative to it).
REPO = Path(__file__).resolve().parents[3]

#: Files that hold generated blocks, relative to the repository root.
DOC_FILES = (
    "config/README.md",
    "docs/workflow-rules.md",
    "docs/slurm.md",
    "workflow/profiles/slurm/config.yaml",
)

COMMAND = "python -m unstereo.workflow.generated_docs --write"

_START = re.compile(r"^(?P<indent>[ \t]*)(?P<comment>#\s*)?<!-- generated: (?P<name>[^>]*?) -->[ \t]*$")
_END = re.compile(r"^[ \t]*(#\s*)?<!-- end generated -->[ \t]*$")


# ---- schemas -> tables ---------------------------------------------------------------------------------------


def _load_yaml(path: Path) -> Any:
    with open(path, encoding="utf-8") as fh:
        return yaml.safe_load(fh)


def _shared_schema_dir() -> Path:
    from unstereo.package_data import SCHEMA_DIR

    return SCHEMA_DIR


@dataclass(frozen=True)
class Row:
    """One line of a section table."""

    key: str
    type: str
    default: str
    description: str


class _Resolver:
    """Follows ``$ref`` of a schema file: ``#/...`` inside it, ``FILE#/...`` in its folder or the shared schemas."""

    def __init__(self, path: Path, shared_dir: Path | None = None) -> None:
        self.path = Path(path)
        self.shared_dir = Path(shared_dir) if shared_dir else _shared_schema_dir()

    def _file(self, name: str) -> Path:
        here = self.path.parent / name
        if here.exists():
            return here
        if not (self.shared_dir / name).exists():
            # a method's own schema by file name (biastest's `score.schema.yaml#/...`), as unstereo.config resolves it
            from unstereo.method_registry import config_sections

            for path in config_sections().values():
                if path.name == name:
                    return path
        return self.shared_dir / name

    def resolve(self, ref: str) -> tuple[dict, _Resolver, str]:
        """(the referenced schema, the resolver of its file, the referenced file name or '' inside this one)."""
        file, _, pointer = ref.partition("#")
        resolver = _Resolver(self._file(file), self.shared_dir) if file else self
        doc = _load_yaml(resolver.path)
        for part in [p for p in pointer.split("/") if p]:
            doc = doc[part]
        return doc, resolver, file


def _has_control(value: Any) -> bool:
    if isinstance(value, str):
        return any(not ch.isprintable() for ch in value)
    if isinstance(value, Mapping):
        return any(_has_control(k) or _has_control(v) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return any(_has_control(v) for v in value)
    return False


def _code(value: Any) -> str:
    """A value as inline Markdown code, in YAML flow style (``null``, ``[a, b]``, ``{k: v}``); a value holding a
    control character (a newline) in JSON, also valid YAML, so that it stays on one line (``["\\n"]``)."""
    if _has_control(value):
        text = json.dumps(value)
    elif isinstance(value, str):
        text = value if value else '""'
        if value and (value != value.strip() or value[0] in "[{'\"&*!|>%@`" or ": " in value):
            text = json.dumps(value)
    else:
        text = yaml.safe_dump(value, default_flow_style=True, width=10**6, sort_keys=False).strip()
        text = text.removesuffix("\n...").removesuffix("...").strip()
    return f"`{text}`" if "`" not in text else f"`` {text} ``"


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _types(schema: Mapping[str, Any]) -> list[str]:
    t = schema.get("type")
    if t is None:
        out = []
        for alt in schema.get("anyOf", []) + schema.get("oneOf", []):
            out += (
                _types(alt)
                if "$ref" not in alt
                else ["model spec" if _is_model_ref(alt["$ref"]) else "object"]
            )
        return list(dict.fromkeys(out))
    types = [t] if isinstance(t, str) else list(t)
    if "array" in types and isinstance(schema.get("items"), Mapping):
        item = _types(schema["items"])
        if item:
            types[types.index("array")] = f"array of {' or '.join(item)}"
    return types


def _is_model_ref(ref: str) -> bool:
    return ref.split("#")[0] == "model.schema.yaml"


def _type_cell(schema: Mapping[str, Any], model_spec: bool) -> str:
    if model_spec:
        return "[model spec](#model-spec)"
    text = " or ".join(_types(schema)) or "any"
    enum = schema.get("enum")
    if enum is None and isinstance(schema.get("items"), Mapping):
        enum = schema["items"].get("enum")
    if enum:
        text += ": " + ", ".join(_code(v) for v in enum)
    return text


def _merge(schema: Mapping[str, Any], resolver: _Resolver) -> tuple[dict, _Resolver, bool]:
    """``schema`` with a ``$ref`` to a definition merged under its own keys (its own keys win); True when it is a
    model spec (a reference to the shared model schema)."""
    schema = dict(schema)
    model_spec = False
    while "$ref" in schema:
        ref = schema.pop("$ref")
        if _is_model_ref(ref):
            model_spec = True
            # a model spec with per-use keys of its own (score.models entries): keep those, drop the spec's
            if "properties" not in schema:
                break
            continue
        target, resolver, _ = resolver.resolve(ref)
        schema = {**target, **schema}
    return schema, resolver, model_spec


def _rows(schema: Mapping[str, Any], resolver: _Resolver, prefix: str) -> Iterator[Row]:
    for name, sub in (schema.get("properties") or {}).items():
        sub, sub_resolver, model_spec = _merge(sub, resolver)
        if isinstance(sub.get("items"), Mapping) and "$ref" in sub["items"]:
            items, _, items_model = _merge(sub["items"], sub_resolver)
            sub["items"] = {"type": "model spec"} if items_model else items
        key = f"{prefix}{name}"
        if sub.get("not") == {}:  # a key that is forbidden here (e.g. an endpoint for scoring): say so
            yield Row(key, "not allowed", "", _cell(sub.get("description", "")))
            continue
        nested = sub.get("properties") and not model_spec
        values = sub.get("additionalProperties")
        if nested and sub.get("additionalProperties") is not False and isinstance(values, Mapping):
            nested = False
        if nested:
            if sub.get("description"):
                yield Row(key, "object", "", _cell(sub["description"]))
            yield from _rows(sub, sub_resolver, f"{key}.")
            continue
        default = _code(sub["default"]) if "default" in sub else ""
        entry = None
        if isinstance(values, Mapping):  # a map NAME -> entry
            entry, entry_resolver, entry_model = _merge(values, sub_resolver)
        type_cell = _type_cell(sub, model_spec)
        if entry is not None and entry_model and not entry.get("properties"):
            type_cell = "object: NAME -> [model spec](#model-spec)"  # a map of plain model specs
        yield Row(key, type_cell, default, _cell(sub.get("description", "")))
        if entry is not None and entry.get("properties"):  # the entry's keys as KEY.NAME.x
            yield from _rows(entry, entry_resolver, f"{key}.NAME.")


def section_rows(schema_path: str | Path, shared_dir: str | Path | None = None) -> list[Row]:
    """The rows of the table of the section whose schema is ``schema_path``."""
    resolver = _Resolver(Path(schema_path), Path(shared_dir) if shared_dir else None)
    schema, resolver, _ = _merge(_load_yaml(resolver.path), resolver)
    return list(_rows(schema, resolver, ""))


#: A default longer than this (characters of its cell) is written below the table, so that the column stays narrow.
LONG_DEFAULT = 200


def render_table(rows: list[Row]) -> str:
    """Markdown table of ``rows``; a default longer than :data:`LONG_DEFAULT` is given after the table (its cell
    says "below")."""
    lines = ["| key | type | default | description |", "| --- | --- | --- | --- |"]
    long = []
    for r in rows:
        default = r.default
        if len(default) > LONG_DEFAULT:
            long.append(f"Default of `{r.key}`: {default}")
            default = "below the table"
        lines.append(f"| `{r.key}` | {r.type} | {default} | {r.description} |")
    for note in long:
        lines += ["", note]
    return "\n".join(lines)


def section_table(schema_path: str | Path, shared_dir: str | Path | None = None) -> str:
    return render_table(section_rows(schema_path, shared_dir))


def _top_level_schema() -> Path:
    from unstereo.config import SCHEMA_FILE

    return _shared_schema_dir() / SCHEMA_FILE


# ---- the workflow -> GPU rules ---------------------------------------------------------------------------------


def device_keys() -> list[str]:
    """Every ``device`` key of the config sections (dotted, e.g. ``biastest.generate.device``), from the schemas."""
    from unstereo.method_registry import config_sections

    keys = []
    for section, path in config_sections().items():
        keys += [f"{section}.{row.key}" for row in section_rows(path) if row.key.split(".")[-1] == "device"]
    return keys


def _nested(key: str, value: Any) -> dict:
    out: Any = value
    for part in reversed(key.split(".")):
        out = {part: out}
    return out


def _deep_merge(a: dict, b: Mapping) -> dict:
    out = dict(a)
    for k, v in b.items():
        out[k] = _deep_merge(out[k], v) if isinstance(v, Mapping) and isinstance(out.get(k), dict) else v
    return out


def _gpu_rules_of(config: Mapping[str, Any]) -> set[str]:
    """The rules whose parsed resources request a GPU, the workflow parsed with ``config`` on top of the default."""
    import contextlib
    import io

    from snakemake.api import SnakemakeApi
    from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

    with contextlib.redirect_stderr(io.StringIO()), SnakemakeApi(OutputSettings()) as api:
        wf = api.workflow(
            resource_settings=ResourceSettings(),
            config_settings=ConfigSettings(config=dict(config)),
            snakefile=REPO / "Snakefile",
            workdir=REPO,
        )
        rules = wf._workflow.rules
        return {r.name for r in rules if any(k in r.resources for k in ("gpu", "gres"))}


@cache
def gpu_rules() -> dict[str, str]:
    """Rule -> the ``device`` key that makes it request a GPU (``cuda``), in the workflow's rule order by key."""
    keys = device_keys()
    cpu: dict = {}
    for key in keys:
        cpu = _deep_merge(cpu, _nested(key, "cpu"))
    baseline = _gpu_rules_of(cpu)
    if baseline:
        raise RuntimeError(f"rules request a GPU with every device on cpu: {sorted(baseline)}")
    out: dict[str, str] = {}
    for key in keys:
        for rule in sorted(_gpu_rules_of(_deep_merge(cpu, _nested(key, "cuda"))) - baseline):
            out.setdefault(rule, key)
    return out


def gpu_rules_table(rules: Mapping[str, str]) -> str:
    by_key: dict[str, list[str]] = {}
    for rule, key in rules.items():
        by_key.setdefault(key, []).append(rule)
    lines = ["| rule | device key |", "| --- | --- |"]
    lines += [f"| {', '.join(f'`{r}`' for r in rs)} | `{key}` |" for key, rs in by_key.items()]
    return "\n".join(lines)


def gpu_rules_comment(rules: Mapping[str, str]) -> str:
    by_key: dict[str, list[str]] = {}
    for rule, key in rules.items():
        by_key.setdefault(key, []).append(rule)
    return "\n".join(f"{key}: {', '.join(rs)}" for key, rs in by_key.items())


# ---- blocks ---------------------------------------------------------------------------------------------------


def render_block(name: str, markdown: bool = True) -> str:
    """The generated text of block ``name`` (without markers)."""
    kind, _, arg = name.partition(" ")
    if kind == "config-section":
        from unstereo.method_registry import config_sections

        if arg == "top-level":
            return section_table(_top_level_schema())
        sections = config_sections()
        if arg not in sections:
            raise KeyError(f"no config section {arg!r} (known: {', '.join(sections)})")
        return section_table(sections[arg])
    if kind == "gpu-rules":
        return gpu_rules_table(gpu_rules()) if markdown else gpu_rules_comment(gpu_rules())
    raise KeyError(f"unknown generated block {name!r}")


def regenerate(text: str, render=None) -> tuple[str, list[str]]:
    """``text`` with every generated block rendered anew, and the names of the blocks that changed."""
    render = render or render_block
    lines = text.split("\n")
    out: list[str] = []
    stale: list[str] = []
    i = 0
    while i < len(lines):
        m = _START.match(lines[i])
        out.append(lines[i])
        i += 1
        if not m:
            continue
        j = i
        while j < len(lines) and not _END.match(lines[j]):
            if _START.match(lines[j]):
                raise ValueError(f"block {m['name']!r} has no end marker before the next block")
            j += 1
        if j == len(lines):
            raise ValueError(f"block {m['name']!r} has no end marker")
        comment = m["comment"]
        body = render(m["name"], markdown=not comment)
        new = body.split("\n")
        if comment:
            new = [f"{m['indent']}# {line}".rstrip() for line in new]
        if lines[i:j] != new:
            stale.append(m["name"])
        out += new
        out.append(lines[j])
        i = j + 1
    return "\n".join(out), stale


def check(files=DOC_FILES, root: Path = REPO) -> list[str]:
    """``FILE: block`` for every stale block."""
    problems = []
    for name in files:
        _, stale = regenerate((root / name).read_text(encoding="utf-8"))
        problems += [f"{name}: {block}" for block in stale]
    return problems


def write(files=DOC_FILES, root: Path = REPO) -> list[str]:
    """Rewrite the stale blocks in place; returns ``FILE: block`` of each one rewritten."""
    changed = []
    for name in files:
        path = root / name
        new, stale = regenerate(path.read_text(encoding="utf-8"))
        if stale:
            path.write_text(new, encoding="utf-8")
            changed += [f"{name}: {block}" for block in stale]
    return changed


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m unstereo.workflow.generated_docs", description=__doc__.split("\n")[0]
    )
    mode = parser.add_mutually_exclusive_group(required=True)
    mode.add_argument("--write", action="store_true", help="rewrite the generated blocks in place")
    mode.add_argument("--check", action="store_true", help="exit 1 when a generated block is stale")
    args = parser.parse_args(argv)
    if args.write:
        for item in write():
            print(f"rewrote {item}")
        return 0
    stale = check()
    for item in stale:
        print(f"stale generated block: {item}", file=sys.stderr)
    if stale:
        print(f"regenerate them with: {COMMAND}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
