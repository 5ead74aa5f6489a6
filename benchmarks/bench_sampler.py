"""The row sampler alone (:class:`unstereo.engine.sampler.RowSampler`) on a model's real next-token logits: ms per
step of ``--rows`` rows for each strategy (``topk``, the CPU's; ``sort``, the GPU's, here on the CPU), and, with
``--base``, the ``sample_rows`` of another checkout's ``src`` (e.g. the one before the batched sampler) on the same
logits and uniforms, with the count of equal tokens.

    python benchmarks/bench_sampler.py [--model tiny | SPEC] [--rows 32] [--steps 24] [--top-p 0.9] [--top-p 1.0]
        [--repeats 7] [--threads 2] [--base OTHER_CHECKOUT/src]

The logits are those of ``generate(do_sample=True)``'s steps on ``bench_sample.py``'s distinct prompts. Also
times the uniforms: the stream of ``rows`` x ``steps`` (:func:`~unstereo.engine.sampler.stream`, what the engine
works out as rows take their slots) against one ``torch.rand`` per row and step from per-row generators (the
former way).
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import torch
from bench_sample import distinct_prompts, load_model

from unstereo.engine.sampler import sample_rows, stream


def step_logits(model, tok, rows: int, steps: int) -> list:
    """The logits of ``steps`` sampled steps of ``rows`` distinct prompts (fp32, [rows, vocabulary] each)."""
    tok.padding_side = "left"
    if tok.pad_token is None:
        tok.pad_token = tok.eos_token
    enc = tok(distinct_prompts(rows), return_tensors="pt", padding=True, return_token_type_ids=False)
    torch.manual_seed(0)
    with torch.inference_mode():
        out = model.generate(**enc, do_sample=True, top_p=0.9, top_k=0, max_new_tokens=steps, min_new_tokens=steps,
                             output_logits=True, return_dict_in_generate=True, pad_token_id=tok.pad_token_id)  # fmt: skip
    return [x.float() for x in out.logits]


def best_ms(fn, steps: list, repeats: int) -> float:
    """Fastest mean ms per step of ``fn(logits)`` over ``steps``, best of ``repeats`` passes."""
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        for logits in steps:
            fn(logits)
        best = min(best, (time.perf_counter() - t0) / len(steps))
    return best * 1e3


def load_base(src: str):
    """The ``unstereo.engine.sampler`` module of another checkout's ``src`` (loaded under another name)."""
    spec = importlib.util.spec_from_file_location("base_sampler", Path(src) / "unstereo/engine/sampler.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model", default="tiny", help="tiny, or any model spec (hub id, folder, .gguf, resource:...)"
    )
    ap.add_argument("--rows", type=int, default=32)
    ap.add_argument("--steps", type=int, default=24)
    ap.add_argument("--top-p", type=float, action="append", help="repeatable (default 0.9 and 1.0)")
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--base", help="another checkout's src: time its sample_rows on the same logits")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    model, tok = load_model(args.model)
    steps = step_logits(model, tok, args.rows, args.steps)
    base = load_base(args.base) if args.base else None
    print(f"model {args.model}; {args.rows} rows x {args.steps} steps, T = 1, {args.threads} thread(s), "
          f"best of {args.repeats}")  # fmt: skip
    print(
        "| top_p | topk ms/step | sort ms/step | base ms/step | tokens equal topk/sort/base |\n|---|---|---|---|---|"
    )
    temps = torch.ones(args.rows)
    u = stream(range(args.rows), 1)[:, 0]
    for top_p in args.top_p or [0.9, 1.0]:
        tops = torch.full((args.rows,), top_p)
        times, tokens = {}, {}
        fns = {s: (lambda x, s=s, p=tops: sample_rows(x, temps, p, u, strategy=s)) for s in ("topk", "sort")}
        if base is not None:
            fns["base"] = lambda x, p=tops: base.sample_rows(x, temps, p, u)
        for name, fn in fns.items():
            times[name] = best_ms(fn, steps, args.repeats)
            tokens[name] = torch.cat([fn(x) for x in steps])
        same = [int((tokens[n] == tokens["topk"]).sum()) for n in fns]
        print(f"| {top_p} | {times['topk']:.2f} | {times['sort']:.2f} | {times.get('base', float('nan')):.2f} | "
              f"{'/'.join(map(str, same))} of {tokens['topk'].numel()} |")  # fmt: skip
    gens = [torch.Generator().manual_seed(s) for s in range(args.rows)]
    t0 = time.perf_counter()
    for _ in range(args.steps):
        torch.cat([torch.rand(1, generator=g, dtype=torch.float64) for g in gens])
    former = (time.perf_counter() - t0) / args.steps * 1e3
    t0 = time.perf_counter()
    stream(range(args.rows), args.steps).tolist()
    now = (time.perf_counter() - t0) * 1e3
    print(f"uniforms: per-row generators {former:.3f} ms per step; the stream of {args.rows} x {args.steps} "
          f"{now:.2f} ms once ({now / args.steps:.3f} ms per step)")  # fmt: skip


if __name__ == "__main__":
    main()
