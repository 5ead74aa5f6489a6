"""``unstereo llm``: one-off chat completions through the project's client (cache, retries, usage log)."""

from __future__ import annotations

import json

import click

from .client import make_client
from .types import ChatRequest


@click.group("llm")
def group() -> None:
    """Chat-completion client (OpenAI-compatible HTTP endpoints or a local transformers model)."""


@group.command("chat")
@click.argument("message")
@click.option("--backend", type=click.Choice(["openai", "local"]), default="local", show_default=True)
@click.option("--model", required=True, help="model name (HTTP) or hub id / folder / .gguf file (local)")
@click.option("--base-url", default=None, help="OpenAI-compatible endpoint, e.g. http://127.0.0.1:8000/v1")
@click.option(
    "--api-key-env",
    default="OPENAI_API_KEY",
    show_default=True,
    help="NAME of the variable holding the API key",
)
@click.option("--system", default=None, help="optional system message")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--top-p", type=float, default=1.0, show_default=True)
@click.option("--max-tokens", type=int, default=256, show_default=True)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="sample index / seed (part of the cache key)"
)
@click.option(
    "--cache", type=click.Path(dir_okay=False), default=None, help="SQLite cache file (default: none)"
)
@click.option("--timeout", type=float, default=60.0, show_default=True, help="seconds per HTTP request")
@click.option("--max-retries", type=int, default=6, show_default=True)
@click.option(
    "--usage", "usage_path", type=click.Path(dir_okay=False), default=None, help="write usage JSON here"
)
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON (text, tokens, cached)")
def chat(
    message,
    backend,
    model,
    base_url,
    api_key_env,
    system,
    temperature,
    top_p,
    max_tokens,
    seed,
    cache,
    timeout,
    max_retries,
    usage_path,
    as_json,
) -> None:
    """Send MESSAGE (a user turn) and print the answer."""
    client = make_client(
        backend,
        model,
        base_url=base_url,
        api_key_env=api_key_env,
        cache=cache,
        timeout=timeout,
        max_retries=max_retries,
        batch_size=1,
    )
    try:
        messages = ((("system", system),) if system else ()) + (("user", message),)
        req = ChatRequest(messages, temperature=temperature, max_tokens=max_tokens, top_p=top_p, seed=seed)
        res = client.chat(req)
        if usage_path:
            client.write_usage(usage_path)
    finally:
        client.close()
    if as_json:
        click.echo(
            json.dumps(
                {
                    "text": res.text,
                    "prompt_tokens": res.prompt_tokens,
                    "completion_tokens": res.completion_tokens,
                    "cached": res.cached,
                }
            )
        )
    else:
        click.echo(res.text)
