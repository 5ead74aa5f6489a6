"""Which models on the card are model variants, and of which base: read from each variant's record
(``{results_dir}/variants/NAME/variant.json``, :mod:`unstereo.models.variant`), never from the models' names.

A method's config names a variant as ``{variant: NAME}`` (or ``variant:NAME``) under any short name; the record says
its base (the base's model entry as the config wrote it), its intervention and its strength. The base is the model
of the card whose entry, in any method's ``models`` map, is the same model (the same spec once resolved), so a
variant is compared with its base under each method that measured both.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from unstereo.models.spec import SPEC_KEYS, resolve_model
from unstereo.models.variant import VARIANT_FILE, read_variant

__all__ = ["VariantOf", "find_variants", "model_entries", "variant_sources"]

# placeholders for the folders a spec is resolved against: two entries are the same model when they resolve to the
# same spec under the same folders, wherever the real folders are
_EXT, _VAR = "/external", "/variants"


@dataclass(frozen=True)
class VariantOf:
    """One model variant on the card: its short name (``model``), its base's short name (``base``; empty when no
    method lists the base), the variant's name in ``variants.models`` (``name``), its ``intervention`` and
    ``strength`` (0 for the control), as its record gives them."""

    model: str
    base: str
    name: str
    intervention: str
    strength: float


def model_entries(config: Mapping[str, Any]) -> dict[str, Any]:
    """Short name -> model entry, from every section's ``models`` mapping (a list of names adds none), the first
    entry found for a name in the config's order."""
    out: dict[str, Any] = {}
    for section in config.values():
        models = section.get("models") if isinstance(section, Mapping) else None
        if isinstance(models, Mapping):
            for name, entry in models.items():
                out.setdefault(str(name), entry)
    return out


def _spec_arg(entry: Any) -> str | None:
    """The entry as one comparable string (its spec resolved against placeholder folders); None if it is none."""
    if isinstance(entry, Mapping):
        entry = {k: v for k, v in entry.items() if k in SPEC_KEYS}
    try:
        return resolve_model(entry, _EXT, variants_dir=_VAR).to_arg()
    except Exception:  # noqa: BLE001 - an entry that is no model spec is simply no base
        return None


def _variant_name(entry: Any) -> str | None:
    if isinstance(entry, Mapping):
        entry = {k: v for k, v in entry.items() if k in SPEC_KEYS}
    try:
        return resolve_model(entry, _EXT, variants_dir=_VAR).variant
    except Exception:  # noqa: BLE001
        return None


def _variants_dir(config: Mapping[str, Any]) -> Path:
    return Path(str(config.get("results_dir") or "results")) / "variants"


def variant_sources(config: Mapping[str, Any], models: list[str]) -> list[str]:
    """The records of the variants among ``models`` (the card's short names): the rule's inputs."""
    entries = model_entries(config)
    names = [_variant_name(entries.get(m)) for m in models]
    return [str(_variants_dir(config) / n / VARIANT_FILE) for n in dict.fromkeys(n for n in names if n)]


def find_variants(config: Mapping[str, Any], models: list[str]) -> list[VariantOf]:
    """The variants among ``models`` (the card's short names, in order), each with its base among ``models``
    (matched by resolved spec; ``base`` empty where none is). Reads each variant's record: an InputError naming the
    file when it is missing."""
    entries = model_entries(config)
    by_spec: dict[str, str] = {}
    for m in models:
        arg = _spec_arg(entries.get(m))
        if arg is not None and _variant_name(entries.get(m)) is None:
            by_spec.setdefault(arg, m)
    out = []
    for m in models:
        name = _variant_name(entries.get(m))
        if not name:
            continue
        record = read_variant(_variants_dir(config) / name)
        base = by_spec.get(_spec_arg(record["base"]) or "", "")
        out.append(VariantOf(m, base, str(record["name"]), str(record["intervention"]),
                             float(record["strength"] or 0.0)))  # fmt: skip
    return out
