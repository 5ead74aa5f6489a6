"""oneDNN's fp32 product at decode shapes with weights streamed from memory, as a decode step meets them: each
product's weight is one of ``--layers`` distinct tensors used in turn (more bytes than the caches hold), so every
call reads its weight from memory. Prints ms, GFLOP/s and GB/s of weights per (rows, shape), and a plain copy's
bandwidth for scale.

    python benchmarks/bench_decode_products.py [--rows 1 --rows 32 --rows 100] [--threads 2]

Shapes: SmolLM2-135M's MLP (1536 x 576, 576 x 1536) and Qwen2.5-Coder-1.5B's (8960 x 1536, 1536 x 8960), as
``[out, in]`` the way ``nn.Linear`` holds them.
"""

from __future__ import annotations

import argparse
import time

import torch

from unstereo.engine.kernels.onednn import linear

SHAPES = [(1536, 576), (576, 1536), (8960, 1536), (1536, 8960)]


def streamed(rows: int, out: int, inp: int, layers: int, repeats: int = 5) -> float:
    """Seconds per product of ``[rows, inp]`` by ``layers`` distinct ``[out, inp]`` weights taken in turn."""
    weights = [torch.randn(out, inp) for _ in range(layers)]
    x = torch.randn(rows, inp)
    for w in weights:  # warm-up: oneDNN's primitive for the shape
        linear(x, w)
    t0 = time.perf_counter()
    for _ in range(repeats):
        for w in weights:
            linear(x, w)
    return (time.perf_counter() - t0) / (repeats * layers)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, action="append")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument(
        "--bytes", type=float, default=160e6, help="weights in flight per shape (beyond the caches)"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    print("| rows | weight [out, in] | ms | GFLOP/s | GB/s of weights |")
    print("|---|---|---|---|---|")
    for rows in args.rows or [1, 32, 100]:
        for out, inp in SHAPES:
            layers = max(4, int(args.bytes // (out * inp * 4)))
            sec = streamed(rows, out, inp, layers)
            print(f"| {rows} | {out} x {inp} | {sec * 1e3:.3f} | {2 * rows * out * inp / sec / 1e9:.0f} | "
                  f"{out * inp * 4 / sec / 1e9:.1f} |", flush=True)  # fmt: skip
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
