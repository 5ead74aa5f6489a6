"""One model run, one object: :class:`ModelRequest` (the model spec resolved once, the scorer kind, dtype, device,
batch size, threads) built in one place, :func:`model_request`, from a config section or from a command's options
(the same keys: :data:`REQUEST_KEYS`), and the one click decorator that declares those options, :func:`options`.

The request travels whole: :func:`unstereo.scoring.registry.scorer_for` turns it into (run description, scorer
factory) for any scorer kind; :func:`unstereo.llm.make_client` hands it to the local LLM backend
(:class:`unstereo.llm.local.LocalBackend`: its device, dtype and batch size), or an endpoint's spec to the HTTP
backend. The scorers, the classifiers and the local backend load it with :func:`unstereo.models.load.load`, on its
device resolved once, here (:attr:`ModelRequest.resolved_device`).
:func:`unstereo.models.spec.resolve_model` runs once per request, here; the commands that run a model (score,
robustness, BiasTestGPT score and generation, the generate stage, sentiment sample and debias, FairPair sample
and ``unstereo llm``) build their requests with :func:`model_request` / :func:`request_from_cli` and pass them on whole.

This module imports only click, the standard library and :mod:`unstereo.cli_options` at import time (every stage
CLI imports it).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from unstereo import cli_options
from unstereo.engine.kernels import SAMPLING_PRODUCTS

if TYPE_CHECKING:
    from unstereo.models.spec import ModelSpec

#: Scorer kinds: the causal LM's log-likelihood and the four masked-LM scores (:mod:`unstereo.scoring.registry`).
CAUSAL = "causal"
MASKED_KINDS = ("pll", "crows-pairs", "aul", "biastestgpt")
SCORER_KINDS = (CAUSAL, *MASKED_KINDS)
DTYPES = ("auto", "float32", "bfloat16", "float16")
BOS_POLICIES = ("auto", "bos", "eos", "none")
#: The keys a config section or a command's options give :func:`model_request` (a section's other keys are
#: ignored). ``masked`` (a flag) with ``masked_scorer`` (its kind; without it ``pll``, as ``unstereo score --masked``
#: has it) is the command-line form of ``scorer``.
REQUEST_KEYS = ("model", "gguf_file", "revision", "scorer", "masked", "masked_scorer", "dtype", "device",
                "batch_size", "max_batch_size", "bos_policy", "threads", "sampling_products")  # fmt: skip


def resolve_device(device: str = "auto") -> str:
    """``auto`` picks cuda > mps > cpu (torch imported for ``auto`` only)."""
    if device != "auto":
        return device
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if getattr(torch.backends, "mps", None) is not None and torch.backends.mps.is_available():
        return "mps"
    return "cpu"


@dataclass(frozen=True)
class ModelRequest:
    """What one model run needs: the resolved spec, the scorer kind (:data:`SCORER_KINDS`), weights dtype, device,
    batch size (an int or ``auto``) and its ``auto`` start, the causal scorer's BOS policy (None: the request's
    scorer records none), torch threads (None: torch's), and the products of sampling on the CPU
    (:data:`SAMPLING_PRODUCTS`; ``int8`` is for sampling only, scores stay fp32)."""

    spec: ModelSpec
    scorer: str = CAUSAL
    dtype: str = "auto"
    device: str = "auto"
    batch_size: int | str = "auto"
    max_batch_size: int | None = None
    bos_policy: str | None = "auto"
    threads: int | None = None
    sampling_products: str = "float32"

    @property
    def masked(self) -> bool:
        return self.scorer != CAUSAL

    @functools.cached_property
    def resolved_device(self) -> str:
        """The device the request's model runs on: ``device`` with ``auto`` resolved (cuda > mps > cpu,
        :func:`resolve_device`), once per request, here; every loader and scorer of the request reads it (torch is
        imported on first use only)."""
        return resolve_device(self.device)

    def apply_threads(self) -> None:
        """Set torch's CPU threads when the request names a number."""
        if self.threads:
            import torch

            torch.set_num_threads(self.threads)


def scorer_kind(value: Mapping[str, Any], key: str = "scorer") -> str:
    """The scorer kind of ``value``'s ``scorer``, or of its ``masked`` flag (a kind name, or ``True`` with
    ``masked_scorer``, default ``pll``); an unknown kind is a ConfigError naming ``key``."""
    from unstereo.errors import ConfigError

    kind = value.get("scorer")
    if kind is None:
        masked = value.get("masked")
        if not masked:
            kind = CAUSAL
        elif isinstance(masked, str):
            kind = masked
        else:
            kind = value.get("masked_scorer") or "pll"
    if kind not in SCORER_KINDS:
        raise ConfigError(f"unknown scorer {kind!r}; known: {list(SCORER_KINDS)}", key=key)
    return kind


def model_request(
    values: Mapping[str, Any],
    *,
    key: str = "model",
    external_dir: str | Path | None = None,
    api_key_env: str | None = None,
    model: Any = None,
) -> ModelRequest:
    """THE builder of a :class:`ModelRequest`: from a config section (``{"model": ..., "dtype": ..., ...}``) or a
    command's options (the same keys, :data:`REQUEST_KEYS`; absent keys take the defaults of
    :class:`ModelRequest`). ``model`` (a command's MODEL argument) stands in for ``values["model"]``. The spec
    is resolved here, once (:func:`unstereo.models.spec.resolve_model`); errors name ``key``."""
    from unstereo.models.spec import resolve_model

    entry = model if model is not None else values.get("model")
    spec = resolve_model(
        entry, external_dir, key=key, gguf_file=values.get("gguf_file"), revision=values.get("revision"),
        api_key_env=api_key_env,
    )  # fmt: skip
    kind = scorer_kind(values, key="scorer" if "scorer" in values else "masked_scorer")
    defaults = ModelRequest.__dataclass_fields__
    given = {k: values[k] for k in ("dtype", "device", "batch_size", "max_batch_size", "threads",
                                    "sampling_products") if values.get(k) is not None}  # fmt: skip
    if given.get("sampling_products", "float32") not in SAMPLING_PRODUCTS:
        from unstereo.errors import ConfigError

        section = key.rpartition(".")[0]
        raise ConfigError(
            f"{given['sampling_products']!r}: one of {list(SAMPLING_PRODUCTS)}",
            key=f"{section}.sampling_products" if section else "sampling_products",
        )
    if kind == CAUSAL:
        bos = values.get("bos_policy") or defaults["bos_policy"].default
    else:
        # A masked scorer puts no token before a sentence. Where the options carry a BOS policy (the commands of
        # the score and robustness stages) the run records "pll" for it, as those stages always have (it is part of
        # the score-cache key); BiasTestGPT's masked scores record none.
        bos = "pll" if "bos_policy" in values else None
    return ModelRequest(spec=spec, scorer=kind, bos_policy=bos, **given)


def as_request(model: Any, *, key: str = "model", external_dir: str | Path | None = None) -> ModelRequest:
    """``model`` as a :class:`ModelRequest`, for library callers that may hold either: a request as is, a resolved
    :class:`~unstereo.models.spec.ModelSpec` with the request's defaults (not resolved again), a spec's string or
    mapping form resolved once by :func:`model_request` (against ``external_dir``; errors name ``key``)."""
    from unstereo.models.spec import ModelSpec

    if isinstance(model, ModelRequest):
        return model
    if isinstance(model, ModelSpec):
        return ModelRequest(spec=model)
    return model_request({"model": model}, key=key, external_dir=external_dir)


def request_from_cli(model: str, values: Mapping[str, Any], param: str = "MODEL") -> ModelRequest:
    """:func:`model_request` of a command's MODEL argument and options; a bad spec is a usage error naming
    ``param``."""
    from unstereo.errors import ConfigError

    try:
        return model_request(values, key=param, external_dir=values.get("external_dir"),
                             api_key_env=values.get("api_key_env"), model=model)  # fmt: skip
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from exc


# ------------------------------------------------------------------------------------------------ the decorator
#: resolve_dtype's short names, accepted too (the LLM commands took any string before).
_DTYPE_ALIASES = ("fp32", "bf16", "fp16")
_DEVICE_HELP = "auto (cuda > mps > cpu), cpu, cuda, cuda:1, mps."
_DTYPE_HELP = "Weights dtype; auto = float32 on CPU, bfloat16 on GPU. Log-probs are always computed in fp32."


def device_option(default: str | None = "auto"):
    """``--device``, the one declaration (``default=None``: a command whose settings give the device)."""
    help_ = _DEVICE_HELP if default is not None else f"{_DEVICE_HELP} Overrides the settings' device."
    return click.option("--device", default=default, show_default=default is not None, help=help_)


def dtype_option(default: str | None = "auto"):
    """``--dtype``, the one declaration."""
    return click.option(
        "--dtype",
        default=default,
        show_default=default is not None,
        type=click.Choice([*DTYPES, *_DTYPE_ALIASES]),
        help=_DTYPE_HELP,
    )


def sampling_products_option():
    """``--sampling-products``, the one declaration (commands that sample from a local model)."""
    return click.option(
        "--sampling-products",
        default="float32",
        show_default=True,
        type=click.Choice(list(SAMPLING_PRODUCTS)),
        help="Products of a local model's sampling on the CPU: bfloat16 (on a CPU with native bf16, else fp32) or int8 "
        "(outlier columns in fp32) hold the weights in half or a quarter of fp32's memory and take less time, with other "
        "samples than float32's (cached apart); scores are fp32 whatever this says.",
    )


_MODEL_OPTIONS = {
    "gguf_file": click.option(
        "--gguf-file", default=None, help="GGUF file inside MODEL (a folder); or pass MODEL as a .gguf path."
    ),
    "revision": click.option(
        "--revision", default=None, help="Hub revision (branch, tag or commit) of MODEL."
    ),
    "batch_size": cli_options.batch_size,
    "max_batch_size": click.option(
        "--max-batch-size",
        default=None,
        type=click.IntRange(1),
        help="Starting batch size of 'auto' (default: 32 on CPU, 128 on CUDA).",
    ),
    "dtype": dtype_option(),
    "device": device_option(),
    "bos_policy": click.option(
        "--bos-policy",
        default="auto",
        show_default=True,
        type=click.Choice(list(BOS_POLICIES)),
        help="Token before each sentence: auto = BOS, else EOS, else none (first token not scored).",
    ),
}
_MASKED = click.option("--masked", is_flag=True, help="MODEL is a masked LM: score by pseudo-log-likelihood.")


def options(*, masked: str = "pll", bos_policy: bool = True):
    """The model options of a command that runs a model, declared once: --gguf-file, --revision, --masked,
    --batch-size, --max-batch-size, --dtype, --device, --bos-policy (``bos_policy=False``: without it).
    ``masked="pll"``: ``--masked`` scores by pseudo-log-likelihood; ``masked="choice"``: ``--masked`` with
    ``--masked-scorer`` (one of the four masked kinds, default ``biastestgpt``). Pass the command's options to
    :func:`request_from_cli`."""
    if masked == "pll":
        masked_options = [_MASKED]
    else:
        masked_options = [
            click.option("--masked", is_flag=True, help="MODEL is a masked LM, scored by --masked-scorer."),
            click.option(
                "--masked-scorer",
                type=click.Choice(list(MASKED_KINDS)),
                default="biastestgpt",
                show_default=True,
                help="masked-LM score: the authors' (mean raw logit of the group term at one [MASK]), "
                "pseudo-log-likelihood, CrowS-Pairs (shared tokens), All Unmasked Likelihood",
            ),
        ]
    chosen = [
        _MODEL_OPTIONS["gguf_file"],
        _MODEL_OPTIONS["revision"],
        *masked_options,
        _MODEL_OPTIONS["batch_size"],
        _MODEL_OPTIONS["max_batch_size"],
        _MODEL_OPTIONS["dtype"],
        _MODEL_OPTIONS["device"],
    ]
    if bos_policy:
        chosen.append(_MODEL_OPTIONS["bos_policy"])

    def decorate(f):
        for option in reversed(chosen):
            f = option(f)
        return f

    return decorate


def resolve_cli_model(
    model: str, api_key_env: str | None, external_dir: str | None, param: str = "MODEL", **extra: str | None
):
    """The ModelSpec of a command's MODEL string (``extra``: ``gguf_file``/``revision`` options on top); a bad spec
    is a usage error naming the parameter."""
    from unstereo.errors import ConfigError
    from unstereo.models.spec import resolve_model

    try:
        return resolve_model(model, external_dir, key=param, api_key_env=api_key_env, **extra)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from exc
