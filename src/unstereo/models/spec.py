"""One way to name a model in every stage, rule and command: :class:`ModelSpec` and :func:`resolve_model`.

A model is one of (config mapping, validated by ``workflow/schemas/model.schema.yaml`` | command-line string):

- a hub id or a local Hugging Face folder:  ``{path: EleutherAI/pythia-70m, revision: step1000}`` |
  ``EleutherAI/pythia-70m@step1000`` (``@REVISION`` is optional)
- a GGUF file inside a folder:  ``{path: models/x, gguf_file: x.Q4.gguf}`` | ``models/x/x.Q4.gguf``
- a GGUF file (or the folder) of an offline resource:  ``{resource: smollm2, gguf_file: F.gguf}`` |
  ``resource:smollm2/F.gguf`` (``resource:smollm2`` for the folder itself)
- a model served by an OpenAI-compatible endpoint (vLLM, llama.cpp server, OpenAI, ...):
  ``{endpoint: http://127.0.0.1:8000/v1, name: gpt-4o-mini, api_key_env: OPENAI_API_KEY}`` |
  ``endpoint:http://127.0.0.1:8000/v1#gpt-4o-mini`` (the key's variable name comes from ``--api-key-env``)
- a model variant of the ``variants`` section (a base model fine-tuned by an intervention, :mod:`unstereo.variants`):
  ``{variant: smollm2-cda}`` | ``variant:smollm2-cda``, the Hugging Face folder ``VARIANTS_DIR/smollm2-cda`` the
  variants stage writes (``{results_dir}/variants`` in the workflow), whose ``variant.json`` records its base
  (:mod:`unstereo.models.variant`)

:func:`resolve_model` turns either form into a :class:`ModelSpec` (a resource becomes its folder under the external
directory, a variant its folder under the variants directory); :meth:`ModelSpec.to_arg` writes the string form back, which is how the rules pass a model to a command.
Loading a local spec is :func:`unstereo.models.load.load` (of a request, :mod:`unstereo.models.request`).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unstereo.errors import ConfigError

#: The environment variable an endpoint's API key is read from when the spec names none.
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
#: Keys of the mapping form (the schema fragment lists the same ones).
SPEC_KEYS = ("path", "resource", "gguf_file", "revision", "endpoint", "name", "api_key_env", "variant")
RESOURCE_PREFIX = "resource:"
ENDPOINT_PREFIX = "endpoint:"
VARIANT_PREFIX = "variant:"
#: The record a model variant's folder holds (:mod:`unstereo.models.variant`).
VARIANT_FILE = "variant.json"


@dataclass(frozen=True)
class ModelSpec:
    """Where a model comes from.

    Local: ``path`` (hub id or folder; for a resource, its folder) with ``gguf_file`` (a file inside it), ``revision``
    (hub revision), ``resource`` (the resource's name, kept for labels) and ``variant`` (a model variant's name; ``path``
    is then its folder). Remote: ``endpoint`` (base URL of an
    OpenAI-compatible server, up to ``/v1``), ``name`` (the model name there) and ``api_key_env`` (the NAME of the
    environment variable holding the key; None = send no key).
    """

    path: str | None = None
    gguf_file: str | None = None
    revision: str | None = None
    resource: str | None = None
    endpoint: str | None = None
    name: str | None = None
    api_key_env: str | None = None
    variant: str | None = None

    @classmethod
    def parse(cls, spec: str, gguf_file: str | None = None, revision: str | None = None) -> ModelSpec:
        """The string form (see the module docstring) with optional ``gguf_file``/``revision`` on top."""
        return resolve_model(spec, gguf_file=gguf_file, revision=revision)

    @property
    def is_remote(self) -> bool:
        """True for a model behind an OpenAI-compatible endpoint."""
        return self.endpoint is not None

    @property
    def converted_dir(self) -> Path | None:
        """The Hugging Face folder a GGUF file is converted into (None for non-GGUF specs)."""
        if self.gguf_file is None or self.path is None:
            return None
        return Path(self.path) / f"{self.gguf_file}.hf"

    @property
    def label(self) -> str:
        """A short stable identity: the endpoint's model name, the GGUF file path, or the hub id/folder[@revision]; a
        model variant's folder with its build's fingerprint (``FOLDER#variant-DIGEST``, from its ``variant.json``), so
        that caches keyed by the label (the LLM cache) tell a rebuilt variant of other settings apart."""
        if self.is_remote:
            return str(self.name)
        if self.gguf_file:
            return str(Path(str(self.path)) / self.gguf_file)
        if self.revision:
            return f"{self.path}@{self.revision}"
        return str(self.path) + _variant_tag(Path(str(self.path)))

    def to_arg(self) -> str:
        """The command-line string form; ``resolve_model(spec.to_arg())`` gives the spec back (a resource as its
        folder, a variant as its folder, and an endpoint without ``api_key_env``, which travels in
        ``--api-key-env``)."""
        if self.is_remote:
            return f"{ENDPOINT_PREFIX}{self.endpoint}#{self.name}"
        if self.gguf_file:
            return str(Path(str(self.path)) / self.gguf_file)
        return f"{self.path}@{self.revision}" if self.revision else str(self.path)


def _variant_tag(folder: Path) -> str:
    """``#variant-DIGEST`` for a folder holding a variant record with a fingerprint, else ``""``."""
    import json

    try:
        fingerprint = json.loads((folder / VARIANT_FILE).read_text(encoding="utf-8")).get("fingerprint")
    except (OSError, ValueError, AttributeError):
        return ""
    return f"#variant-{str(fingerprint)[:16]}" if fingerprint else ""


def _fail(message: str, key: str, source: str | None) -> ConfigError:
    return ConfigError(message, key=key, source=source)


def _parse_string(text: str, key: str, source: str | None) -> dict[str, Any]:
    """The mapping form of a command-line string."""
    text = text.strip()
    if not text:
        raise _fail("empty model spec", key, source)
    if text.startswith(ENDPOINT_PREFIX):
        url, sep, name = text[len(ENDPOINT_PREFIX) :].rpartition("#")
        if not sep or not url or not name:
            raise _fail(f"{text!r}: an endpoint spec is endpoint:URL#MODEL_NAME", key, source)
        return {"endpoint": url, "name": name}
    if text.startswith(VARIANT_PREFIX):
        name = text[len(VARIANT_PREFIX) :]
        if not name or "/" in name:
            raise _fail(f"{text!r}: a variant spec is variant:NAME", key, source)
        return {"variant": name}
    if text.startswith(RESOURCE_PREFIX):
        resource, _, file = text[len(RESOURCE_PREFIX) :].partition("/")
        if not resource:
            raise _fail(f"{text!r}: a resource spec is resource:NAME or resource:NAME/FILE.gguf", key, source)
        return {"resource": resource, **({"gguf_file": file} if file else {})}
    if text.endswith(".gguf"):
        p = Path(text)
        return {"path": str(p.parent), "gguf_file": p.name}
    if "@" in text and not Path(text).exists():
        path, _, revision = text.rpartition("@")
        if path and revision:
            return {"path": path, "revision": revision}
    return {"path": text}


def _check(entry: Mapping[str, Any], key: str, source: str | None) -> None:
    """Unknown keys, none or several of path/resource/endpoint/variant, and keys that do not fit the chosen form."""
    for k, v in entry.items():
        if k not in SPEC_KEYS:
            raise _fail(f"unknown model key (use one of {', '.join(SPEC_KEYS)})", f"{key}.{k}", source)
        if v is not None and not isinstance(v, str):
            raise _fail(f"must be a string, got {type(v).__name__}", f"{key}.{k}", source)
    kinds = [k for k in ("path", "resource", "endpoint", "variant") if entry.get(k)]
    if len(kinds) != 1:
        what = "none" if not kinds else " and ".join(kinds)
        raise _fail(
            f"a model needs exactly one of path, resource, endpoint, variant (got {what})", key, source
        )
    if kinds == ["variant"]:
        for k in ("gguf_file", "revision", "name", "api_key_env"):
            if k in entry:
                raise _fail(f"`{k}` does not apply to a variant (a folder the variants stage writes)",
                            f"{key}.{k}", source)  # fmt: skip
        return
    if kinds == ["endpoint"]:
        if not entry.get("name"):
            raise _fail(
                "an endpoint model needs `name` (the model name at the endpoint)", f"{key}.name", source
            )
        for k in ("gguf_file", "revision"):
            if entry.get(k):
                raise _fail(f"`{k}` does not apply to an endpoint model", f"{key}.{k}", source)
    else:
        for k in ("name", "api_key_env"):
            if k in entry:
                raise _fail(f"`{k}` applies only to an endpoint model", f"{key}.{k}", source)
        if entry.get("revision") and (entry.get("gguf_file") or entry.get("resource")):
            raise _fail(
                "`revision` applies only to a hub id (not a GGUF file or resource)", f"{key}.revision", source
            )


def external_dir_default() -> Path:
    """Where offline resources live outside Snakemake: ``$UNSTEREO_EXTERNAL_DIR``, else ``data/external``."""
    return Path(os.environ.get("UNSTEREO_EXTERNAL_DIR", "data/external"))


def variants_dir_default() -> Path:
    """Where model variants live outside Snakemake: ``$UNSTEREO_VARIANTS_DIR``, else ``results/variants`` (the
    default config's; the workflow passes each variant's folder itself)."""
    return Path(os.environ.get("UNSTEREO_VARIANTS_DIR", "results/variants"))


def resolve_model(
    entry: str | Mapping[str, Any] | ModelSpec,
    external_dir: str | Path | None = None,
    *,
    key: str = "model",
    source: str | None = None,
    gguf_file: str | None = None,
    revision: str | None = None,
    api_key_env: str | None = None,
    variants_dir: str | Path | None = None,
) -> ModelSpec:
    """The :class:`ModelSpec` of a config mapping, a command-line string or a spec (returned as is).

    ``external_dir`` holds the offline resources (default :func:`external_dir_default`), ``variants_dir`` the model
    variants' folders (default :func:`variants_dir_default`). ``gguf_file``,
    ``revision`` and ``api_key_env`` (command-line options) are added to the entry; a value the entry already has
    differently is an error. Every error is a :class:`ConfigError` naming ``key`` (e.g. ``score.models.smol``)
    or the offending sub-key.
    """
    if isinstance(entry, ModelSpec):
        return entry
    if isinstance(entry, str):
        data = _parse_string(entry, key, source)
    elif isinstance(entry, Mapping):
        data = dict(entry)
    else:
        raise _fail(f"a model is a string or a mapping, got {type(entry).__name__}", key, source)
    for k, v in (("gguf_file", gguf_file), ("revision", revision), ("api_key_env", api_key_env)):
        if v is None:
            continue
        if data.get(k) not in (None, v):
            raise _fail(f"given twice with different values ({data[k]!r} and {v!r})", f"{key}.{k}", source)
        if k != "api_key_env" or data.get(
            "endpoint"
        ):  # the shared --api-key-env option is ignored for local models
            data[k] = v
    _check(data, key, source)
    if data.get("endpoint"):
        return ModelSpec(
            endpoint=str(data["endpoint"]).rstrip("/"),
            name=data["name"],
            api_key_env=data.get("api_key_env", DEFAULT_API_KEY_ENV) or None,
        )
    if data.get("variant"):
        where = Path(variants_dir) if variants_dir is not None else variants_dir_default()
        return ModelSpec(path=str(where / data["variant"]), variant=data["variant"])
    if data.get("resource"):
        folder = Path(external_dir) if external_dir is not None else external_dir_default()
        return ModelSpec(
            path=str(folder / data["resource"]), gguf_file=data.get("gguf_file"), resource=data["resource"]
        )
    return ModelSpec(path=data["path"], gguf_file=data.get("gguf_file"), revision=data.get("revision"))
