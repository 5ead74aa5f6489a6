"""Where a decode step of the sampling engine spends its time, per op kind, on this machine.

    python benchmarks/profile_decode.py [--model resource:smollm2/SmolLM2-135M-Instruct.Q4_1.gguf]
        [--shape batch:32x64] [--shape n:100x128] [--threads 1] [--threads 2] [--top-p 0.9]

Runs bench_sample's rows through ``LocalBackend.continue_batch`` (the engine; slots = rows) once as a warm-up and
once timed, with wall-clock timers around: the body's linear layers (every oneDNN product but the head's), the LM
head (its products and the copies of its blocks into the step's logits), the decode attention products (:func:`unstereo.engine.decode_step.grouped_attention`), the sampling
(``SamplingEngine._sample``: the rows' uniforms and :func:`~unstereo.engine.sampler.sample_rows`) and the prompts'
prefill passes (its own products excluded). "other" is the rest of the ``generate`` call: norms, rotary embedding,
activations, cache writes, masks, module calls and the engine's Python (per-row bookkeeping, detokenising). Prints a
markdown table row per (shape, threads): ms per decode step and the share of each kind.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_sample import PROMPTS, distinct_prompts, parse_shape  # noqa: E402

from unstereo.engine import decode_step  # noqa: E402
from unstereo.engine.kernels import onednn  # noqa: E402
from unstereo.llm.local import LocalBackend  # noqa: E402
from unstereo.llm.types import ContinuationRequest  # noqa: E402

KINDS = ("linears", "LM head", "attention", "sampling", "prefill", "other")


class Timers:
    """Seconds per kind; ``stack`` keeps a timed call's own time out of the kind it runs inside."""

    def __init__(self):
        self.total: dict[str, float] = defaultdict(float)
        self.stack: list[list[float]] = []

    def wrap(self, kind, fn):
        def timed(*args, **kwargs):
            self.stack.append([0.0])
            t0 = time.perf_counter()
            try:
                return fn(*args, **kwargs)
            finally:
                spent = time.perf_counter() - t0
                inner = self.stack.pop()[0]
                k = kind(*args) if callable(kind) else kind
                self.total[k] += spent - inner
                if self.stack:
                    self.stack[-1][0] += spent

        return timed


def profile(
    model, tok, kind: str, rows: int, max_new: int, top_p: float
) -> tuple[dict[str, float], int, int]:
    """(seconds per kind, decode steps, generated tokens) of one timed run at a shape."""
    prompts = distinct_prompts(rows) if kind == "batch" else [PROMPTS[0]] * rows
    reqs = [
        ContinuationRequest(p, temperature=1.0, top_p=top_p, max_tokens=max_new, seed=i)
        for i, p in enumerate(prompts)
    ]
    backend = LocalBackend.from_loaded(model, tok, "profile", batch_size=rows)
    backend.continue_batch(reqs)  # warm-up (and the engine's probe)
    eng = backend._engine
    timers = Timers()
    head = eng.head.weight
    saved = (onednn.linear, decode_step.grouped_attention, type(eng)._sample, type(eng)._prefill)
    onednn.linear = timers.wrap(lambda x, w, *_: "LM head" if w is head else "linears", saved[0])
    decode_step.grouped_attention = timers.wrap("attention", saved[1])
    type(eng)._sample = timers.wrap("sampling", saved[2])
    type(eng)._prefill = timers.wrap("prefill", saved[3])
    saved_logits = type(eng)._logits  # the head by vocabulary blocks, copies into the logits buffer included
    type(eng)._logits = timers.wrap("LM head", saved_logits)
    try:
        t0 = time.perf_counter()
        out = backend.continue_batch(reqs)
        wall = time.perf_counter() - t0
    finally:
        onednn.linear, decode_step.grouped_attention, type(eng)._sample, type(eng)._prefill = saved
        type(eng)._logits = saved_logits
    spent = dict(timers.total)
    spent["other"] = wall - sum(spent.values())
    return spent | {"wall": wall}, eng.stats.steps, sum(r.completion_tokens for r in out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resource:smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--shape", action="append")
    ap.add_argument("--threads", type=int, action="append")
    ap.add_argument("--top-p", type=float, default=0.9)
    args = ap.parse_args()
    from unstereo.models.load import load_causal_lm

    model, tok = load_causal_lm(args.model, dtype="float32", device="cpu")
    label = args.model.split("/")[-1]
    print(f"| model | shape | threads | tokens/s | ms/step | {' | '.join(KINDS)} |")
    print("|---|---|---|---|---|" + "---|" * len(KINDS))
    for threads in args.threads or [1, 2]:
        torch.set_num_threads(threads)
        for kind, rows, max_new in (parse_shape(s) for s in args.shape or ["batch:32x64", "n:100x128"]):
            spent, steps, tokens = profile(model, tok, kind, rows, max_new, args.top_p)
            per_step = spent["wall"] / steps * 1e3
            cells = " | ".join(
                f"{spent.get(k, 0.0) / steps * 1e3:.1f} ({spent.get(k, 0.0) / spent['wall']:.0%})"
                for k in KINDS
            )
            shape = f"{rows} prompts x {max_new}" if kind == "batch" else f"n={rows} x {max_new}"
            print(f"| {label} | {shape} | {threads} | {tokens / spent['wall']:.1f} | {per_step:.1f} | {cells} |",
                  flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
