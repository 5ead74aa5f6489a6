"""``unstereo generate``: build USE-k benchmarks with an LLM (docs/methods.md#use-k-generation)."""

from __future__ import annotations

import dataclasses
import re
import time
from pathlib import Path
from typing import Any

import click

import unstereo.models.request as model_request
from unstereo import cli_options
from unstereo.config.settings import section
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
    help="CSV with a column `word` (a word listed twice is generated twice); rounds take blocks of "
    "max_seed_words words from it in file order",
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
# the section's `k` lists every benchmark's (this command makes one, -k): no flag of its own
@section("generate").command(
    "model", "cache", "max_seed_words", "min_pairs", "max_rounds", "samples_per_word", "seed", "prompts_dir"
)
@cli_options.model_options
def run(seed_words_path, benchmark, k, out_dir, settings, api_key_env, external_dir) -> None:
    """Generate one USE-k benchmark from SEED_WORDS; every LLM call is cached (a rerun never repeats one). With
    min_pairs, rounds of generation run until that many pairs are kept (unstereo.unstereoeval.generate.rounds)."""
    from unstereo.config.settings import as_dict
    from unstereo.io import write_json
    from unstereo.llm import make_client
    from unstereo.log import get_logger
    from unstereo.models.request import model_request
    from unstereo.tables import PAIRS, write_table
    from unstereo.unstereoeval.generate.naturalness import make_scorer
    from unstereo.unstereoeval.generate.pipeline import GenerateSettings, summarize, to_pairs
    from unstereo.unstereoeval.generate.rounds import generate_to_target
    from unstereo.unstereoeval.prompts import load_prompts

    log = get_logger("unstereoeval.generate")
    cfg = as_dict(settings)
    if k is None:
        m = re.fullmatch(r"USE-(\d+)", benchmark or "")
        if not m:
            raise click.UsageError("give -k or a --benchmark named USE-<k>")
        k = int(m.group(1))
    benchmark = benchmark or f"USE-{k}"
    out = Path(out_dir)
    cache_path = cfg["cache"] or str(out.parent.parent / "llm-cache.sqlite")
    # the whole list: round 1 takes its first max_seed_words words, later rounds (min_pairs) the next blocks
    words = read_seed_words(seed_words_path)
    prompts = load_prompts(cfg["prompts_dir"])
    request = model_request(cfg, key="generate.model", external_dir=external_dir, api_key_env=api_key_env)
    client = make_client(
        request, cache=cache_path,
        concurrency=cfg["concurrency"], timeout=cfg["timeout"], max_retries=cfg["max_retries"],
        backoff_base=cfg["backoff_base"], backoff_max=cfg["backoff_max"], send_seed=cfg["send_seed"],
        price_prompt_per_1m=cfg["prices"]["prompt_per_1m"], price_completion_per_1m=cfg["prices"]["completion_per_1m"],
    )  # fmt: skip
    s = GenerateSettings.from_config(cfg)
    scorer = nat_request = None
    nat = cfg["naturalness"]
    if nat["model"] is None:
        s = dataclasses.replace(s, min_token_logprob=None)
    elif s.min_token_logprob is not None:
        score_cache = nat["cache"] or str(out.parent.parent / "score-cache.sqlite")
        nat_request = model_request({"model": nat["model"]}, key="generate.naturalness.model",
                                    external_dir=external_dir)  # fmt: skip
        scorer = make_scorer(nat_request, score_cache)
        log.info("%s: naturalness under %s, >= %g per token, score cache %s", benchmark,
                 nat_request.spec.to_arg(), s.min_token_logprob, score_cache)  # fmt: skip
    judge_request, judge_, judge_load = None, None, 0.0
    if nat["judge"] is not None:
        judge_request, judge_, judge_load = _load_judge(nat["judge"], cfg, s, external_dir, request, client)
        log.info("%s: judge of sense %s, P(Yes) >= %g for both sentences (loaded in %.1fs)", benchmark,
                 judge_request.spec.to_arg(), s.judge_threshold, judge_load)  # fmt: skip
    target = (f"until {cfg['min_pairs']} pairs are kept (at most {cfg['max_rounds']} rounds, "
              f"{cfg['samples_per_word']} samples per word)" if cfg["min_pairs"] is not None else "one round")  # fmt: skip
    log.info("%s: %d seed words in the list, %s a round, %s; k=%d, %s, cache %s", benchmark, len(words),
             cfg["max_seed_words"] or "all", target, k, client.model_id, cache_path)  # fmt: skip
    t0 = time.time()
    try:
        run_ = generate_to_target(words, k, client, prompts, s, min_pairs=cfg["min_pairs"],
                                  max_rounds=cfg["max_rounds"], max_seed_words=cfg["max_seed_words"],
                                  samples_per_word=cfg["samples_per_word"], benchmark=benchmark, scorer=scorer,
                                  judge=judge_)  # fmt: skip
        full = run_.full
        elapsed = time.time() - t0
        source = f"generate:{client.model_id}"
        pairs = to_pairs(full, source)
        write_table(full, out / "full.parquet")
        write_table(pairs, out / "pairs.parquet", PAIRS)
        summary = summarize(full, run_.seed_words, run_.min_pairs) | {
            "benchmark": benchmark, "k": k, "model": client.model_id, "seconds": round(elapsed, 1),
            "max_rounds": cfg["max_rounds"], "samples_per_word": cfg["samples_per_word"], "stopped": run_.stopped,
        }  # fmt: skip
        # provenance for `benchmarks export`: the decoding settings and filters of this run, and the prompts folder
        summary["settings"] = dataclasses.asdict(s) | {"prompts_dir": str(cfg["prompts_dir"] or "")}
        summary["naturalness_model"] = (
            nat_request.spec.to_arg() if nat_request is not None and scorer is not None else None
        )
        summary["judge_model"] = judge_request.spec.to_arg() if judge_request is not None else None
        summary["judge_load_seconds"] = round(judge_load, 1)
        summary["judge_seconds"] = round(judge_.seconds, 1) if judge_ is not None else None
        summary["sampling_form"] = _sampling_form(client)
        write_json(out / "summary.json", summary)
        client.write_usage(out / "usage.json", {"benchmark": benchmark, "seconds": round(elapsed, 1)})
    finally:
        client.close()
    log.info("%s: %d rounds, %d sentences, %d pairs kept (%.1fs); %s", benchmark, len(run_.rounds),
             int((full["item"] >= 0).sum()), len(pairs), elapsed, client.usage.total())  # fmt: skip
    if judge_ is not None:
        log.info("%s: judge of sense %.1fs of the %.1fs", benchmark, judge_.seconds, elapsed)


def _sampling_form(client) -> dict | None:
    """The form a local generator sampled in (summary.json's ``sampling_form``): its products, whether its fp32
    weights were packed, and the seconds a step each timed candidate took (:mod:`unstereo.engine.forms`); None for
    an endpoint."""
    backend = getattr(client, "backend", None)
    if not hasattr(backend, "products"):
        return None
    choice = getattr(backend, "choice", None)
    return {"products": backend.products, "packed": backend.pack,
            "form": choice.form if choice is not None else None,
            "timings": dict(choice.timings) if choice is not None else None,
            "remembered": choice.remembered if choice is not None else None}  # fmt: skip


def _load_judge(judge_cfg: dict, cfg: dict, s, external_dir, generator=None, client=None):
    """(request, SenseJudge, seconds to load) of the ``generate.naturalness.judge`` mapping ``judge_cfg``: loaded once
    per job, before the pipeline (its P(Yes) threshold is ``s.judge_threshold``); the device is the section's, the
    dtype and batch size the judge's own. When the judge is the local generator (``generator``, the request of
    ``client``: same spec, dtype, device) it takes the generator's loaded weights instead of a second copy."""
    from unstereo.errors import ConfigError
    from unstereo.models.request import model_request
    from unstereo.unstereoeval.generate.judge import JudgeSettings, load_judge

    key = "generate.naturalness.judge.model"
    values = {"model": judge_cfg["model"], "dtype": judge_cfg.get("dtype"), "device": cfg.get("device")}
    request = model_request(values, key=key, external_dir=external_dir)
    if request.spec.is_remote:
        raise ConfigError(
            "the judge reads next-token logits: it needs a local model, not an endpoint", key=key
        )
    t0 = time.time()
    settings = JudgeSettings(threshold=s.judge_threshold, batch_size=judge_cfg.get("batch_size") or 16)
    backend = getattr(client, "backend", None)
    same = generator is not None and (request.spec, request.dtype, request.device) == (
        generator.spec,
        generator.dtype,
        generator.device,
    )
    if same and hasattr(backend, "loaded"):
        from unstereo.unstereoeval.generate.judge import SenseJudge

        judge_ = SenseJudge(*backend.loaded(), settings)
    else:
        judge_ = load_judge(request, settings)
    return request, _TimedJudge(judge_), time.time() - t0


def _judge_in_form(request, products: str):
    """The judge of ``request`` as the generate stage runs it: fp32 (``float32``), or, for ``int8`` or ``bfloat16``
    and a GGUF spec on the CPU, the file loaded straight into such layers (:func:`unstereo.models.load.load` with
    ``direct``); ``products`` are those :func:`unstereo.llm.local.sampling_products` grants here."""
    from unstereo.models.load import load
    from unstereo.unstereoeval.generate.judge import SenseJudge, load_judge

    if products == "float32":
        return load_judge(request)
    return SenseJudge(*load(request, "causal", direct=products))


class _TimedJudge:
    """A judge that adds up the seconds of its ``p_yes`` calls (``judge_seconds`` in summary.json: the judge's cost
    inside the pipeline's seconds)."""

    def __init__(self, judge):
        self.judge = judge
        self.seconds = 0.0

    def p_yes(self, sentences):
        t0 = time.time()
        try:
            return self.judge.p_yes(sentences)
        finally:
            self.seconds += time.time() - t0


def read_sentences(path: str | Path, column: str = "sentence") -> list[str]:
    """Sentences from a .txt file (one a line; blank lines skipped) or a .parquet/.csv/.jsonl table's ``column``."""
    from unstereo.tables import read_table

    path = Path(path)
    if path.suffix == ".txt":
        return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()]
    df = read_table(path)
    if column not in df.columns:
        raise InputError(
            f"no column {column!r} (has {list(df.columns)}); choose one with --column", path=path
        )
    bad = [i for i, s in enumerate(df[column]) if not isinstance(s, str) or not s.strip()]
    if bad:
        raise InputError(f"column {column!r}: empty or non-text sentence", path=path, line=bad[0] + 2)
    return [s.strip() for s in df[column]]


@group.command("judge", epilog=cli_options.MODEL_FORMS)
@click.argument("model")
@click.argument("sentences", type=cli_options.EXISTING_FILE)
@cli_options.output("table to write (.parquet or .csv): sentence, p_yes, keep")
@click.option("--column", default="sentence", show_default=True, help="the sentence column of a table input")
@click.option(
    "--threshold",
    type=click.FloatRange(0, 1),
    default=None,
    help="a sentence is kept when P(Yes) >= THRESHOLD [default: unstereo.unstereoeval.generate.judge.DEFAULT_THRESHOLD, 0.413]",
)
@click.option(
    "--batch-size", type=click.IntRange(1), default=16, show_default=True, help="sentences per pass"
)
@click.option(
    "--question", default=None, help="the question, with a {sentence} field [default: the built-in one]"
)
@click.option("--system", default=None, help="a system turn [default: the chat template's own]")
@cli_options.device_option()
@cli_options.dtype_option()
@cli_options.threads
@cli_options.model_options
def judge(model, sentences, output, column, threshold, batch_size, question, system, device, dtype, threads,
          api_key_env, external_dir) -> None:  # fmt: skip
    """Judge whether each sentence of SENTENCES is natural, sensible English with MODEL (an instruct model with a
    chat template): P(Yes) of its answer token, renormalised over Yes/No (docs: unstereo.unstereoeval.generate.judge).

    \b
    SENTENCES: a .txt file (one sentence a line) or a .parquet/.csv/.jsonl table with a sentence column.
    Output columns: sentence, p_yes, keep (p_yes >= THRESHOLD).
    """
    import pandas as pd

    from unstereo.errors import UnstereoError
    from unstereo.log import get_logger
    from unstereo.tables import write_table
    from unstereo.unstereoeval.generate.judge import DEFAULT_THRESHOLD, QUESTION, JudgeSettings, load_judge

    log = get_logger("unstereoeval.generate")
    options = {"device": device, "dtype": dtype, "threads": threads, "external_dir": external_dir,
               "api_key_env": api_key_env}  # fmt: skip
    request = cli_options.request_from_cli(model, options)
    spec = request.spec
    if spec.is_remote:
        raise click.BadParameter(
            "the judge reads next-token logits: it needs a local model", param_hint="MODEL"
        )
    texts = read_sentences(sentences, column)
    try:
        settings = JudgeSettings(
            question=question or QUESTION,
            system=system,
            threshold=DEFAULT_THRESHOLD if threshold is None else threshold,
            batch_size=batch_size,
        )
    except UnstereoError as exc:
        raise click.UsageError(str(exc)) from exc
    t0 = time.time()
    request.apply_threads()
    judge_ = load_judge(request, settings)
    loaded = time.time() - t0
    scored = judge_.judge(texts)
    seconds = time.time() - t0 - loaded
    df = pd.DataFrame({"sentence": texts, "p_yes": [p for p, _ in scored], "keep": [k for _, k in scored]})
    write_table(df, output)
    log.info("%s: %d sentences judged by %s, %d kept at P(Yes) >= %g (load %.1fs, judge %.1fs: %.2fs a sentence)",
             output, len(df), spec.to_arg(), int(df["keep"].sum()), settings.threshold, loaded, seconds,
             seconds / max(len(df), 1))  # fmt: skip


@group.command("judge-set")
@cli_options.output("table to write (.csv or .parquet): id, sentence, label, source, part, origin")
@click.option(
    "--reference-dir",
    type=click.Path(file_okay=False),
    default=None,
    help="the reference resource [default: $UNSTEREO_EXTERNAL_DIR/reference or data/external/reference]",
)
@click.option("--recipe", type=cli_options.EXISTING_FILE, default="data/judge/recipe.json", show_default=True,
              help="released rows, fillings, shuffles and swaps")  # fmt: skip
@click.option("--run-sentences", type=cli_options.EXISTING_FILE, default="data/judge/run-sentences.csv",
              show_default=True, help="hand-labelled sentences of a generation run")  # fmt: skip
def judge_set(output, reference_dir, recipe, run_sentences) -> None:
    """Build the labelled set (natural / unnatural sentences, calibration / held-out split) on which the judge of
    sense is calibrated, from the recipe and the released USE-5 (docs/methods.md#judge-of-sense-generation)."""
    from unstereo.log import get_logger
    from unstereo.models.spec import external_dir_default
    from unstereo.tables import write_table
    from unstereo.unstereoeval.generate.judge_set import build_set

    reference_dir = reference_dir or external_dir_default() / "reference"
    df = build_set(reference_dir, recipe, run_sentences)
    write_table(df, output)
    counts = df.groupby(["label", "part"]).size().to_dict()
    get_logger("unstereoeval.generate").info("%s: %d sentences %s", output, len(df), counts)


@group.command("judge-calibrate", epilog=cli_options.MODEL_FORMS)
@click.argument("labelled", type=cli_options.EXISTING_FILE)
@cli_options.output(
    "writes scores.csv, questions.csv, results.csv, results.md and the P(Yes) cache here", kind="dir"
)
@click.option("--model", "model", default="resource:qwen-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
              show_default=True, help="the judge (an instruct model with a chat template)")  # fmt: skip
@click.option(
    "--question",
    "questions",
    multiple=True,
    help="an alternative question (with {sentence}), tried on the calibration part; repeat [the built-in one is "
    "always tried first]",
)
@click.option(
    "--config",
    "config_path",
    type=cli_options.EXISTING_FILE,
    default="config/config.yaml",
    show_default=True,
    help="its generate.naturalness (model, min_token_logprob, start_logprob) is the log-likelihood filter compared",
)
@click.option("--min-gain", type=click.FloatRange(0, 1), default=0.01, show_default=True,
              help="an alternative question replaces the built-in one only if its calibration balanced accuracy is "
              "higher by at least this much")  # fmt: skip
@click.option("--limit", type=click.IntRange(1), default=None,
              help="judge at most N new sentences, then stop (rerun to resume from the cache)")  # fmt: skip
@click.option(
    "--batch-size", type=click.IntRange(1), default=16, show_default=True, help="sentences per pass"
)
@click.option("--products", type=click.Choice(model_request.SAMPLING_PRODUCTS), default="float32", show_default=True,
              help="the judge's form: float32 (the GGUF converted to fp32), or bfloat16 / int8 (a GGUF loaded "
              "straight into such layers, as the generate stage runs it with that sampling_products)")  # fmt: skip
@cli_options.device_option()
@cli_options.dtype_option()
@cli_options.threads
@cli_options.model_options
def judge_calibrate(labelled, output, model, questions, config_path, min_gain, limit, batch_size, products, device,
                    dtype, threads, api_key_env, external_dir) -> None:  # fmt: skip
    """Calibrate the judge of sense on LABELLED (from `unstereo generate judge-set`): choose the question and the
    P(Yes) threshold on the calibration part (best balanced accuracy), then report precision / recall of natural
    acceptance and of unnatural detection on the held-out part, beside the configured log-likelihood filter's
    (docs: unstereo.unstereoeval.generate.judge_calibration)."""
    import pandas as pd

    from unstereo.config import load_config
    from unstereo.llm.local import product_label, sampling_products
    from unstereo.log import get_logger
    from unstereo.tables import read_table, write_table
    from unstereo.unstereoeval.generate import judge_calibration as jc
    from unstereo.unstereoeval.generate.judge import QUESTION, JudgeSettings
    from unstereo.unstereoeval.generate.naturalness import make_scorer, token_logprob

    log = get_logger("unstereoeval.generate")
    out = Path(output)
    out.mkdir(parents=True, exist_ok=True)
    df = read_table(labelled)
    missing = [c for c in ("id", "sentence", "label", "part") if c not in df.columns]
    if missing:
        raise InputError(
            f"labelled set lacks column(s) {missing} (build it with `generate judge-set`)", path=labelled
        )
    bad = sorted(set(df["label"]) - {"natural", "unnatural"}) + sorted(set(df["part"]) - set(jc.PARTS))
    if bad:
        raise InputError(f"unknown label/part value(s) {bad}", path=labelled)

    # the log-likelihood filter as configured (its own scorer and score cache)
    nat = (load_config(config_path).get("generate") or {}).get("naturalness") or {}
    if nat.get("min_token_logprob") is None or not nat.get("model"):
        raise InputError("generate.naturalness has no model / min_token_logprob to compare", path=config_path)
    start = float(nat.get("start_logprob") or 0.0)
    scorer = make_scorer(nat["model"], str(out / "score-cache.sqlite"), external_dir)
    df["loglik"] = token_logprob(scorer, list(df["sentence"]), start)

    options = {"device": device, "dtype": dtype, "threads": threads, "external_dir": external_dir,
               "api_key_env": api_key_env}  # fmt: skip
    request = cli_options.request_from_cli(model, options)
    products = sampling_products(products, request.resolved_device)  # what the generate stage would get here
    cache = jc.PYesCache(out / "p_yes.jsonl")
    judges: dict[str, Any] = {}
    timing = {"sentences": 0, "seconds": 0.0}

    def scorer_for(question: str):
        def score(batch: list[str]) -> list[float]:
            if "model" not in judges:
                request.apply_threads()
                t = time.time()
                judges["model"] = _judge_in_form(request, products)
                log.info("judge (%s) loaded in %.1fs", products, time.time() - t)
            judge_ = judges["model"]
            judge_.settings = JudgeSettings(question=question, batch_size=batch_size)
            t = time.time()
            got = judge_.p_yes(batch)
            timing["seconds"] += time.time() - t
            timing["sentences"] += len(batch)
            return got

        return score

    budget = [limit]

    def p_yes(question: str, sentences: list[str]) -> list[float | None]:
        label = request.spec.to_arg() + product_label(products)
        key = jc.PYesCache.key(label, question, None)
        before = sum(cache.get(key, s) is None for s in dict.fromkeys(sentences))
        got = jc.cached_p_yes(
            sentences, key, cache, scorer_for(question), chunk=2 * batch_size, limit=budget[0]
        )
        if budget[0] is not None:
            budget[0] -= before - sum(cache.get(key, s) is None for s in dict.fromkeys(sentences))
        return got

    def stop_if_incomplete(values: list[float | None]) -> None:
        if any(v is None for v in values):
            left = sum(v is None for v in values)
            click.echo(f"stopped after --limit: {left} sentence(s) left to judge "
                       f"({timing['seconds'] / max(timing['sentences'], 1):.2f}s a sentence); rerun to resume", err=True)  # fmt: skip
            raise SystemExit(0)

    # 1. the question and threshold, on the calibration part only
    cal = df[df["part"] == "calibration"]
    tried = []
    for q in [QUESTION] + [q for q in questions if q != QUESTION]:
        if "{sentence}" not in q:
            raise click.BadParameter("needs a {sentence} field", param_hint="--question")
        values = p_yes(q, list(cal["sentence"]))
        stop_if_incomplete(values)
        t = jc.choose_threshold(values, list(cal["label"]))
        m = jc.class_metrics(list(cal["label"]), [v >= t for v in values])
        tried.append({"question": q, "threshold": t, "calibration_balanced_accuracy": m["balanced_accuracy"]})
    best = jc.choose_question(tried, min_gain)
    pd.DataFrame(tried).to_csv(out / "questions.csv", index=False)

    # 2. the held-out part, once, with the chosen question
    values = p_yes(best["question"], list(df["sentence"]))
    stop_if_incomplete(values)
    df["p_yes"] = values
    ll_t = jc.choose_threshold(list(cal["loglik"]), list(cal["label"]))
    rows = (
        jc.evaluate(df, "p_yes", best["threshold"], "judge P(Yes)", "calibration")
        + jc.evaluate(df, "p_yes", 0.5, "judge P(Yes)", "fixed 0.5")
        + jc.evaluate(df, "loglik", float(nat["min_token_logprob"]), "log-likelihood", "config")
        + jc.evaluate(df, "loglik", ll_t, "log-likelihood", "calibration")
    )
    write_table(df[["id", "label", "source", "part", "p_yes", "loglik"]], out / "scores.csv")
    pd.DataFrame(rows).to_csv(out / "results.csv", index=False)
    md = jc.results_markdown(rows)
    by_source = jc.kept_by_source(df, [
        (f"judge >= {best['threshold']:.3g}", "p_yes", best["threshold"]),
        (f"log-likelihood >= {nat['min_token_logprob']:g}", "loglik", float(nat["min_token_logprob"])),
    ])  # fmt: skip
    by_source.to_csv(out / "kept_by_source.csv", index=False)
    (out / "results.md").write_text(
        f"Question: {best['question']!r}\n\nHeld-out part:\n\n{md}\n\nCalibration part:\n\n"
        f"{jc.results_markdown(rows, 'calibration')}\n\nShare kept, held-out part:\n\n"
        f"{by_source.to_markdown(index=False, floatfmt='.2f')}\n",
        encoding="utf-8",
    )
    if timing["sentences"]:
        log.info("judged %d sentences in %.1fs: %.2fs a sentence", timing["sentences"], timing["seconds"],
                 timing["seconds"] / timing["sentences"])  # fmt: skip
    click.echo(md)
