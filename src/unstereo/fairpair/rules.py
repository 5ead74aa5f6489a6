"""Helpers for ``rules/fairpair.smk``: inputs and command-line options from the ``fairpair`` config section (kept
here, unit-tested, so that the rules file stays declarative; the model layer is :mod:`unstereo.models.rules`)."""

from __future__ import annotations

import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

import unstereo.models.rules as model_rules

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


def prompt_options(section: dict[str, Any], inputs: Any) -> str:
    """Options of ``unstereo fairpair prompts``; ``inputs`` are the rule's (named) inputs."""
    p, pert = section["prompts"], section["perturbation"]
    opts = []
    if getattr(inputs, "file", None):
        opts += ["--file", str(inputs.file)]
    elif getattr(inputs, "occupations", None):
        opts += ["--occupations", str(inputs.occupations)]
    else:
        opts += ["--occupations", str(Path(str(inputs.reference)).parent / OCCUPATIONS)]
    opts += [x for a, b in p["names"] for x in ("--name", f"{a}:{b}")]
    opts += [x for a, b in p["descriptors"] for x in ("--descriptor", f"{a}:{b}")]
    opts += [x for a, b in pert["words"] for x in ("--word", f"{a}:{b}")]
    opts += ["--template", p["template"]]
    opts.append("--default-pronouns" if pert["default_pronouns"] else "--no-default-pronouns")
    if p["max_prompts"]:
        opts += ["--max-prompts", str(p["max_prompts"])]
    return " ".join(shlex.quote(o) for o in opts)


def perturb_model(section: dict[str, Any]) -> Any:
    """The LLM perturbation's model entry, or None with the rule-based method."""
    pert = section["perturbation"]
    return pert["llm"]["model"] if pert["method"] == "llm" else None


def perturb_arg(section: dict[str, Any], inputs: Any) -> str | None:
    """The LLM perturbation model's argument (its resource beside the rule's ``perturb_model`` input), or None."""
    entry = perturb_model(section)
    return None if entry is None else model_rules.model_arg(entry, inputs.perturb_model, PERTURB_KEY)


def sample_options(section: dict[str, Any], seed: int, cache: str, perturb_arg: str | None) -> str:
    """Options of ``unstereo fairpair sample`` (``seed``: the stage's, :func:`unstereo.models.rules.seed`;
    ``perturb_arg``: the LLM perturbation model's argument, if any)."""
    s = section
    opts = [
        f"-n {s['n']}",
        f"--temperature {s['temperature']}",
        f"--top-p {s['top_p']}",
        f"--max-new-tokens {s['max_new_tokens']}",
        f"--seed {seed}",
        f"--batch-size {s['batch_size']}",
        f"--concurrency {s['concurrency']}",
        f"--chunk-size {s['chunk_size']}",
        f"--device {shlex.quote(s['device'])}",
        f"--dtype {shlex.quote(s['dtype'])}",
        f"--cache {shlex.quote(s['cache'] or cache)}",
    ]
    if perturb_arg:
        llm = s["perturbation"]["llm"]
        opts += [
            f"--llm-perturb {perturb_arg}",
            f"--llm-max-tokens {llm['max_tokens']}",
            f"--max-dissimilarity {llm['max_dissimilarity']}",
            "--group " + " ".join(shlex.quote(g) for g in llm["groups"]),
        ]
    return " ".join(opts)


def metrics_options(section: dict[str, Any]) -> str:
    """Options of ``unstereo fairpair metrics`` (besides the model name)."""
    opts = [f"-n {section['n']}"]
    opts += [f"--folds {k}" for k in section["folds"]]
    opts += [f"--phi {p}" for p in section["phis"]]
    opts += [f"--max-ngram {section['ngrams']['max_n']}", f"--top-ngrams {section['ngrams']['top']}"]
    return " ".join(opts)


def check(section: dict[str, Any]) -> None:
    """Config checks the schema cannot express: every fold count at most n."""
    from unstereo.errors import ConfigError

    big = [k for k in section["folds"] if k > section["n"]]
    if big:
        raise ConfigError(f"fold counts {big} exceed n = {section['n']}", key="fairpair.folds")
