"""Click options shared by the stage CLIs: one definition each, so the stages cannot drift apart.

Each name is a decorator (``@cli_options.threads``) or a function returning one where a stage must say something of
its own (``@cli_options.output("SCORES parquet")``). Parsing callbacks live here too (batch size, eps grid).
Model options: every command that takes a model takes it as one string (:data:`MODEL_FORMS`), plus
``--api-key-env`` (endpoint models) and ``--external-dir`` (``resource:`` models), and resolves it with
:func:`unstereo.models.spec.resolve_model`.
The model options of a command that runs a model (:func:`request_options`, :func:`device_option`, ...) and the
request built from them (:func:`request_from_cli`) live here too: the CLI layer, over
:mod:`unstereo.models.request`. This module imports only click, the standard library, :mod:`unstereo.defaults` and
:mod:`unstereo.models.request` (itself standard library only) at import time: every stage CLI imports it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click

from unstereo.defaults import eps_grid_text
from unstereo.models.request import BOS_POLICIES, DTYPES, MASKED_KINDS, SAMPLING_PRODUCTS

if TYPE_CHECKING:
    from unstereo.models.request import ModelRequest

EXISTING_FILE = click.Path(exists=True, dir_okay=False, path_type=Path)

_OUTPUT_TYPES = {
    "file": click.Path(dir_okay=False, path_type=Path),
    "dir": click.Path(file_okay=False, path_type=Path),
    "path": click.Path(path_type=Path),
    "text": str,
}


# ------------------------------------------------------------------------------------------------ parsing
def parse_batch_size(ctx: click.Context | None, param: click.Parameter | None, value: str | int) -> int | str:
    """``auto`` or an integer >= 1 (a click callback)."""
    if value == "auto":
        return value
    try:
        size = int(value)
    except (TypeError, ValueError):
        raise click.BadParameter("an integer >= 1 or 'auto'") from None
    if size < 1:
        raise click.BadParameter("an integer >= 1 or 'auto'")
    return size


def parse_grid(text: str):
    """``START:STOP:NUM`` -> ``numpy.linspace(START, STOP, NUM)``."""
    import numpy as np

    try:
        start, stop, num = text.split(":")
        return np.linspace(float(start), float(stop), int(num))
    except ValueError as exc:
        raise click.BadParameter(f"expected START:STOP:NUM, got {text!r}") from exc


def _grid_callback(ctx, param, value: str):
    return parse_grid(value)


# ------------------------------------------------------------------------------------------------ options
batch_size = click.option(
    "--batch-size",
    default="auto",
    show_default=True,
    callback=parse_batch_size,
    help="Sentences per forward pass (halved on out-of-memory), or 'auto': device-dependent start, "
    "logits memory bounded.",
)


#: ``--batch-size`` of the commands that sample text with a local model (the sampling engine's slots).
sample_batch_size = click.option(
    "--batch-size",
    default="auto",
    show_default=True,
    callback=parse_batch_size,
    help="local: rows sampled at once (the engine's slots), or 'auto': every row of a call, at most 128 and "
    "1 GiB of KV cache and logits.",
)


def eps(default: float):
    """``--eps``, the fairness threshold (its default comes from the metric definitions)."""
    return click.option(
        "--eps", type=float, default=default, show_default=True, help="fairness threshold on |FM| (nats)"
    )


eps_grid = click.option(
    "--eps-grid",
    default=eps_grid_text(),
    show_default=True,
    callback=_grid_callback,
    help="AuFC grid START:STOP:NUM (linspace)",
)


def etas(default: tuple[str, ...] | None = None, required: bool = False, help: str | None = None):
    """``--eta`` (repeatable) into the parameter ``etas``, as given (each stage parses it with its eta rules)."""
    return click.option(
        "--eta",
        "etas",
        multiple=True,
        required=required,
        default=default,
        show_default=default is not None,
        help=help or "MaxPMI bound(s): a number or 'inf' (unconstrained); repeat the option",
    )


def output(
    help: str | None = None,
    *,
    kind: str = "file",
    dest: str = "output",
    required: bool = True,
    flag: str = "--output",
    short: str | None = "-o",
):
    """``-o/--output``: ``kind`` file, dir, path (either) or text (a pattern); ``dest`` names the parameter. Another
    output of a command: its own ``flag`` and ``dest``, ``short=None`` (no one-letter form), often not required."""
    names = (short, flag, dest) if short else (flag, dest)
    return click.option(*names, required=required, type=_OUTPUT_TYPES[kind], help=help)


def input_files(flag: str, dest: str, help: str, required: bool = False):
    """A repeatable option naming existing files (``--pairs a.parquet --pairs b.parquet``) into ``dest``, a tuple."""
    return click.option(flag, dest, multiple=True, required=required, type=EXISTING_FILE, help=help)


#: ``--registry`` of a command that reads the registry only when given (`metrics`); the report commands take the
#: report section's ``registry`` (its schema's default, the packaged models.csv).
registry_optional = click.option(
    "--registry",
    type=EXISTING_FILE,
    default=None,
    help="model registry CSV: adds each model's display_name (as printed in the paper)",
)


def seed(default: int | None = 0, help: str = "random seed"):
    """``--seed`` (an integer); ``default=None`` for an override of a config value."""
    return click.option("--seed", type=int, default=default, show_default=default is not None, help=help)


threads = click.option(
    "--threads", default=None, type=click.IntRange(1), help="CPU threads for torch (default: torch's)."
)


# ------------------------------------------------------------------------------------------------ models
#: How a model is named on the command line (the same forms as a config entry, see unstereo.models.spec).
MODEL_FORMS = (
    "MODEL is a hub id (EleutherAI/pythia-70m, optionally @REVISION), a local folder, a .gguf file, "
    "resource:NAME/FILE.gguf (an offline resource under --external-dir), endpoint:URL#NAME "
    "(model NAME of an OpenAI-compatible server at URL, e.g. endpoint:http://127.0.0.1:8000/v1#gpt-4o-mini) or "
    "variant:NAME (a model variant's folder under $UNSTEREO_VARIANTS_DIR or results/variants)."
)

api_key_env = click.option(
    "--api-key-env",
    default=None,
    help="NAME of the environment variable holding an endpoint model's API key ('' = send none) "
    "[default: the spec's api_key_env, else OPENAI_API_KEY]",
)

external_dir = click.option(
    "--external-dir",
    default=None,
    type=click.Path(file_okay=False),
    help="folder of the offline resources for resource:NAME models [default: $UNSTEREO_EXTERNAL_DIR or data/external]",
)


def model_options(f):
    """``--api-key-env`` and ``--external-dir`` (pass both to :func:`resolve_cli_model`)."""
    return api_key_env(external_dir(f))


# ------------------------------------------------------------------------------------------------ step names
def alias(group: click.Group, command: click.Command, old_name: str) -> None:
    """Keep ``command`` callable under its former step name ``old_name`` (docs/workflow-rules.md, "Step
    vocabulary"), hidden from ``--help`` so that each step is listed once."""
    import copy

    old = copy.copy(command)
    old.name, old.hidden = old_name, True
    group.add_command(old, old_name)


# ------------------------------------------------------------------------------------------------ model requests
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
        callback=_products_callback,
        help="Products of a local model's sampling on the CPU: float32, bfloat16 (weights in bf16; native bf16 products "
        "where the CPU has them, else widened to fp32) or int8 (outlier columns in fp32), or a comma-separated list of "
        "them: the candidates, timed on this machine on the model's shapes, the fastest whose weights fit "
        "--sampling-memory taken (remembered per machine). bfloat16 and int8 give other samples than float32's "
        "(cached apart); float32's plain and packed weights (the same numbers) are always timed against each other. "
        "Scores are fp32 whatever this says.",
    )


def _products_callback(ctx, param, value):
    from unstereo.errors import ConfigError
    from unstereo.models.request import parse_products

    try:
        return parse_products(value, param.name)
    except ConfigError as exc:
        raise click.BadParameter(
            f"{value!r}: one of {list(SAMPLING_PRODUCTS)}, or a comma-separated list"
        ) from exc


def sampling_memory_option():
    """``--sampling-memory``, the one declaration (with :func:`sampling_products_option`)."""
    return click.option(
        "--sampling-memory",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="GB the sampled model's weights may take when its form is chosen by timing [default: 40% of the memory "
        "available at the start]",
    )


_MODEL_OPTIONS = {
    "gguf_file": click.option(
        "--gguf-file", default=None, help="GGUF file inside MODEL (a folder); or pass MODEL as a .gguf path."
    ),
    "revision": click.option(
        "--revision", default=None, help="Hub revision (branch, tag or commit) of MODEL."
    ),
    "batch_size": batch_size,
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


def request_options(*, masked: str = "pll", bos_policy: bool = True, section: Any = None):
    """The model options of a command that runs a model, declared once: --gguf-file, --revision, --masked,
    --batch-size, --max-batch-size, --dtype, --device, --bos-policy (``bos_policy=False``: without it).
    ``masked="pll"``: ``--masked`` scores by pseudo-log-likelihood; ``masked="choice"``: ``--masked`` with
    ``--masked-scorer`` (one of the four masked kinds, default ``biastestgpt``). ``section``: the command's
    :class:`unstereo.config.settings.Section`; an option it declares as a key (``batch_size``, ``dtype``, ...) is
    left out (the section's generated flag stands for it; :func:`request_from_settings` reads it). Pass the
    command's options to :func:`request_from_cli`."""
    from unstereo.config.settings import with_options

    if masked == "pll":
        masked_options = [("masked", _MASKED)]
    else:
        masked_options = [
            ("masked", click.option("--masked", is_flag=True, help="MODEL is a masked LM, scored by --masked-scorer.")),
            ("masked_scorer", click.option(
                "--masked-scorer",
                type=click.Choice(list(MASKED_KINDS)),
                default="biastestgpt",
                show_default=True,
                help="masked-LM score: the authors' (mean raw logit of the group term at one [MASK]), "
                "pseudo-log-likelihood, CrowS-Pairs (shared tokens), All Unmasked Likelihood",
            )),
        ]  # fmt: skip
    names = ["gguf_file", "revision", "batch_size", "max_batch_size", "dtype", "device"]
    names += ["bos_policy"] if bos_policy else []
    chosen = [(n, _MODEL_OPTIONS[n]) for n in names[:2]] + masked_options
    chosen += [(n, _MODEL_OPTIONS[n]) for n in names[2:]]
    held = section_model_keys(section)
    return lambda f: with_options(f, [option for name, option in chosen if name not in held])


#: The request keys :func:`request_options` declares options for (a section may declare some of them instead).
MODEL_OPTION_KEYS = ("gguf_file", "revision", "masked", "masked_scorer", "batch_size", "max_batch_size", "dtype",
                     "device", "bos_policy")  # fmt: skip


def section_model_keys(section: Any) -> set[str]:
    """The model options that ``section`` (a :class:`unstereo.config.settings.Section`, or None) declares as keys."""
    return {k for k in MODEL_OPTION_KEYS if section is not None and k in section.settings}


def request_from_settings(
    model: str, settings: Any, options: Mapping[str, Any], section: Any, param: str = "MODEL"
) -> ModelRequest:
    """:func:`request_from_cli` of a command built with ``request_options(section=section)``: the model keys the
    section declares from its ``settings`` object, the rest from the command's own ``options``."""
    held = {k: getattr(settings, k) for k in section_model_keys(section)}
    return request_from_cli(model, {**options, **held}, param)


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


def request_from_cli(model: str, values: Mapping[str, Any], param: str = "MODEL") -> ModelRequest:
    """:func:`unstereo.models.request.model_request` of a command's MODEL argument and options; a bad spec is a
    usage error naming ``param``."""
    from unstereo.errors import ConfigError
    from unstereo.models.request import model_request

    try:
        return model_request(values, key=param, external_dir=values.get("external_dir"),
                             api_key_env=values.get("api_key_env"), model=model)  # fmt: skip
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from exc
