"""``unstereo generate``: build USE-k benchmarks with an LLM (docs/methods.md#use-k-generation)."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path

import click

from unstereo import cli_options
from unstereo.errors import InputError


def read_seed_words(path: str | Path, limit: int | None = None) -> list[str]:
    """Seed words from a CSV with a ``word`` column, in file order (repeats kept); ``limit`` keeps the first N."""
    import pandas as pd

    try:
        df = pd.read_csv(path, keep_default_na=False, na_values=[""], dtype={"word": str})
    except Exception as exc:
        raise InputError(f"cannot read seed words: {exc}", path=path) from exc
    if "word" not in df.columns:
        raise InputError(f"seed-word CSV needs a column 'word'; has {list(df.columns)}", path=path)
    words = []
    for i, w in enumerate(df["word"]):
        if not isinstance(w, str) or not w.strip() or not re.fullmatch(r"[A-Za-z][A-Za-z'-]*", w.strip()):
            raise InputError(f"bad seed word {w!r} (need a single word)", path=path, line=i + 2)
        words.append(w.strip())
    return words[:limit] if limit else words


@click.group("generate")
def group() -> None:
    """LLM generation of USE-k templates: generation, revision, pairing, semantic filter."""


@group.command("run")
@click.option(
    "--seed-words",
    "seed_words_path",
    required=True,
    type=click.Path(exists=True, dir_okay=False),
    help="CSV with a column `word` (a word listed twice is generated twice)",
)
@click.option("--benchmark", default=None, help="benchmark name (default USE-{k})")
@click.option(
    "-k",
    "--k",
    "k",
    type=int,
    default=None,
    help="maximum words per sentence (default: from --benchmark USE-k)",
)
@cli_options.output(
    "writes full.parquet, pairs.parquet, summary.json, usage.json here",
    kind="dir",
    dest="out_dir",
    flag="--out-dir",
)
# the section's `k` lists every benchmark's (this command makes one) and its `model` is an entry: the command reads
# both from the section itself
@cli_options.settings("generate", keys={"k": None, "model": None})
@click.option(
    "--model",
    default=None,
    help="the chat model, overrides settings (hub id, folder, .gguf, resource:NAME/FILE.gguf or endpoint:URL#NAME)",
)
@cli_options.model_options
@click.option(
    "--cache",
    default=None,
    type=click.Path(dir_okay=False),
    help="SQLite cache (default: settings, else <out-dir>/../../llm-cache.sqlite)",
)
@click.option("--max-seed-words", type=int, default=None, help="overrides settings")
@cli_options.seed(None, "base seed of the sampled calls; overrides settings")
@click.option("--prompts-dir", default=None, type=click.Path(file_okay=False), help="overrides settings")
def run(seed_words_path, benchmark, k, out_dir, settings, model, api_key_env, external_dir, cache, max_seed_words,
        seed, prompts_dir) -> None:  # fmt: skip
    """Generate one USE-k benchmark from SEED_WORDS; every LLM call is cached (a rerun never repeats one)."""
    from unstereo.generation.prompts import load_prompts
    from unstereo.generation.settings import load_section, read_settings_arg
    from unstereo.io import write_json
    from unstereo.llm import make_client
    from unstereo.log import get_logger
    from unstereo.models.request import model_request
    from unstereo.models.spec import resolve_model
    from unstereo.tables import PAIRS, write_table
    from unstereo.unstereoeval.generate.naturalness import make_scorer
    from unstereo.unstereoeval.generate.pipeline import (
        GenerateSettings,
        generate_benchmark,
        summarize,
        to_pairs,
    )

    log = get_logger("generate")
    overrides = {"model": model, "cache": cache, "max_seed_words": max_seed_words, "seed": seed,
                 "prompts_dir": prompts_dir}  # fmt: skip
    cfg = read_settings_arg(settings)
    cfg.update({key: v for key, v in overrides.items() if v is not None})
    cfg = load_section(cfg)
    if k is None:
        m = re.fullmatch(r"USE-(\d+)", benchmark or "")
        if not m:
            raise click.UsageError("give -k or a --benchmark named USE-<k>")
        k = int(m.group(1))
    benchmark = benchmark or f"USE-{k}"
    out = Path(out_dir)
    cache_path = cfg["cache"] or str(out.parent.parent / "llm-cache.sqlite")
    words = read_seed_words(seed_words_path, cfg["max_seed_words"])
    prompts = load_prompts(cfg["prompts_dir"])
    request = model_request(cfg, key="generate.model", external_dir=external_dir, api_key_env=api_key_env)
    client = make_client(
        request, cache=cache_path,
        concurrency=cfg["concurrency"], timeout=cfg["timeout"], max_retries=cfg["max_retries"],
        backoff_base=cfg["backoff_base"], backoff_max=cfg["backoff_max"], send_seed=cfg["send_seed"],
        price_prompt_per_1m=cfg["prices"]["prompt_per_1m"], price_completion_per_1m=cfg["prices"]["completion_per_1m"],
    )  # fmt: skip
    s = GenerateSettings.from_config(cfg)
    scorer = nat_spec = None
    nat = cfg["naturalness"]
    if nat["model"] is None:
        s = dataclasses.replace(s, min_token_logprob=None)
    elif s.min_token_logprob is not None:
        score_cache = nat["cache"] or str(out.parent.parent / "score-cache.sqlite")
        nat_spec = resolve_model(nat["model"], external_dir, key="generate.naturalness.model")
        scorer = make_scorer(nat_spec, score_cache, external_dir)
        log.info("%s: naturalness under %s, >= %g per token, score cache %s", benchmark,
                 nat_spec.to_arg(), s.min_token_logprob, score_cache)  # fmt: skip
    log.info("%s: %d seed words, k=%d, %s, cache %s", benchmark, len(words), k, client.model_id, cache_path)
    t0 = time.time()
    try:
        full = generate_benchmark(words, k, client, prompts, s, benchmark=benchmark, scorer=scorer)
        elapsed = time.time() - t0
        source = f"generate:{client.model_id}"
        pairs = to_pairs(full, source)
        write_table(full, out / "full.parquet")
        write_table(pairs, out / "pairs.parquet", PAIRS)
        summary = summarize(full, len(words)) | {"benchmark": benchmark, "k": k, "model": client.model_id,
                                                 "seconds": round(elapsed, 1)}  # fmt: skip
        # provenance for `benchmarks export`: the decoding settings and filters of this run, and the prompts folder
        summary["settings"] = dataclasses.asdict(s) | {"prompts_dir": str(cfg["prompts_dir"] or "")}
        summary["naturalness_model"] = (
            nat_spec.to_arg() if nat_spec is not None and scorer is not None else None
        )
        write_json(out / "summary.json", summary)
        client.write_usage(out / "usage.json", {"benchmark": benchmark, "seconds": round(elapsed, 1)})
    finally:
        client.close()
    log.info("%s: %d sentences, %d pairs kept (%.1fs); %s", benchmark, int((full["item"] >= 0).sum()), len(pairs),
             elapsed, client.usage.total())  # fmt: skip
