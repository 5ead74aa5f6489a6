"""Helpers for ``src/unstereo/biastest/rules.smk`` (kept here so that they are unit-tested and the rules file
stays declarative)."""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import unstereo.workflow.rules as model_rules
from unstereo.biastest.run import is_spec_file, spec_entries, spec_section

#: Section keys no command reads whole: the models (a job runs one, as its argument) and the per-specification
#: overrides (folded into each pairs job's own settings by :func:`pairs_settings`, so that changing one
#: specification's entry re-runs that specification's pairs job only).
DROP = ("models", "per_spec")


def models(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The stage's models: ``biastest.models``, else the score stage's."""
    return config["biastest"]["models"] or config["score"]["models"]


def specs(config: dict[str, Any]) -> dict[str, str]:
    """Specification name -> entry (release name or file) of ``biastest.specs``."""
    return spec_entries(config["biastest"]["specs"])


def generated_specs(config: dict[str, Any]) -> list[str]:
    """The specifications to generate sentences for (release names resolved; each must be in ``specs``)."""
    from unstereo.errors import ConfigError

    known = specs(config)
    out = []
    for i, entry in enumerate(config["biastest"]["generate"]["specs"]):
        names = [entry] if entry in known else list(spec_entries([entry]))
        for name in names:
            if name not in known:
                raise ConfigError(
                    f"{entry!r} is not among biastest.specs", key=f"biastest.generate.specs[{i}]"
                )
            out.append(name)
    return out


def per_spec(config: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """``biastest.per_spec``, each name checked against ``specs`` (ConfigError naming ``biastest.per_spec.<name>``
    otherwise)."""
    from unstereo.errors import ConfigError

    known = specs(config)
    entries = config["biastest"]["per_spec"]
    for name in entries:
        if name not in known:
            raise ConfigError(
                f"{name!r} is not among biastest.specs ({', '.join(known) or 'none'}); give a specification's "
                "name (the summary's `spec`, e.g. Math_Arts_vs_Male_Female, not its app tag)",
                key=f"biastest.per_spec.{name}",
            )
    return entries


def spec_arg(entry: str, name: str) -> str:
    """SPEC argument of the CLI: the release name, or ``FILE:NAME``."""
    return f"{entry}:{name}" if is_spec_file(entry) else name


def spec_inputs(entry: str) -> list[str]:
    """The specification file as a rule input (none for a release specification)."""
    return [entry] if is_spec_file(entry) else []


def reference_option(config: dict[str, Any], manifest: str | None) -> str:
    """``--reference-dir DIR``: the configured folder, else ``biastestgpt`` beside the reference resource's
    manifest."""
    ref = config["biastest"]["reference_dir"] or (
        str(Path(manifest).parent / "biastestgpt") if manifest else None
    )
    return f"--reference-dir {shlex.quote(ref)}" if ref else ""


def model_key(config: dict[str, Any], name: str) -> str:
    """The config key of model ``name`` (``biastest.models.<name>``, or ``score.models.<name>`` when the stage
    takes the score stage's models), for error messages."""
    return f"{'biastest' if config['biastest']['models'] else 'score'}.models.{name}"


def model_arg(config: dict[str, Any], name: str, manifests: str | Sequence[str] | None) -> str:
    """MODEL argument of ``unstereo biastest score`` (as for ``unstereo score``: the revision goes in
    ``--revision``); ``manifests``: the rule's model input."""
    return model_rules.model_arg(
        models(config)[name], manifests, model_key(config, name), revision=False, api_key=False
    )


def score_settings(config: dict[str, Any], name: str) -> str:
    """``--settings`` of ``unstereo biastest score`` for model ``name``: the biastest section as JSON, the model
    entry's own options overriding the stage's (:func:`unstereo.workflow.rules.settings_json`); the rule passes no
    option flag beside it. :func:`score_options` is the same as flags."""
    return model_rules.settings_json(config["biastest"], entry=models(config)[name], drop=DROP)


def score_options(config: dict[str, Any], name: str) -> str:
    """Options of ``unstereo biastest score`` (per-model entries override the stage's values): the flags a person
    types for what :func:`score_settings` passes."""
    b = config["biastest"]
    entry = models(config)[name]
    opts = [f"--batch-size {entry.get('batch_size', b['batch_size'])}", f"--dtype {entry.get('dtype', b['dtype'])}",
            f"--device {b['device']}", f"--chunk-size {b['chunk_size']}", f"--causal-score {b['causal_score']}"]  # fmt: skip
    if entry.get("revision"):
        opts.append(f"--revision {entry['revision']}")
    if entry.get("masked"):
        opts += ["--masked", f"--masked-scorer {b['masked_scorer']}"]
    return " ".join(opts)


def settings_json(config: dict[str, Any], seed: int | None = None) -> str:
    """``--settings`` of ``unstereo biastest generate`` and ``summary``: the biastest section as JSON (without
    ``models`` and ``per_spec``, :data:`DROP`; :func:`unstereo.workflow.rules.settings_json`), ``seed`` (the stage's,
    derived by the rule) folded in. The commands get it whole as their settings object
    (:data:`unstereo.biastest.cli.SECTION`); the rules pass no config value as a flag beside it. ``pairs``
    takes :func:`pairs_settings`."""
    return model_rules.settings_json(config["biastest"], seed=seed, drop=DROP)


def pairs_settings(config: dict[str, Any], name: str, seed: int | None = None) -> str:
    """``--settings`` of ``unstereo biastest pairs`` for specification ``name``: :func:`settings_json` with the
    specification's ``per_spec`` entry over the section's keys (:func:`unstereo.biastest.run.spec_section`); the
    same text as :func:`settings_json` for a specification without one."""
    section = spec_section(config["biastest"], name)
    return model_rules.settings_json(section, seed=seed, drop=DROP)
