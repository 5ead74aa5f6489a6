"""Prompts as data: ``data/prompts/*.yaml`` (each file cites its source table in the paper).

A file holds ``name``, ``source``, ``normalize`` and a list ``prompts`` of ``{id, fields, temperature, text}``.
``text`` is the paper's wording transcribed verbatim; :func:`normalize` makes the string actually sent:

- the two characters backslash-n become a line break (the paper prints the escape sequence);
- ``”’`` becomes ``'''`` and ``’`` becomes ``'`` (LaTeX rendered the authors' ASCII quotes typographically);
- ``’\\group’`` becomes ``'{group}'`` (a LaTeX typo in Table 6 swallowed the braces).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import yaml

from unstereo.errors import InputError
from unstereo.package_data import DATA_DIR, packaged

DEFAULT_DIR = DATA_DIR / "prompts"
REQUIRED = ("generation", "revision", "editing", "semantic_filter")
_FIELD = re.compile(r"\{(\w+)\}")


def normalize(text: str) -> str:
    """The paper's printed prompt -> the string sent to the LLM (see the module doc)."""
    text = text.replace("’\\group’", "’{group}’")
    text = text.replace("\\n", "\n")
    text = text.replace("”’", "'''").replace("’", "'").replace("‘", "'").replace("“", '"').replace("”", '"')
    return text


@dataclass(frozen=True)
class Prompt:
    """One prompt template with its ``{field}`` placeholders and default temperature."""

    id: str
    text: str
    fields: tuple[str, ...]
    temperature: float
    source: str

    def format(self, **values: str) -> str:
        """Fill the ``{field}`` placeholders; other braces in the text are left alone."""
        missing = [f for f in self.fields if f not in values]
        if missing:
            raise KeyError(f"prompt {self.id!r} needs {missing}")
        return _FIELD.sub(
            lambda m: str(values[m.group(1)]) if m.group(1) in self.fields else m.group(0), self.text
        )


@dataclass(frozen=True)
class PromptSet:
    """The prompts of the pipeline: one generation, the revision list (round robin), editing, semantic filter."""

    generation: Prompt
    revision: tuple[Prompt, ...]
    editing: Prompt
    semantic_filter: Prompt


def _load_file(path: Path) -> list[Prompt]:
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, yaml.YAMLError, UnicodeDecodeError) as exc:
        raise InputError(f"cannot read prompt file: {exc}", path=path) from exc
    if not isinstance(data, dict) or not isinstance(data.get("prompts"), list) or not data["prompts"]:
        raise InputError("prompt file needs a non-empty list 'prompts'", path=path)
    out = []
    for i, p in enumerate(data["prompts"]):
        for key in ("id", "text", "fields"):
            if key not in p:
                raise InputError(f"prompts[{i}] lacks key {key!r}", path=path)
        text = normalize(p["text"]) if data.get("normalize", True) else p["text"]
        fields = tuple(p["fields"])
        unknown = sorted(set(_FIELD.findall(text)) - set(fields))
        if unknown:
            raise InputError(f"prompts[{i}] ({p['id']}) uses undeclared field(s) {unknown}", path=path)
        out.append(
            Prompt(p["id"], text, fields, float(p.get("temperature", 0.0)), str(data.get("source", path)))
        )
    return out


def load_prompts(directory: str | Path | None = None) -> PromptSet:
    """Load ``generation.yaml``, ``revision.yaml``, ``editing.yaml``, ``semantic_filter.yaml`` from ``directory``."""
    directory = packaged(directory) if directory else DEFAULT_DIR
    files = {}
    for name in REQUIRED:
        path = directory / f"{name}.yaml"
        if not path.is_file():
            raise InputError(f"prompt file missing (needs {', '.join(REQUIRED)})", path=path)
        files[name] = _load_file(path)
    return PromptSet(
        generation=files["generation"][0],
        revision=tuple(files["revision"]),
        editing=files["editing"][0],
        semantic_filter=files["semantic_filter"][0],
    )
