"""A GGUF file's conversion to a Hugging Face folder (`unstereo.models.gguf_convert.dequantise`) with the file parsed
once for transformers' config, tokenizer and weights, against the baseline that lets transformers parse it at every
call, in the same process, alternating; and whether both write the same folder (tokenizer.json and every tensor).

    python benchmarks/bench_gguf_convert.py --model data/external/gemma3/gemma-3-270m-q4_k_m.gguf --rounds 2

Prints one line per conversion (seconds, parses) and the medians' ratio per model.
"""

from __future__ import annotations

import argparse
import contextlib
import statistics
import tempfile
import time
from pathlib import Path


def convert(gguf_path: Path, out: Path, once: bool) -> tuple[float, int]:
    """(seconds, parses) of one conversion of ``gguf_path`` into ``out``."""
    import gguf

    import unstereo.models.gguf_direct as gguf_direct
    from unstereo.models.gguf_convert import dequantise

    original_reader, original_block = gguf.GGUFReader, gguf_direct.one_reader
    parses = []

    def counted(path, mode="r"):
        parses.append(path)
        return original_reader(path, mode)

    gguf.GGUFReader = counted
    if not once:
        gguf_direct.one_reader = contextlib.nullcontext  # the baseline: every call parses the file
    try:
        start = time.perf_counter()
        dequantise(gguf_path.parent, gguf_path.name, out)
        return time.perf_counter() - start, len(parses)
    finally:
        gguf.GGUFReader, gguf_direct.one_reader = original_reader, original_block


def same_folder(a: Path, b: Path) -> bool:
    """Whether two conversions hold the same tokenizer and the same tensors."""
    from safetensors.torch import load_file

    if (a / "tokenizer.json").read_bytes() != (b / "tokenizer.json").read_bytes():
        return False
    ta, tb = load_file(str(a / "model.safetensors")), load_file(str(b / "model.safetensors"))
    return ta.keys() == tb.keys() and all(ta[k].equal(tb[k]) for k in ta)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", action="append", required=True, type=Path, help="a GGUF file (repeatable)")
    parser.add_argument(
        "--rounds", type=int, default=2, help="conversions of each kind per model (alternating)"
    )
    args = parser.parse_args(argv)
    for model in args.model:
        times: dict[bool, list[float]] = {False: [], True: []}
        with tempfile.TemporaryDirectory() as tmp:
            for r in range(args.rounds):
                for once in (False, True):
                    out = Path(tmp) / f"{'once' if once else 'baseline'}-{r}"
                    seconds, parses = convert(model, out, once)
                    times[once].append(seconds)
                    print(f"{model.name} {'one parse' if once else 'baseline'} round {r + 1}: {seconds:.1f} s, "
                          f"{parses} parse(s)")  # fmt: skip
            equal = same_folder(Path(tmp) / "baseline-0", Path(tmp) / "once-0")
        base, once_s = statistics.median(times[False]), statistics.median(times[True])
        print(
            f"{model.name}: median {base:.1f} s -> {once_s:.1f} s ({base / once_s:.2f}x); same folder: {equal}"
        )


if __name__ == "__main__":
    main()
