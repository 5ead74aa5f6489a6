"""Helpers for ``rules/sentiment.smk``: inputs and arguments from the ``sentiment`` config section (unit-tested here
so that the rules file stays declarative)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..model_spec import resolve_model
from .settings import resource_name
from .templates import DATASET


def model_pattern(section: dict[str, Any]) -> str:
    """Wildcard constraint for ``{model}``: exactly the configured short names."""
    return "|".join(re.escape(name) for name in section["models"]) or "no-model-configured"


def model_arg(section: dict[str, Any], name: str, external_dir: str) -> str:
    """The MODEL argument of ``unstereo sentiment sample`` (the spec's command-line form)."""
    return resolve_model(section["models"][name], external_dir, key=f"sentiment.models.{name}").to_arg()


def sample_inputs(section: dict[str, Any], name: str, manifest: Callable[[str], str]) -> dict[str, str]:
    """The reference data (templates), the model's resource and the opinion lexicon's resource, as manifests."""
    out = {"reference": manifest("reference")}
    spec = resolve_model(section["models"][name], "", key=f"sentiment.models.{name}")
    if spec.resource:
        out["model"] = manifest(spec.resource)
    lexicon = resource_name(section["opinion_lexicon"])
    if "opinion" in section["classifiers"] and lexicon and lexicon in registered_resources():
        out["lexicon"] = manifest(lexicon)
    return out


def registered_resources() -> set[str]:
    """Names of the resources :mod:`unstereo.resources` can fetch (a resource it does not know cannot be a rule's
    input; the command then names the folder it misses)."""
    from ..resources import RESOURCES

    return set(RESOURCES)


def templates_dir(external_dir: str) -> str:
    """Where the workflow reads the templates: the reference resource's dataset folder."""
    return f"{external_dir}/reference/{DATASET}"


def settings_arg(section: dict[str, Any]) -> str:
    """The section as the ``--settings`` JSON of the commands."""
    return json.dumps(section, sort_keys=True)


def debias_runs(section: dict[str, Any]) -> list[str]:
    """The run folders of the debiasing grid: ``none-0`` (the base model), then ``{method}-{lambda:g}``."""
    d = section["debias"]
    return ["none-0"] + [f"{m}-{lam:g}" for m in d["methods"] for lam in d["lambdas"]]


def debias_inputs(section: dict[str, Any], name: str, continuations: str, manifest: Callable[[str], str]) -> dict[str, str]:  # fmt: skip
    """The sampling inputs plus the stage's continuations (the base model's row) and the resources of the corpus
    and the sentence encoder."""
    out = {**sample_inputs(section, name, manifest), "continuations": continuations}
    known = registered_resources()
    for i, path in enumerate([*section["debias"]["corpus"], section["debias"]["encoder"]]):
        res = resource_name(path)
        if res and res in known:
            out[f"resource{i}"] = manifest(res)
    return out
