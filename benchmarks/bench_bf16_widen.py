"""One linear product of the 1.5B's shapes, fp32 input, each way a CPU without native bf16 can compute it (ms):

    python benchmarks/bench_bf16_widen.py --rows 16
    ONEDNN_MAX_CPU_ISA=AVX2 ATEN_CPU_CAPABILITY=avx2 MKL_ENABLE_INSTRUCTIONS=AVX2 python benchmarks/bench_bf16_widen.py

oneDNN fp32 (the engine's fp32 road), MKL fp32 (``F.linear``), the bf16 weight widened whole per product, and
:meth:`unstereo.engine.kernels.bf16.Bf16Linear.widened` with blocks of 256 KB, 1 MB and 4 MB (the default).
"""

from __future__ import annotations

import argparse
import time

import torch
import torch.nn.functional as F

from unstereo.engine.kernels import bf16
from unstereo.engine.kernels.onednn import linear as onednn_linear

SHAPES = [(8960, 1536), (1536, 8960), (1536, 1536)]  # gate/up, down, q/o of Qwen2.5-1.5B


def ms(f, repeats: int) -> float:
    f(), f()
    t = time.perf_counter()
    for _ in range(repeats):
        f()
    return (time.perf_counter() - t) / repeats * 1e3


def one_shape(out: int, inp: int, rows: int, repeats: int, g) -> dict[str, float]:
    """ms of each way, for a random ``out x inp`` weight and ``rows`` input rows."""
    w = torch.randn(out, inp, generator=g)
    x = torch.randn(rows, inp, generator=g)
    layer = bf16.Bf16Linear(w)
    wide = layer.weight.float()
    row = {
        "onednn fp32": ms(lambda: onednn_linear(x, w), repeats),
        "mkl fp32": ms(lambda: F.linear(x, w), repeats),
        "widened whole": ms(lambda: F.linear(x, layer.weight.float()), repeats),
    }
    for kb in (256, 1024, 4096):
        bf16.WIDEN_BLOCK_BYTES = kb << 10
        assert torch.allclose(layer.widened(x), F.linear(x, wide), rtol=1e-4, atol=1e-3)
        row[f"blocks {kb} KB"] = ms(lambda: layer.widened(x), repeats)
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    g = torch.Generator().manual_seed(0)
    for out, inp in SHAPES:
        row = one_shape(out, inp, args.rows, args.repeats, g)
        print(
            f"{out} x {inp}, {args.rows} rows: " + ", ".join(f"{k} {v:.2f}" for k, v in row.items()),
            flush=True,
        )


if __name__ == "__main__":
    main()
