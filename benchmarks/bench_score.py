"""Pairs scored per second: the batched scorer vs. a naive loop (one sentence per forward pass), same model, same
process, same sentences.

    python benchmarks/bench_score.py [--model data/external/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf]
        [--pairs 200] [--threads 2] [--batch-size auto]

Sentences: USE-5 templates from the reference release when it is found (``$UNSTEREO_REFERENCE``,
``../shared/reference`` or ``data/external/reference``), else synthetic 5-word templates; each filled female and male.
Prints both rates, the ratio (target >= 5x on 2 CPU cores with SmolLM2) and the largest score difference between
the two methods.
"""

from __future__ import annotations

import argparse
import os
import random
import time
from pathlib import Path

import pandas as pd
import torch

from unstereo.models import load_causal_lm
from unstereo.scoring import CausalScorer
from unstereo.templates import fill_template

REPO = Path(__file__).resolve().parents[1]


def use5_templates(n: int, seed: int = 0) -> tuple[list[str], str]:
    """n USE-5 templates (reference release if present, else synthetic) and where they came from."""
    candidates = [
        os.environ.get("UNSTEREO_REFERENCE"),
        REPO.parent / "shared" / "reference",
        REPO / "data" / "external" / "reference",
    ]
    for base in filter(None, candidates):
        path = Path(base) / "unstereo-eval" / "data" / "datasets" / "raw" / "USE-5.csv"
        if path.is_file():
            templates = pd.read_csv(path, keep_default_na=False)["template"].tolist()
            return random.Random(seed).sample(templates, min(n, len(templates))), str(path)
    rng = random.Random(seed)
    subjects, verbs = (
        ["{pronoun}", "{pronoun1} friend", "The doctor"],
        ["loved", "painted", "found", "helped"],
    )
    objects = ["the old house", "{pronoun2} quietly", "{pronoun1} bright garden", "the small boat today"]
    out = [f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}." for _ in range(n)]
    return out, "synthetic"


def naive_scores(model, tokenizer, sentences: list[str]) -> list[float]:
    """The obvious loop: one forward pass per sentence, log_softmax, sum over the sentence's tokens."""
    out = []
    with torch.inference_mode():
        for s in sentences:
            ids = torch.tensor(
                [[tokenizer.bos_token_id, *tokenizer(s, add_special_tokens=False)["input_ids"]]]
            )
            logits = model(input_ids=ids).logits[0, :-1]
            out.append(float(torch.log_softmax(logits.float(), -1).gather(-1, ids[0, 1:, None]).sum()))
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(REPO / "data/external/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"))
    ap.add_argument("--pairs", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", default="auto")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    templates, source = use5_templates(args.pairs)
    sentences = [fill_template(t, g) for t in templates for g in ("female", "male")]
    model, tokenizer = load_causal_lm(args.model, dtype="float32", device="cpu")
    batch_size = args.batch_size if args.batch_size == "auto" else int(args.batch_size)
    scorer = CausalScorer(model, tokenizer, device="cpu", batch_size=batch_size)
    scorer.score(sentences[:8])  # warm-up
    naive_scores(model, tokenizer, sentences[:8])

    t0 = time.perf_counter()
    batched = [lp for lp, _ in scorer.score(sentences)]
    t_batched = time.perf_counter() - t0
    t0 = time.perf_counter()
    naive = naive_scores(model, tokenizer, sentences)
    t_naive = time.perf_counter() - t0

    n = len(templates)
    ntok = sum(len(tokenizer(s, add_special_tokens=False)["input_ids"]) for s in sentences) / len(sentences)
    print(
        f"model {args.model}; {n} pairs ({source}), {ntok:.1f} tokens per sentence on average; "
        f"{args.threads} threads; batch size {args.batch_size} (largest run {scorer.batcher.largest_batch})"
    )
    print(f"batched scorer: {n / t_batched:8.1f} pairs/s ({t_batched:.2f} s)")
    print(f"naive loop:     {n / t_naive:8.1f} pairs/s ({t_naive:.2f} s)")
    print(f"ratio: {t_naive / t_batched:.2f}x (target >= 5x)")
    print(
        f"max |batched - naive| per sentence: {max(abs(a - b) for a, b in zip(batched, naive, strict=True)):.2e}"
    )


if __name__ == "__main__":
    main()
