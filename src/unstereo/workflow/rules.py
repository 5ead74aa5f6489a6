"""The rule layer shared by every Snakemake rule that runs a model (scoring, generation, sampling, debiasing).

Each such rule needs the same things from its config section: the ``{model}`` wildcard's constraint
(:func:`model_pattern`), the offline resource a model lives in, or the record of the model variant it is, as a rule
input (:func:`model_inputs`, with the workflow's :class:`ModelFiles`), the model as a command-line argument
(:func:`model_arg`), a seed (:func:`seed`, the section's or one derived from the global seed
per stage), its threads (:func:`threads`) and its scheduler resources: memory, wall time and a GPU when the section's
``device`` asks for one (:func:`job_resources`, :func:`gpu`), and the priority of the run's long pole, the job that
runs the largest model, and of the jobs it waits for (:func:`priority`). The rules files call these; the stage
packages keep only what is their own (options, extra inputs).
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from pathlib import Path
from typing import Any

from unstereo.errors import ConfigError
from unstereo.models.spec import SPEC_KEYS, ModelSpec, resolve_model
from unstereo.workflow import slurm_resources

#: What ``{model}`` matches when a section lists no model (a name no rule output can have).
NO_MODEL = "no-model-configured"


def model_pattern(models: Iterable[str]) -> str:
    """Wildcard constraint for ``{model}``: exactly the given short names (a section's ``models`` mapping or list),
    regex-escaped."""
    return "|".join(re.escape(name) for name in models) or NO_MODEL


def model_spec(
    entry: Any,
    external_dir: str | Path | None = None,
    key: str = "model",
    variants_dir: str | Path | None = None,
) -> ModelSpec:
    """The :class:`ModelSpec` of a config entry (string or mapping). A mapping may carry per-model options beside the
    spec keys (``batch_size``, ``mem_mb``, ... in ``score.models``); they are left out here. Errors name ``key``."""
    if isinstance(entry, Mapping):
        entry = {k: v for k, v in entry.items() if k in SPEC_KEYS}
    return resolve_model(entry, external_dir, key=key, variants_dir=variants_dir)


class ModelFiles:
    """The files a model rule waits for, by name (``rules/common.smk``'s ``resource_manifest``): called with a
    resource's name, its manifest ``EXTERNAL/NAME/RESOURCE.json`` (written by rule fetch_resource);
    :meth:`variant`, a declared model variant's record ``VARIANTS/NAME/variant.json`` (written by rule
    variants_train, after the weights)."""

    def __init__(self, external_dir: str, variants_dir: str, variants: Iterable[str], manifest_name: str):
        self.external_dir, self.variants_dir = str(external_dir), str(variants_dir)
        self.variants, self.manifest_name = frozenset(variants), manifest_name

    def __call__(self, resource: str) -> str:
        return f"{self.external_dir}/{resource}/{self.manifest_name}"

    def variant(self, name: str, key: str = "model") -> str:
        """The record of variant ``name``; a ConfigError naming ``key`` when ``variants.models`` lacks it."""
        from unstereo.models.variant import VARIANT_FILE

        if name not in self.variants:
            known = ", ".join(sorted(self.variants)) or "none"
            raise ConfigError(
                f"no variant {name!r} is declared in variants.models (declared: {known})", key=key
            )
        return f"{self.variants_dir}/{name}/{VARIANT_FILE}"


def model_inputs(entry: Any, manifest: Callable[[str], str], key: str = "model") -> list[str]:
    """The rule input a model needs: ``[manifest(resource)]`` for a model from an offline resource (fetched by rule
    fetch_resource), ``[manifest.variant(name)]`` for a model variant (its record, written by rule variants_train;
    ``manifest`` is then the workflow's :class:`ModelFiles`), ``[]`` for a hub id, a folder or an endpoint."""
    spec = model_spec(entry, None, key)
    if spec.variant:
        if not isinstance(manifest, ModelFiles):
            raise ConfigError(
                "a model variant is an input of the workflow's rules only", key=f"{key}.variant"
            )
        return [manifest.variant(spec.variant, f"{key}.variant")]
    return [manifest(spec.resource)] if spec.resource else []


def external_dir_of(manifests: str | Sequence[str] | None) -> Path | None:
    """The external-resources folder, from a resource manifest given as rule input (``EXT/NAME/RESOURCE.json``),
    or the variants folder, from a variant's record (``VARIANTS/NAME/variant.json``); None without one."""
    if isinstance(manifests, str):
        manifests = [manifests]
    return Path(str(manifests[0])).parent.parent if manifests else None


def model_arg(
    entry: Any,
    manifests: str | Sequence[str] | None,
    key: str = "model",
    *,
    revision: bool = True,
    api_key: bool = True,
) -> str:
    """The model as a shell-quoted command-line argument (:meth:`ModelSpec.to_arg`; a resource as the file or folder
    beside its manifest in ``manifests``, a variant as the folder of its record there: the rule's input from
    :func:`model_inputs`).

    ``revision=False`` leaves a hub revision out (for commands that take it as ``--revision``); with ``api_key`` an
    endpoint that names its key's variable gets `` --api-key-env NAME`` (commands that run endpoint models).
    """
    folder = external_dir_of(manifests)  # the resources' or the variants' folder: one of them applies
    spec = model_spec(entry, folder, key, variants_dir=folder)
    if not revision:
        spec = replace(spec, revision=None)
    arg = shlex.quote(spec.to_arg())
    if api_key and spec.is_remote and spec.api_key_env is not None:
        arg += f" --api-key-env {shlex.quote(spec.api_key_env)}"
    return arg


#: A model entry's own options (``score.models.NAME.batch_size``, ...) that override its section's for that model.
ENTRY_OPTIONS = ("batch_size", "dtype", "revision", "masked")


def settings_json(
    section: Mapping[str, Any],
    *,
    entry: Any = None,
    seed: int | None = None,
    drop: Iterable[str] = ("models",),
) -> str:
    """The one road from the config to a stage's command: its section as ``--settings`` JSON. ``drop``: keys left
    out (the ``models`` mapping: the command runs one model, given as its argument); ``entry``: the job's model
    entry, whose own options (:data:`ENTRY_OPTIONS`) override the section's; ``seed``: the seed the rule derives
    (:func:`seed`), folded in as the ``seed`` key. Shell-quote it in the rule (``{params.settings:q}``)."""
    dropped = set(drop)
    data = {k: v for k, v in section.items() if k not in dropped}
    if isinstance(entry, Mapping):
        data.update({k: entry[k] for k in ENTRY_OPTIONS if k in entry})
    if seed is not None:
        data["seed"] = int(seed)
    return json.dumps(data, sort_keys=True, default=str)


def stage_seed(global_seed: int, stage: str) -> int:
    """A per-stage seed derived from the global one, so stages do not share random streams."""
    return (int(global_seed) * 1_000_003 + sum(map(ord, stage))) % (2**31 - 1)


def seed(section: Mapping[str, Any], stage: str, global_seed: int) -> int:
    """The section's ``seed``, else :func:`stage_seed` of ``stage``."""
    value = section.get("seed")
    return int(value) if value is not None else stage_seed(global_seed, stage)


def threads(section: Mapping[str, Any], default: int = 1) -> int:
    """CPU threads of a model job: the section's ``threads``, else ``default``."""
    return int(section.get("threads") or default)


def gpu(device: str | None) -> dict[str, int | str]:
    """The scheduler's GPU request of a job running on torch ``device``: ``{"gpu": 1}`` for ``cuda``/``cuda:N``,
    ``{}`` otherwise (``auto`` requests none: on a cluster a GPU must be asked for). The GPU type and partition are a
    site's choice, made in the Slurm profile's ``set-resources`` (docs/slurm.md)."""
    return slurm_resources.gpu_resources(device)


def scheduler_value(
    section: Mapping[str, Any], key: str, default: int, entry: Mapping[str, Any] | None = None
) -> int:
    """A scheduler resource (``mem_mb``, ``runtime``): the model entry's own value, else the section's, else
    ``default``."""
    for source in (entry, section):
        if isinstance(source, Mapping) and source.get(key) is not None:
            return int(source[key])
    return int(default)


def job_resources(
    section: Mapping[str, Any],
    *,
    mem_mb: int,
    runtime: int,
    models: Mapping[str, Any] | None = None,
    wildcard: str = "model",
    device: str | None = None,
) -> dict[str, Any]:
    """The ``resources`` of a rule that runs a model (unpack it: ``resources: **job_resources(...)``).

    ``mem_mb`` (MB) and ``runtime`` (minutes) are the rule's defaults; a section key of the same name overrides them
    and, with ``models`` (short name -> entry), so does the entry of the job's ``{wildcard}`` model, so they are
    functions of the job's wildcards. A GPU is requested when ``device`` (default: the section's ``device``) is cuda.
    """

    def per_job(key: str, default: int) -> Callable[[Any], int]:
        def value(wildcards: Any) -> int:
            name = getattr(wildcards, wildcard, None) if models is not None else None
            entry = models.get(name) if models is not None and name is not None else None
            return scheduler_value(section, key, default, entry)

        return value

    dev = device if device is not None else section.get("device")
    return {**gpu(dev), "mem_mb": per_job("mem_mb", mem_mb), "runtime": per_job("runtime", runtime)}


# ------------------------------------------------------------------------------------------------ the long pole
#: Snakemake ``priority`` of the jobs on a run's long pole: the generate stage's job (it loads the largest model,
#: generates and judges: 274 of the default's 803 s on a 2-core AVX-512 machine, docs/performance.md) and every
#: job it waits for. Snakemake starts the ready job of highest priority first, but gives a job's inputs no priority
#: of their own, so the jobs upstream of the long pole carry it too (:func:`long_pole_rules`). Other jobs keep 0.
LONG_POLE_PRIORITY = 50


def long_pole_rules(config: Mapping[str, Any]) -> frozenset[str]:
    """The rules on the long pole of the run ``config`` describes (a validated config): ``generate_use`` when the
    generate stage is on; the vocabulary's two rules when it takes its seed words from them (no
    ``generate.seed_words``); and the rules of the delta table the vocabulary reads: the corpus stage's count,
    merge and delta (``vocabulary.delta: corpus``) or the released table's import (``released``). ``fetch_resource``
    is on it for the resources those rules read (:func:`long_pole_resources`)."""
    generate = config.get("generate") or {}
    if not generate.get("enabled"):
        return frozenset()
    names = {"generate_use"}
    if not generate.get("seed_words"):
        names |= {"vocabulary_english", "vocabulary_seeds"}
        delta = (config.get("vocabulary") or {}).get("delta")
        if delta == "corpus":
            names |= {"corpus_count", "corpus_merge", "corpus_delta"}
        elif delta == "released":
            names.add("released_delta")
    return frozenset(names)


def long_pole_resources(config: Mapping[str, Any]) -> frozenset[str]:
    """The offline resources the long pole's rules (:func:`long_pole_rules`) read: the generator's, the naturalness
    model's and the judge's; lid.176 and WordNet for the vocabulary; the corpus inputs' (``resource:NAME/FILE``) or,
    for the released delta, the reference data."""
    rules = long_pole_rules(config)
    if not rules:
        return frozenset()
    generate = config["generate"]
    naturalness = generate.get("naturalness") or {}
    judge = naturalness.get("judge") or {}
    entries = [generate.get("model"), judge.get("model")]
    if naturalness.get("min_token_logprob") is not None:
        entries.append(naturalness.get("model"))
    resources = (model_spec(e).resource for e in entries if e is not None)
    names = {r for r in resources if r is not None}
    if "vocabulary_english" in rules:
        names |= {"lid176", "wordnet"}
    if "corpus_count" in rules:
        for item in (config.get("corpus") or {}).get("inputs") or ():
            if isinstance(item, str) and item.startswith("resource:"):
                names.add(item[len("resource:") :].partition("/")[0])
    if "released_delta" in rules:
        names.add("reference")
    return frozenset(names)


def priority(config: Mapping[str, Any], rule: str, resource: str | None = None) -> int:
    """The Snakemake ``priority`` of ``rule``'s jobs (for ``fetch_resource``, of the job fetching ``resource``):
    :data:`LONG_POLE_PRIORITY` on the long pole, else 0."""
    if rule == "fetch_resource":
        on = resource in long_pole_resources(config)
    else:
        on = rule in long_pole_rules(config)
    return LONG_POLE_PRIORITY if on else 0
