"""oneDNN's fp32 product at decode shapes with weights streamed from memory, as a decode step meets them: each
product's weight is one of ``--layers`` distinct tensors used in turn (more bytes than the caches hold), so every
call reads its weight from memory. Prints ms, GFLOP/s and GB/s of weights per (rows, shape), and a plain copy's
bandwidth for scale. ``--packed``: beside each plain product, the same weights pre-packed once into oneDNN's
blocked layout (``torch.ops.mkldnn._reorder_linear_weight``), and whether the two products are bitwise equal.

    python benchmarks/bench_decode_products.py [--rows 1 --rows 32 --rows 100] [--threads 2] [--packed]

Shapes: SmolLM2-135M's MLP (1536 x 576, 576 x 1536) and Qwen2.5-Coder-1.5B's (8960 x 1536, 1536 x 8960), as
``[out, in]`` the way ``nn.Linear`` holds them.
"""

from __future__ import annotations

import argparse
import time

import torch

from unstereo.engine.kernels.onednn import linear

SHAPES = [(1536, 576), (576, 1536), (8960, 1536), (1536, 8960)]


def streamed(x: torch.Tensor, weights: list[torch.Tensor], repeats: int = 5) -> float:
    """Seconds per product of ``x`` by the distinct ``weights`` taken in turn."""
    for w in weights:  # warm-up: oneDNN's primitive for the shape
        linear(x, w)
    t0 = time.perf_counter()
    for _ in range(repeats):
        for w in weights:
            linear(x, w)
    return (time.perf_counter() - t0) / (repeats * len(weights))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, action="append")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--bytes", type=float, default=160e6, help="weights in flight per shape (beyond the caches)"
    )
    ap.add_argument(
        "--packed", action="store_true", help="also the weights pre-packed once (oneDNN's layout)"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    extra = " packed ms | packed GFLOP/s | equal |" if args.packed else ""
    print("| rows | weight [out, in] | ms | GFLOP/s | GB/s of weights |" + extra)
    print("|---|---|---|---|---|" + "---|---|---|" * args.packed)
    for rows in args.rows or [1, 32, 100]:
        for out, inp in SHAPES:
            weights = [torch.randn(out, inp) for _ in range(max(4, int(args.bytes // (out * inp * 4))))]
            x = torch.randn(rows, inp)
            sec = streamed(x, weights)
            flop = 2 * rows * out * inp
            line = f"| {rows} | {out} x {inp} | {sec * 1e3:.3f} | {flop / sec / 1e9:.0f} | {out * inp * 4 / sec / 1e9:.1f} |"
            if args.packed:
                packed = [torch.ops.mkldnn._reorder_linear_weight(w, rows) for w in weights]
                equal = all(
                    torch.equal(linear(x, w), linear(x, p)) for w, p in zip(weights, packed, strict=True)
                )
                psec = streamed(x, packed)
                del packed
                line += f" {psec * 1e3:.3f} | {flop / psec / 1e9:.0f} | {equal} |"
            print(line, flush=True)
    a = torch.empty(1 << 26)
    b = torch.empty_like(a)
    b.copy_(a)
    t0 = time.perf_counter()
    for _ in range(5):
        b.copy_(a)
    print(
        f"copy of 256 MiB: {2 * a.numel() * 4 * 5 / (time.perf_counter() - t0) / 1e9:.1f} GB/s read + write"
    )


if __name__ == "__main__":
    main()
