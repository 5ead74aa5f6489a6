"""``unstereo llm``: one-off chat completions and sampled text continuations through the project's client (cache,
retries, usage log)."""

from __future__ import annotations

import json

import click

from unstereo import cli_options
from unstereo.config.settings import with_options

_CLIENT_OPTIONS = (
    click.option(
        "--cache", type=click.Path(dir_okay=False), default=None, help="SQLite cache file (default: none)"
    ),
    click.option("--timeout", type=float, default=60.0, show_default=True, help="seconds per HTTP request"),
    click.option("--max-retries", type=int, default=6, show_default=True),
    cli_options.device_option(),
    cli_options.dtype_option(),
    cli_options.sampling_products_option(),
    cli_options.sampling_memory_option(),
    click.option(
        "--usage", "usage_path", type=click.Path(dir_okay=False), default=None, help="write usage JSON here"
    ),
)


def _client_options(f):
    return cli_options.model_options(with_options(f, _CLIENT_OPTIONS))


@click.group("llm")
def group() -> None:
    """LLM client: chat completions and text continuations (OpenAI-compatible endpoints or local transformers)."""


@group.command("chat", epilog=cli_options.MODEL_FORMS)
@click.argument("model")
@click.argument("message")
@click.option("--system", default=None, help="optional system message")
@click.option("--temperature", type=float, default=0.0, show_default=True)
@click.option("--top-p", type=float, default=1.0, show_default=True)
@click.option("--max-tokens", type=int, default=256, show_default=True)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="sample index / seed (part of the cache key)"
)
@click.option("--json", "as_json", is_flag=True, help="print the result as JSON (text, tokens, cached)")
@_client_options
def chat(model, message, system, temperature, top_p, max_tokens, seed, as_json, cache, timeout, max_retries,
         device, dtype, sampling_products, sampling_memory, usage_path, api_key_env, external_dir) -> None:  # fmt: skip
    """Send MESSAGE (a user turn) to MODEL (an instruct model) and print the answer."""
    from unstereo.llm.client import make_client
    from unstereo.llm.types import ChatRequest

    options = {"device": device, "dtype": dtype, "sampling_products": sampling_products,
               "sampling_memory": sampling_memory, "external_dir": external_dir, "api_key_env": api_key_env}  # fmt: skip
    request = cli_options.request_from_cli(model, {**options, "batch_size": 1})
    client = make_client(request, cache=cache, timeout=timeout, max_retries=max_retries)
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


@group.command("continue", epilog=cli_options.MODEL_FORMS)
@click.argument("model")
@click.argument("prompts", type=click.Path(exists=True, dir_okay=False))
@click.option(
    "-o",
    "--output",
    required=True,
    type=click.Path(dir_okay=False),
    help="CONTINUATIONS table to write (.parquet or .csv)",
)
@click.option(
    "-n", "--n", "n", type=click.IntRange(1), default=1, show_default=True, help="samples per prompt"
)
@click.option("--temperature", type=click.FloatRange(0), default=1.0, show_default=True, help="0 = greedy")
@click.option("--top-p", type=click.FloatRange(0, 1, min_open=True), default=1.0, show_default=True)
@click.option("--max-new-tokens", type=click.IntRange(1), default=64, show_default=True)
@click.option("--stop", multiple=True, help="stop string (repeatable); the text is cut before it")
@click.option(
    "--seed", type=int, default=0, show_default=True, help="sample j of every prompt uses seed SEED + j"
)
@cli_options.sample_batch_size
@click.option(
    "--concurrency", type=click.IntRange(1), default=4, show_default=True, help="endpoint: parallel calls"
)
@click.option(
    "--chunk-size", type=click.IntRange(1), default=64, show_default=True, help="prompts per resumable chunk"
)
@_client_options
def continue_(model, prompts, output, n, temperature, top_p, max_new_tokens, stop, seed, batch_size, concurrency,
              chunk_size, cache, timeout, max_retries, device, dtype, sampling_products, sampling_memory, usage_path,
              api_key_env, external_dir) -> None:  # fmt: skip
    """Sample N text continuations of every prompt of PROMPTS with MODEL (base or instruct; no chat template).

    \b
    PROMPTS: a .csv/.parquet/.jsonl table with columns prompt_id, prompt.
    Output columns: prompt_id, sample, seed, continuation, finish_reason, tokens.
    An endpoint model is called at URL/completions. Resumable: finished chunks are kept beside the output
    (and every call is cached with --cache).
    """
    from unstereo.llm.client import make_client
    from unstereo.llm.sample import SampleSettings, read_prompts, sample_continuations

    options = {"device": device, "dtype": dtype, "sampling_products": sampling_products,
               "sampling_memory": sampling_memory, "external_dir": external_dir, "api_key_env": api_key_env}  # fmt: skip
    request = cli_options.request_from_cli(model, {**options, "batch_size": batch_size})
    table = read_prompts(prompts)
    try:
        settings = SampleSettings(n, temperature, top_p, max_new_tokens, tuple(stop), seed)
    except ValueError as exc:
        raise click.UsageError(str(exc)) from exc
    client = make_client(
        request, cache=cache, timeout=timeout, max_retries=max_retries, concurrency=concurrency
    )
    try:
        df = sample_continuations(client, table, output, settings, chunk_size=chunk_size, source=prompts)
        if usage_path:
            client.write_usage(usage_path)
    finally:
        client.close()
    click.echo(f"{output}: {len(df)} continuations of {len(table)} prompts with {client.model_id}", err=True)
