"""A model variant's record: ``variant.json`` in the variant's folder (written by :mod:`unstereo.variants`, last,
after the weights, so that its presence marks a complete folder). It holds at least ``name``, ``base`` (the base's
model entry as the config writes it), ``base_model`` (the base's spec string), ``intervention`` and ``strength``;
tables name a variant's base from it. Its ``fingerprint`` (of the build's settings) is part of the folder's label
(:attr:`unstereo.models.spec.ModelSpec.label`)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from unstereo.errors import InputError
from unstereo.models.spec import VARIANT_FILE, ModelSpec

__all__ = ["REQUIRED", "VARIANT_FILE", "read_variant", "variant_base"]
#: The keys every record has.
REQUIRED = ("name", "base", "base_model", "intervention", "strength")


def read_variant(folder: str | Path) -> dict[str, Any]:
    """The record of the variant in ``folder``; an InputError naming the file when it is missing, not JSON or lacks
    a key of :data:`REQUIRED`."""
    path = Path(folder) / VARIANT_FILE
    if not path.is_file():
        raise InputError(
            "no variant record: the variants stage has not written this variant (yet)", path=path
        )
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not a JSON variant record: {exc}", path=path) from exc
    missing = [k for k in REQUIRED if not isinstance(record, dict) or k not in record]
    if missing:
        raise InputError(f"variant record lacks {missing}", path=path)
    return record


def variant_base(spec: ModelSpec) -> str | None:
    """The base model (its spec string) a variant spec was derived from; None for a model that is no variant."""
    if spec.variant is None or spec.path is None:
        return None
    return str(read_variant(spec.path)["base_model"])
