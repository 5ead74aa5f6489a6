"""Counterfactual sentiment stage throughput, each figure against a baseline measured in the same run:

1. continuations/s of the stage's sampling path (filled templates -> ``run_sampling``: the shared client, the
   local backend's per-row seeded sampler, chunk files, classifier scoring) vs. transformers' own
   ``generate(do_sample=True)`` on the same prefixes, batch size and max_new_tokens (no cache, no scoring);
2. classifier throughput (texts/s) of vader, textblob, afinn and opinion on the sampled continuations;
3. the bootstrap of I.F. (vectorised equal-size W1 over all value pairs) vs. the same replicates computed with
   ``scipy.stats.wasserstein_distance`` pair by pair.

    python benchmarks/bench_sentiment.py [--model tiny | SPEC] [--templates DIR] [--max-templates 1]
        [--samples 2] [--max-new-tokens 10] [--batch-size 16] [--threads 1] [--lexicon DIR] [--boot 20]
        [--repeats 2]

``tiny`` is the random 4-layer GPT-2 of bench_sample.py. ``--templates`` defaults to the mirror
(../shared/reference/huang2020-sentiment-templates beside the checkout).
"""

from __future__ import annotations

import argparse
import tempfile
import time
from itertools import combinations
from pathlib import Path

import numpy as np
import torch
from bench_sample import tiny_model
from scipy.stats import wasserstein_distance

from unstereo.llm import LLMClient
from unstereo.llm.local import LocalBackend
from unstereo.llm.types import ContinuationRequest
from unstereo.sentiment.classifiers import make_classifier
from unstereo.sentiment.fairness import _cells, bootstrap
from unstereo.sentiment.sampling import prefixes, run_sampling
from unstereo.sentiment.settings import load_section

REPO = Path(__file__).resolve().parents[1]


def scipy_bootstrap_if(df, column: str, n_boot: int, seed: int) -> list[float]:
    """The I.F. replicates of :func:`bootstrap`, pair by pair with scipy (the baseline)."""
    cells = _cells(df, column)
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n_boot):
        d = []
        for mat in cells.values():
            m = mat.shape[1]
            arr = mat.to_numpy(float)[:, rng.integers(0, m, size=m)]
            d += [wasserstein_distance(a, b) for a, b in combinations(arr, 2)]
        out.append(float(np.mean(d)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", default="tiny")
    ap.add_argument(
        "--templates", default=str(REPO.parent / "shared/reference/huang2020-sentiment-templates")
    )
    ap.add_argument("--max-templates", type=int, default=1)
    ap.add_argument("--samples", type=int, default=2)
    ap.add_argument("--max-new-tokens", type=int, default=10)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument(
        "--lexicon", default=None, help="opinion-lexicon folder (skip the opinion classifier without)"
    )
    ap.add_argument("--boot", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    if args.model == "tiny":
        model, tok = tiny_model()
    else:
        from unstereo.models.load import load_causal_lm

        model, tok = load_causal_lm(args.model, dtype="float32", device="cpu")
    names = ["vader", "textblob", "afinn"] + (["opinion"] if args.lexicon else [])
    section = load_section({"max_templates": args.max_templates, "samples": args.samples,
                            "max_new_tokens": args.max_new_tokens, "batch_size": args.batch_size,
                            "classifiers": names, "stop": []})  # fmt: skip
    cells = prefixes(section, args.templates)
    n_cont = len(cells) * args.samples

    # 1. the stage's sampling path vs transformers generate, same prefixes and batch size; they take turns
    # (best of --repeats, after one warm-up each) so a change of the machine's load hits both alike
    backend = LocalBackend.from_loaded(model, tok, label="bench", batch_size=args.batch_size)
    prompts = [p for p in cells["prefix"] for _ in range(args.samples)]

    def stage():
        with tempfile.TemporaryDirectory() as tmp:  # a fresh client and folder: nothing cached
            return run_sampling(LLMClient(backend), section, args.templates, Path(tmp) / "c.parquet", seed=0,
                                opinion_dir=args.lexicon)  # fmt: skip

    def generate(limit=None):
        tok.padding_side = "left"
        with torch.no_grad():
            for i in range(0, len(prompts[:limit]), args.batch_size):
                enc = tok(prompts[i : i + args.batch_size], return_tensors="pt", padding=True, return_token_type_ids=False)  # fmt: skip
                model.generate(**enc, do_sample=True, top_k=0, max_new_tokens=args.max_new_tokens,
                               pad_token_id=tok.pad_token_id)  # fmt: skip

    generate(args.batch_size)  # warm-up
    backend.continue_batch([ContinuationRequest(prompts[0], max_tokens=2)])
    ours = base = float("inf")
    for _ in range(args.repeats):
        t0 = time.perf_counter()
        df = stage()
        ours = min(ours, time.perf_counter() - t0)
        t0 = time.perf_counter()
        generate()
        base = min(base, time.perf_counter() - t0)
    print(f"model {args.model}: {len(cells)} prefixes x {args.samples} samples, {args.max_new_tokens} new tokens, "
          f"batch {args.batch_size}, {args.threads} thread(s)")  # fmt: skip
    print(f"  sentiment sample (sampling + {len(names)} classifiers): {n_cont / ours:8.2f} continuations/s")
    print(f"  transformers generate(do_sample=True):             {n_cont / base:8.2f} continuations/s")
    print(f"  ratio (stage / generate): {base / ours:.2f}")

    # 2. classifiers on the sampled continuations (x20 to time something)
    texts = df["continuation"].tolist() * 20
    for name in names:
        clf = make_classifier(name, opinion_dir=args.lexicon)
        t0 = time.perf_counter()
        clf(texts)
        print(f"  classifier {name:9s}: {len(texts) / (time.perf_counter() - t0):10.0f} texts/s")

    # 3. bootstrap of I.F.: vectorised vs scipy pair by pair (same replicates)
    g = df[df["attribute"] == "name"] if "name" in set(df["attribute"]) else df
    t0 = time.perf_counter()
    bootstrap(g, "score_vader", args.boot, seed=0)
    vec = time.perf_counter() - t0
    t0 = time.perf_counter()
    scipy_bootstrap_if(g, "score_vader", args.boot, seed=0)
    ref = time.perf_counter() - t0
    print(
        f"  bootstrap I.F.+G.F. ({args.boot} replicates, {g['value'].nunique()} values): {vec:.3f} s; "
        f"scipy pair-by-pair I.F. only: {ref:.3f} s; speed-up {ref / vec:.1f}x"
    )


if __name__ == "__main__":
    main()
