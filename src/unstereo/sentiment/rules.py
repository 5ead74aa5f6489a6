"""Helpers for ``src/unstereo/sentiment/rules.smk``: inputs and arguments from the ``sentiment`` config
section (unit-tested here so that the rules file stays declarative; the model layer is
:mod:`unstereo.workflow.rules`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from unstereo.sentiment.settings import resource_name
from unstereo.sentiment.templates import DATASET
from unstereo.workflow.rules import model_inputs, model_spec, settings_json


def sample_inputs(section: dict[str, Any], name: str, manifest: Callable[[str], str]) -> dict[str, Any]:
    """The reference data (templates), the model's resource (a list, empty for a model outside the resources) and
    the opinion lexicon's resource, as manifests."""
    out: dict[str, Any] = {"reference": manifest("reference")}
    out["model"] = model_inputs(section["models"][name], manifest, f"sentiment.models.{name}")
    lexicon = resource_name(section["opinion_lexicon"])
    if "opinion" in section["classifiers"] and lexicon and lexicon in registered_resources():
        out["lexicon"] = manifest(lexicon)
    return out


def registered_resources() -> set[str]:
    """Names of the resources :mod:`unstereo.resources` can fetch (a resource it does not know cannot be a rule's
    input; the command then names the folder it misses)."""
    from unstereo.resources import RESOURCES

    return set(RESOURCES)


def templates_dir(external_dir: str) -> str:
    """Where the workflow reads the templates: the reference resource's dataset folder."""
    return f"{external_dir}/reference/{DATASET}"


def settings_arg(section: dict[str, Any], seed: int | None = None) -> str:
    """The section as the ``--settings`` JSON of the commands (models kept: ``sample`` records the section in its
    settings.json), ``seed`` (the stage's, derived by the rule) folded in
    (:func:`unstereo.workflow.rules.settings_json`)."""
    return settings_json(section, seed=seed, drop=())


def debias_runs(section: dict[str, Any]) -> list[str]:
    """The run folders of the debiasing grid: ``none-0`` (the base model), then ``{method}-{lambda:g}``."""
    d = section["debias"]
    return ["none-0"] + [f"{m}-{lam:g}" for m in d["methods"] for lam in d["lambdas"]]


def debias_inputs(
    section: dict[str, Any], name: str, continuations: str, manifest: Callable[[str], str]
) -> dict[str, Any]:
    """The sampling inputs plus the stage's continuations (the base model's row) and the resources of the corpus
    and the sentence encoder."""
    out = {**sample_inputs(section, name, manifest), "continuations": continuations}
    known = registered_resources()
    for i, path in enumerate([*section["debias"]["corpus"], section["debias"]["encoder"]]):
        res = resource_name(path)
        if res and res in known:
            out[f"resource{i}"] = manifest(res)
    return out


def debias_models(section: dict[str, Any]) -> list[str]:
    """The models of ``section`` the debiasing grid fine-tunes: every one but the model variants (``{variant:
    NAME}``), which are already fine-tuned by an intervention of their own (unstereo.variants): a second
    fine-tune on top would measure neither."""
    return [
        name
        for name, entry in section["models"].items()
        if not model_spec(entry, key=f"sentiment.models.{name}").variant
    ]
