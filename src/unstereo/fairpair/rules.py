"""Helpers for ``src/unstereo/fairpair/rules.smk``: inputs and command-line options from the ``fairpair``
config section (kept here, unit-tested, so that the rules file stays declarative; the model layer is
:mod:`unstereo.workflow.rules`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import unstereo.workflow.rules as model_rules

OCCUPATIONS = "winogender/data/occupations-stats.tsv"  # inside the reference resource
PERTURB_KEY = "fairpair.perturbation.llm.model"


def sample_inputs(section: dict[str, Any], name: str, manifest: Callable[[str], str]) -> dict[str, list[str]]:
    """Inputs of rule fairpair_sample: the offline resources of model ``name`` (``model``) and, with the LLM
    perturbation, of its chat model (``perturb_model``)."""
    out = {"model": model_rules.model_inputs(section["models"][name], manifest, f"fairpair.models.{name}")}
    perturb = perturb_model(section)
    if perturb is not None:
        out["perturb_model"] = model_rules.model_inputs(perturb, manifest, PERTURB_KEY)
    return out


def prompt_inputs(section: dict[str, Any], manifest: Callable[[str], str]) -> dict[str, str]:
    """Inputs of rule fairpair_prompts: the user prompt file, or the occupations (the reference resource's
    Winogender file unless configured)."""
    p = section["prompts"]
    if p["file"]:
        return {"file": p["file"]}
    if p["occupations"]:
        return {"occupations": p["occupations"]}
    return {"reference": manifest("reference")}


def prompt_file_option(inputs: Any) -> str:
    """The prompt source of ``unstereo fairpair prompts`` as the path the rule's (named) ``inputs`` give, over the
    section's key: ``--prompts-file`` (a user prompt file) or ``--prompts-occupations`` (the configured file, else
    the reference resource's Winogender one). Every other setting travels in ``--settings`` (:func:`settings`)."""
    if getattr(inputs, "file", None):
        return f"--prompts-file {shlex.quote(str(inputs.file))}"
    if getattr(inputs, "occupations", None):
        return f"--prompts-occupations {shlex.quote(str(inputs.occupations))}"
    return f"--prompts-occupations {shlex.quote(str(Path(str(inputs.reference)).parent / OCCUPATIONS))}"


def settings(section: dict[str, Any], seed: int | None = None) -> str:
    """``--settings`` of the fairpair commands: the section as JSON (:func:`unstereo.workflow.rules.settings_json`,
    without ``models``), ``seed`` (the seed the rule derives) folded in. Each command gets the section whole as its
    settings object (:data:`unstereo.fairpair.cli.SECTION`); the rules pass no config value as a flag beside it."""
    return model_rules.settings_json(section, seed=seed)


def perturb_model(section: dict[str, Any]) -> Any:
    """The LLM perturbation's model entry, or None with the rule-based method."""
    pert = section["perturbation"]
    return pert["llm"]["model"] if pert["method"] == "llm" else None


def perturb_arg(section: dict[str, Any], inputs: Any) -> str | None:
    """The LLM perturbation model's argument (its resource beside the rule's ``perturb_model`` input), or None."""
    entry = perturb_model(section)
    return None if entry is None else model_rules.model_arg(entry, inputs.perturb_model, PERTURB_KEY)


def llm_perturb_option(section: dict[str, Any], inputs: Any) -> str:
    """``--llm-perturb MODEL`` (the LLM perturbation's model argument, :func:`perturb_arg`), or nothing with the
    rule-based perturbation."""
    arg = perturb_arg(section, inputs)
    return f"--llm-perturb {arg}" if arg else ""


def check(section: dict[str, Any]) -> None:
    """Config checks the schema cannot express: every fold count at most n."""
    from unstereo.errors import ConfigError

    big = [k for k in section["folds"] if k > section["n"]]
    if big:
        raise ConfigError(f"fold counts {big} exceed n = {section['n']}", key="fairpair.folds")
