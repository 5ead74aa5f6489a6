"""One model run, one object: :class:`ModelRequest` (the model spec resolved once, the scorer kind, dtype, device,
batch size, threads) built in one place, :func:`model_request`, from a config section or from a command's options
(the same keys: :data:`REQUEST_KEYS`); the click options that declare those keys on a command are the CLI layer's
(:func:`unstereo.cli_options.request_options`, :func:`unstereo.cli_options.request_from_cli`).

The request travels whole: :func:`unstereo.scoring.registry.scorer_for` turns it into (run description, scorer
factory) for any scorer kind; :func:`unstereo.llm.make_client` hands it to the local LLM backend
(:class:`unstereo.llm.local.LocalBackend`: its device, dtype and batch size), or an endpoint's spec to the HTTP
backend. The scorers, the classifiers and the local backend load it with :func:`unstereo.models.load.load`, on its
device resolved once, here (:attr:`ModelRequest.resolved_device`).
:func:`unstereo.models.spec.resolve_model` runs once per request, here; the commands that run a model (score,
robustness, BiasTestGPT score and generation, the generate stage, sentiment sample and debias, FairPair sample
and ``unstereo llm``) build their requests with :func:`model_request` (from the command line:
:func:`unstereo.cli_options.request_from_cli`) and pass them on whole.

This module imports only the standard library and :mod:`unstereo.engine.kernels` (a constant) at import time (every
stage CLI imports it, through :mod:`unstereo.cli_options`).
"""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

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
                "batch_size", "max_batch_size", "bos_policy", "threads", "sampling_products",
                "sampling_memory")  # fmt: skip


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
    sampling_products: str | tuple[str, ...] = "float32"
    #: GB the sampled model's weights may take when its form is chosen by timing (None: ``auto``,
    #: :func:`unstereo.engine.forms.memory_budget`)
    sampling_memory: float | None = None

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
                                    "sampling_products", "sampling_memory") if values.get(k) is not None}  # fmt: skip
    section = key.rpartition(".")[0]
    if "sampling_products" in given:
        given["sampling_products"] = parse_products(
            given["sampling_products"], f"{section}.sampling_products" if section else "sampling_products"
        )
    if given.get("sampling_memory") == "auto":
        del given["sampling_memory"]
    if kind == CAUSAL:
        bos = values.get("bos_policy") or defaults["bos_policy"].default
    else:
        # A masked scorer puts no token before a sentence. Where the options carry a BOS policy (the commands of
        # the score and robustness stages) the run records "pll" for it, as those stages always have (it is part of
        # the score-cache key); BiasTestGPT's masked scores record none.
        bos = "pll" if "bos_policy" in values else None
    return ModelRequest(spec=spec, scorer=kind, bos_policy=bos, **given)


def parse_products(value: Any, key: str = "sampling_products") -> str | tuple[str, ...]:
    """A ``sampling_products`` value: one name of :data:`SAMPLING_PRODUCTS` (forced), or a list (or a comma-separated
    string) of them, the candidates timed on the running machine (:mod:`unstereo.engine.forms`), as a tuple; ``auto``
    is ``float32`` (its plain and packed weights timed). Anything else is a ConfigError naming ``key``."""
    from unstereo.errors import ConfigError

    names = value.split(",") if isinstance(value, str) else list(value)
    names = [str(n).strip() for n in names]
    if names == ["auto"]:
        names = ["float32"]
    bad = [n for n in names if n not in SAMPLING_PRODUCTS]
    if bad or not names:
        raise ConfigError(f"{value!r}: one of {list(SAMPLING_PRODUCTS)}, or a list of them", key=key)
    if len(names) == 1 and (isinstance(value, str)):
        return names[0]
    return tuple(dict.fromkeys(names))


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
