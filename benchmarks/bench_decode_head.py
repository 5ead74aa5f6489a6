"""A decode step's LM head: the whole product (a fresh ``[rows, vocabulary]`` output each call, as the engine had it
before :mod:`unstereo.engine.kernels.decode_head`) against the head by vocabulary blocks into a kept buffer, fp32
(plain and packed blocks) and int8, on random weights of the models' head shapes. Prints ms and minor page faults
per call (best of ``--repeats``) and whether the blocks' logits equal the whole product's bit for bit.

    python benchmarks/bench_decode_head.py [--rows 32 --rows 100] [--threads 2] [--repeats 5] [--int8]
        [--shape 262144x640 ...]

Shapes (``VOCABULARYxHIDDEN``): Gemma-3-270M's head 262144 x 640, Qwen2.5-Coder-1.5B's 151936 x 1536, SmolLM2-135M's
49152 x 576.
"""

from __future__ import annotations

import argparse
import functools
import resource
import time
from collections.abc import Callable

import torch

from unstereo.engine.kernels.decode_head import DecodeHead
from unstereo.engine.kernels.int8 import Int8Linear
from unstereo.engine.kernels.lm_head import LMHead
from unstereo.engine.kernels.onednn import linear

SHAPES = ["262144x640", "151936x1536", "49152x576"]


def timed(fn: Callable[[], object], repeats: int) -> tuple[float, float]:
    """(best ms, minor page faults of that call) of ``fn`` after one warm-up call."""
    fn()
    best = (float("inf"), 0.0)
    for _ in range(repeats):
        faults = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        fn()
        spent = (time.perf_counter() - t0) * 1e3
        best = min(best, (spent, resource.getrusage(resource.RUSAGE_SELF).ru_minflt - faults))
    return best


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, action="append")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--int8", action="store_true", help="also the int8 head, whole and by blocks")
    ap.add_argument(
        "--shape", action="append", help="VOCABULARYxHIDDEN (repeatable; default the three models')"
    )
    args = ap.parse_args(argv)
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    print(f"{args.threads} thread(s), best of {args.repeats}; ms (minor page faults) per call")
    print("| head | rows | whole | plain blocks | packed blocks | int8 whole | int8 blocks | blocks equal |")
    print("|---|---|---|---|---|---|---|---|")
    for shape in args.shape or SHAPES:
        vocab, hidden = (int(v) for v in shape.split("x"))
        head = LMHead(torch.randn(vocab, hidden, generator=g) * 0.05)
        plain, packed = DecodeHead.build(head, packed=False), DecodeHead.build(head)
        int8 = (Int8Linear(head.weight), DecodeHead.build(head, int8=True)) if args.int8 else None
        for rows in args.rows or [32, 100]:
            x = torch.randn(rows, hidden, generator=g)
            out = torch.empty(rows, vocab)
            whole = linear(x, head.weight)
            calls = [
                functools.partial(linear, x, head.weight),
                functools.partial(plain, x, out),
                functools.partial(packed, x, out),
            ]
            equal = torch.equal(plain(x), whole) and torch.equal(packed(x), whole)
            if int8 is not None:
                calls += [functools.partial(int8[0], x), functools.partial(int8[1], x, out)]
                equal = equal and torch.equal(int8[1](x), int8[0](x))
            cells = [timed(call, args.repeats) for call in calls]
            text = " | ".join(f"{ms:.1f} ({faults:.0f})" for ms, faults in cells)
            if int8 is None:
                text += " | - | -"
            print(f"| {shape} | {rows} | {text} | {equal} |", flush=True)


if __name__ == "__main__":
    main()
