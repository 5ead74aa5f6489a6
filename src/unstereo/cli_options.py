"""Click options shared by the stage CLIs: one definition each, so the stages cannot drift apart.

Model options: every command that takes a model takes it as one string (:data:`MODEL_FORMS`), plus
``--api-key-env`` (endpoint models) and ``--external-dir`` (``resource:`` models), and resolves it with
:func:`unstereo.model_spec.resolve_model`. This module imports only click and the standard library at import time.
"""

from __future__ import annotations

import click

#: How a model is named on the command line (the same forms as a config entry, see unstereo.model_spec).
MODEL_FORMS = (
    "MODEL is a hub id (EleutherAI/pythia-70m, optionally @REVISION), a local folder, a .gguf file, "
    "resource:NAME/FILE.gguf (an offline resource under --external-dir) or endpoint:URL#NAME "
    "(model NAME of an OpenAI-compatible server at URL, e.g. endpoint:http://127.0.0.1:8000/v1#gpt-4o-mini)."
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


def resolve_cli_model(model: str, api_key_env: str | None, external_dir: str | None, param: str = "MODEL"):
    """The ModelSpec of a command's MODEL string; a bad spec is a usage error naming the parameter."""
    from .errors import ConfigError
    from .model_spec import resolve_model

    try:
        return resolve_model(model, external_dir, key=param, api_key_env=api_key_env)
    except ConfigError as exc:
        raise click.BadParameter(str(exc), param_hint=param) from exc
