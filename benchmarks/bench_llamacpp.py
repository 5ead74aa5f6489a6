"""Generated tokens per second of llama.cpp's batched decoding (``llama-batched-bench``) at bench_sample.py's shapes
on a GGUF file: the anchor for the sampling engine. llama.cpp is not a project dependency; build it
yourself (docs/performance.md has the commands) and pass the folder of its binaries.

    python benchmarks/bench_llamacpp.py --llama-bin BUILD/bin --model FILE.gguf [--shape batch:32x64]
        [--shape n:100x128] [--threads 1] [--repeats 2] [--batch-prompt-tokens 8] [--shared-prompt-tokens 5]
        [--cache-type f32]

Shapes as bench_sample.py: ``batch:PxT`` is P sequences, each with its own prompt of ``--batch-prompt-tokens``
tokens, T new tokens each, all P in every decode step; ``n:NxT`` is one prompt of ``--shared-prompt-tokens``
tokens prefilled once and copied to N sequences (``-pps``), T new tokens each. The defaults are bench_sample's
prompts in SmolLM2's and Gemma-3's tokenizers, BOS included: its 32 distinct prompts average 8 tokens (2 to 12), its
shared prompt is 5. llama-batched-bench feeds random tokens and samples nothing (no softmax, no top-p, no
detokenising); it computes every row's logits at every step, and every row runs to T tokens. Columns: S_TG, its
rows x T / decode time (prefill not counted), and rows x T / (prefill + decode time), the closer analogue of
bench_sample's figure (which also holds sampling). Best of ``--repeats`` runs, all in one process.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
from pathlib import Path

BINARY = "llama-batched-bench"
# bench_sample.py's prompts in SmolLM2's and Gemma-3's tokenizers, BOS included (see the docstring)
BATCH_PROMPT_TOKENS = 8
SHARED_PROMPT_TOKENS = 5
COLUMNS = ("pp", "tg", "pl", "n_kv", "t_pp", "speed_pp", "t_tg", "speed_tg", "t", "speed")


def parse_shape(text: str) -> tuple[str, int, int]:
    """``batch:32x64`` -> ("batch", 32, 64); ``n:100x128`` -> ("n", 100, 128). The grammar of bench_sample.py's
    ``parse_shape`` (not imported: that module imports torch, this one needs only the standard library)."""
    kind, _, size = text.partition(":")
    rows, _, tokens = size.partition("x")
    if (
        kind not in ("batch", "n")
        or not rows.isdigit()
        or not tokens.isdigit()
        or 0 in (int(rows), int(tokens))
    ):
        raise SystemExit(f"--shape {text!r}: expected batch:PROMPTSxTOKENS or n:SAMPLESxTOKENS")
    return kind, int(rows), int(tokens)


def shape_label(kind: str, rows: int, max_new: int) -> str:
    """The shape as bench_sample.py prints it."""
    return f"{rows} prompts x {max_new}" if kind == "batch" else f"n={rows} of 1 prompt x {max_new}"


def bench_args(
    model: str,
    kind: str,
    rows: int,
    max_new: int,
    threads: int,
    prompt_tokens: int,
    repeats: int,
    cache_type: str | None = None,
) -> list[str]:
    """llama-batched-bench's arguments for one shape. The context holds every row's prompt and new tokens (a
    shared prompt, ``-pps``, is copied into each row's cache, so it counts once per row too); ``-npl`` repeated
    runs the shape ``repeats`` times in one process; ``-lv 4`` logs the loader's info (the file type) but none of
    the debug lines (graph-building ones, which could land inside the timed loop). (llama.cpp raises a smaller context to 256
    cells per row.) ``cache_type`` (``f32``, ``f16``, ...): the KV cache's keys and values in that type, else
    llama.cpp's default (F16)."""
    args = ["-m", model, "-t", str(threads), "-c", str(rows * (prompt_tokens + max_new)), "-lv", "4"]
    if cache_type:
        args += ["-ctk", cache_type, "-ctv", cache_type]
    args += ["-npp", str(prompt_tokens), "-ntg", str(max_new), "-npl", ",".join([str(rows)] * repeats)]
    return [*args, "-pps"] if kind == "n" else args


def parse_output(text: str) -> list[dict[str, float]]:
    """The result rows of llama-batched-bench's output: its markdown table (``| PP | TG | B | N_KV | T_PP s |
    S_PP t/s | T_TG s | S_TG t/s | T s | S t/s |``) or its ``--output-format jsonl`` lines, as dicts keyed by
    :data:`COLUMNS`. Other lines (loader log, header, separator) are skipped."""
    rows = []
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{") and '"speed_tg"' in line:
            record = json.loads(line)
            rows.append({k: float(record[k]) for k in COLUMNS})
        elif line.startswith("|"):
            cells = [c.strip() for c in line.strip("|").split("|")]
            if len(cells) == len(COLUMNS) and all(re.fullmatch(r"\d+(\.\d+)?", c) for c in cells):
                rows.append(dict(zip(COLUMNS, map(float, cells), strict=True)))
    return rows


def file_type(text: str) -> str:
    """The weights' type from llama.cpp's loader log (``print_info: file type   = Q4_1``), or "?"; with
    ``+FA`` when the log says flash attention was enabled (llama.cpp's default, ``auto``, decides per model)."""
    match = re.search(r"file type\s*=\s*(.+?)\s*$", text, re.MULTILINE)
    kind = match.group(1) if match else "?"
    return kind + ("+FA" if "Flash Attention enabled" in text else "")


def binary(bin_dir: str) -> Path:
    """``bin_dir``/llama-batched-bench, or exit with one line saying it is missing."""
    path = Path(bin_dir) / BINARY
    if not path.is_file():
        raise SystemExit(
            f"bench_llamacpp: no {BINARY} in {bin_dir!r} (build llama.cpp, see docs/performance.md)"
        )
    return path


def run_shape(exe: Path, args: list[str]) -> tuple[dict[str, float], str]:
    """(fastest decode row, weights type) of one llama-batched-bench run."""
    # a benchmark run takes minutes at these shapes; an hour means a hung binary
    proc = subprocess.run([str(exe), *args], capture_output=True, text=True, check=False, timeout=3600)
    text = proc.stdout + proc.stderr
    rows = parse_output(text)
    if proc.returncode != 0 or not rows:
        tail = " | ".join(text.strip().splitlines()[-3:])
        raise SystemExit(
            f"bench_llamacpp: {exe} {' '.join(args)} gave no result (exit {proc.returncode}): {tail}"
        )
    return max(rows, key=lambda r: r["speed_tg"]), file_type(text)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--llama-bin", required=True, help="folder holding llama-batched-bench (BUILD/bin)")
    ap.add_argument("--model", required=True, help="a GGUF file")
    ap.add_argument(
        "--shape", action="append", help="batch:PxT or n:NxT (repeatable; default both paper shapes)"
    )
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--batch-prompt-tokens", type=int, default=BATCH_PROMPT_TOKENS)
    ap.add_argument("--shared-prompt-tokens", type=int, default=SHARED_PROMPT_TOKENS)
    ap.add_argument(
        "--cache-type",
        help="the KV cache's type (f32: as the engine keeps it; default llama.cpp's own, f16)",
    )
    args = ap.parse_args(argv)
    shapes = [parse_shape(s) for s in (args.shape or ["batch:32x64", "n:100x128"])]
    exe = binary(args.llama_bin)
    if not Path(args.model).is_file():
        raise SystemExit(f"bench_llamacpp: no GGUF file {args.model!r}")

    print(f"llama.cpp {exe}; {args.threads} thread(s), best of {args.repeats}; random tokens, no sampling")
    print("| model | weights | shape | threads | prompt tokens | llama.cpp S_TG tokens/s | new tokens / (prefill + decode) s |")  # fmt: skip
    print("|---|---|---|---|---|---|---|")
    for kind, rows, max_new in shapes:
        pp = args.batch_prompt_tokens if kind == "batch" else args.shared_prompt_tokens
        best, weights = run_shape(
            exe, bench_args(args.model, kind, rows, max_new, args.threads, pp, args.repeats, args.cache_type)
        )
        if args.cache_type:
            weights += f", KV {args.cache_type}"
        overall = best["pl"] * best["tg"] / (best["t_pp"] + best["t_tg"])
        print(f"| {Path(args.model).name} | {weights} | {shape_label(kind, rows, max_new)} | {args.threads} | "
              f"{pp} | {best['speed_tg']:.1f} | {overall:.1f} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    sys.exit(main())
