"""FairPair speed: (1) samples per second of the stage's sampling (both sides of every prompt through the project's
LLM client, no cache) and (2) the metric computation, vectorised (incidence matrices, one matrix product per side
pair; broadcast sentiment differences) against the definitions' per-pair Python loop, on the same continuations, with
equal results checked.

    python benchmarks/bench_fairpair.py [--model tiny | PATH | resource:gemma3/gemma-3-270m-q4_k_m.gguf]
        [--prompts 4] [--n 5] [--max-new-tokens 24] [--batch-size 40] [--threads 2]
        [--metric-prompts 20] [--metric-n 50] [--words 100] [--skip-sampling]

``tiny`` is a randomly initialised 2-layer GPT-2 over a word vocabulary built here (no download). The metric part
uses synthetic continuations of ``--words`` words drawn from a 2,000-word Zipf vocabulary (``--metric-n`` per side
and prompt), so its speed does not depend on any model.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
import pandas as pd

from unstereo.fairpair.metrics import loop_units, side_features, terms, terms_loop, terms_loop_units
from unstereo.fairpair.perturb import PRONOUNS_MALE_TO_FEMALE, RulePerturbation
from unstereo.fairpair.prompts import common_sents
from unstereo.fairpair.sample import sample_fairpairs
from unstereo.llm import LLMClient
from unstereo.llm.local import LocalBackend
from unstereo.llm.sample import SampleSettings

OCCUPATIONS = ["technician", "accountant", "supervisor", "engineer", "nurse", "doctor", "baker", "chef"]


def tiny_client(batch_size: int) -> LLMClient:
    """A client around a random 2-layer GPT-2 (vocabulary: the prompts' words and 2,000 more)."""
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = [
        "<pad>",
        "<unk>",
        "<eos>",
        "John",
        "Jane",
        "is",
        "a",
        "an",
        "man",
        "woman",
        "working",
        "as",
        ",",
        ".",
    ]
    words += OCCUPATIONS + [f"w{i}" for i in range(2000)]
    tm = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tm.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tm, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>"
    )
    torch.manual_seed(0)
    cfg = GPT2Config(vocab_size=len(words), n_positions=256, n_embd=64, n_layer=2, n_head=2,
                     eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id)  # fmt: skip
    lm = GPT2LMHeadModel(cfg).eval()
    lm.generation_config = GenerationConfig.from_model_config(cfg)
    return LLMClient(LocalBackend.from_loaded(lm, tok, "tiny", batch_size=batch_size))


def bench_sampling(args) -> None:
    from unstereo.llm import make_client
    from unstereo.models.request import model_request

    p = RulePerturbation({"John": "Jane"}, {**PRONOUNS_MALE_TO_FEMALE, "man": "woman"})
    prompts = common_sents(OCCUPATIONS, [("John", "Jane")], [("man", "woman")], p, max_prompts=args.prompts)
    client = (
        tiny_client(args.batch_size)
        if args.model == "tiny"
        else make_client(model_request({"model": args.model, "batch_size": args.batch_size}))
    )
    settings = SampleSettings(n=args.n, top_p=0.9, max_new_tokens=args.max_new_tokens, seed=0)
    import tempfile

    with tempfile.TemporaryDirectory() as tmp:
        if args.model != "tiny":  # load (and convert) the model outside the timing
            client.backend._load()
        t0 = time.perf_counter()
        samples = sample_fairpairs(client, prompts, f"{tmp}/c.parquet", settings, chunk_size=10**6)
        wall = time.perf_counter() - t0
    tokens = int(samples["tokens"].sum())
    print(f"sampling [{args.model}]: {len(samples)} samples ({len(prompts)} prompts x 2 sides x n={args.n}, "
          f"{args.max_new_tokens} new tokens max, batch {args.batch_size}) in {wall:.1f} s: "
          f"{len(samples) / wall:.2f} samples/s, {tokens / wall:.1f} tokens/s")  # fmt: skip


def synthetic(rng, n_prompts: int, n: int, words: int) -> list[tuple[list[str], list[str]]]:
    vocab = np.array([f"w{i}" for i in range(2000)] + ["good", "bad", "love", "hate", "happy", "sad"])
    p = 1.0 / np.arange(1, len(vocab) + 1)
    p /= p.sum()

    def text():
        return " ".join(rng.choice(vocab, words, p=p))

    return [([text() for _ in range(n)], [text() for _ in range(n)]) for _ in range(n_prompts)]


def bench_metrics(args) -> None:
    rng = np.random.default_rng(0)
    data = synthetic(rng, args.metric_prompts, args.metric_n, args.words)
    pairs = args.metric_prompts * (args.metric_n**2 + args.metric_n * (args.metric_n - 1))
    for phi in ("jaccard", "sentiment"):
        terms(phi, *side_features(phi, *data[0]))  # imports (scipy, VADER's lexicon) outside the timing
        terms_loop(phi, *data[0])
        # texts -> features (token incidence rows / scores) and texts -> units (token sets / scores): the same work
        t0 = time.perf_counter()
        feats = [side_features(phi, pg, gp) for pg, gp in data]
        t_feat = time.perf_counter() - t0
        t0 = time.perf_counter()
        units = [(loop_units(phi, pg), loop_units(phi, gp)) for pg, gp in data]
        t_units = time.perf_counter() - t0
        t0 = time.perf_counter()
        vec = [terms(phi, pg, gp) for pg, gp in feats]
        t_vec = time.perf_counter() - t0
        t0 = time.perf_counter()
        loop = [terms_loop_units(phi, pg, gp) for pg, gp in units]
        t_loop = time.perf_counter() - t0
        np.testing.assert_allclose([(t.B, t.V_gp, t.V_pg, t.F) for t in vec], loop, rtol=1e-12, atol=1e-12)
        total_vec, total_loop = t_feat + t_vec, t_units + t_loop
        print(f"metrics [{phi}]: {args.metric_prompts} prompts x n={args.metric_n} per side ({pairs} pairs, "
              f"{args.words} words per text); equal results")  # fmt: skip
        print(f"  pairs: vectorised {t_vec:.3f} s ({pairs / t_vec:,.0f} pairs/s, with the t-test), per-pair loop "
              f"{t_loop:.3f} s ({pairs / t_loop:,.0f} pairs/s): {t_loop / t_vec:.1f}x")  # fmt: skip
        print(f"  texts -> features: {t_feat:.3f} s (matrix rows) vs {t_units:.3f} s (sets/scores); end to end "
              f"{total_vec:.3f} s vs {total_loop:.3f} s: {total_loop / total_vec:.1f}x")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="tiny")
    ap.add_argument("--prompts", type=int, default=4)
    ap.add_argument("--n", type=int, default=5)
    ap.add_argument("--max-new-tokens", type=int, default=24)
    ap.add_argument("--batch-size", type=int, default=40)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--metric-prompts", type=int, default=20)
    ap.add_argument("--metric-n", type=int, default=50)
    ap.add_argument("--words", type=int, default=100)
    ap.add_argument("--skip-sampling", action="store_true")
    args = ap.parse_args()
    import torch

    torch.set_num_threads(args.threads)
    pd.set_option("display.width", 200)
    if not args.skip_sampling:
        bench_sampling(args)
    bench_metrics(args)


if __name__ == "__main__":
    main()
