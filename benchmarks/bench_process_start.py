"""Whole-process sampling: ``unstereo llm continue`` against a plain transformers script doing the same sampling on
the same converted folder, each in its own process (imports, model load, the engine's probe, sampling, writing).

    python benchmarks/bench_process_start.py [--model resource:smollm2/SmolLM2-135M-Instruct.Q4_1.gguf]
        [--prompts 8] [--n 16] [--max-new-tokens 64] [--threads 2] [--batch-size auto [--batch-size 16 ...]]
        [--rounds 1] [--no-plain] [--fresh-probe]

Workload: ``--prompts`` prompts (bench_sample's), ``--n`` samples each, ``--max-new-tokens`` new tokens, top_p 0.9,
T = 1. The plain script loads the GGUF's converted Hugging Face folder with ``AutoModelForCausalLM`` and calls
``generate(do_sample=True, top_p=0.9, top_k=0, num_return_sequences=n)`` once per prompt (n rows at a time); the CLI
runs once per ``--batch-size`` given (its engine's slots; default the CLI's own, ``auto``). Prints per side: wall
seconds, seconds to the first token (plain: the first call of its logits processor; CLI: the engine's ready line in
its log, the first token follows within one prefill), peak RSS, generated tokens, and the whole-process ratio of
each CLI run to the plain script (``--no-plain``: the CLI only). With ``--rounds`` > 1 the sides take turns and each
keeps its fastest run. The CLI skips the engine's probe where it passed before on this machine (a verdict in the
conversion cache, :mod:`unstereo.engine.kernels.probe_memo`); ``--fresh-probe`` forgets every remembered verdict before
each CLI run, so every run probes.
"""

from __future__ import annotations

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))


def plain_worker(args: argparse.Namespace) -> None:
    """The plain transformers script (child process): sample, write the continuations and timings as JSON."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, LogitsProcessor, LogitsProcessorList

    torch.set_num_threads(args.threads)
    folder = args.folder
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    tok = AutoTokenizer.from_pretrained(folder)
    first: list[float] = []

    class FirstToken(LogitsProcessor):
        def __call__(self, input_ids, scores):
            if not first:
                first.append(time.time())
            return scores

    rows, tokens = [], 0
    for i, prompt in enumerate(prompts(args.prompts)):
        torch.manual_seed(i)
        enc = tok(prompt, return_tensors="pt")
        with torch.no_grad():
            out = model.generate(
                **enc, do_sample=True, top_p=0.9, top_k=0, max_new_tokens=args.max_new_tokens,
                num_return_sequences=args.n, pad_token_id=tok.eos_token_id,
                logits_processor=LogitsProcessorList([FirstToken()]),
            )  # fmt: skip
        new = out[:, enc["input_ids"].shape[1] :]
        for j, row in enumerate(new.tolist()):
            ids = [t for t in row if t != tok.eos_token_id]
            tokens += len(ids)
            rows.append((f"p{i}", j, tok.decode(ids, skip_special_tokens=True)))
    with open(args.out, "w", newline="") as f:
        csv.writer(f).writerows(rows)
    Path(args.out + ".json").write_text(json.dumps({"first_token": first[0], "tokens": tokens}))


def prompts(n: int) -> list[str]:
    from bench_sample import distinct_prompts

    return distinct_prompts(n)


def timed(cmd: list[str], threads: int) -> dict:
    """Wall seconds, peak RSS (``/usr/bin/time -v`` when present) and stderr of a child process."""
    prefix = ["/usr/bin/time", "-v"] if Path("/usr/bin/time").exists() else []
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "TOKENIZERS_PARALLELISM": "false"}
    t0, wall0 = time.time(), time.perf_counter()
    proc = subprocess.Popen(
        prefix + cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )
    _, err = proc.communicate()
    wall = time.perf_counter() - wall0
    if proc.returncode:
        raise SystemExit(f"{cmd[:5]} failed:\n{err[-3000:]}")
    rss = re.search(r"Maximum resident set size \(kbytes\): (\d+)", err)
    return {
        "wall_s": wall,
        "rss_mib": int(rss.group(1)) / 1024 if rss else float("nan"),
        "stderr": err,
        "t0": t0,
    }


def cli_side(args: argparse.Namespace, tmp: Path, prompts_csv: Path, batch_size: str) -> dict:
    out = tmp / "cli.parquet"
    cmd = [sys.executable, "-m", "unstereo.cli", "llm", "continue", args.model, str(prompts_csv), "-o", str(out),
           "-n", str(args.n), "--top-p", "0.9", "--max-new-tokens", str(args.max_new_tokens),
           "--batch-size", batch_size, "--device", "cpu"]  # fmt: skip
    if args.external_dir:
        cmd += ["--external-dir", args.external_dir]
    if args.fresh_probe:
        from unstereo.io import cache_root

        for stamp in (cache_root() / "probes").glob("*/*.json"):
            stamp.unlink()
    r = timed(cmd, args.threads)
    import pandas as pd

    table = pd.read_parquet(out)
    tokens = int(table["tokens"].sum())
    keys = zip(table["prompt_id"], table["sample"], strict=True)
    texts = dict(zip(keys, table["continuation"], strict=True))
    ready = re.search(r"^(\S+ \S+) INFO unstereo.llm.local: sampling engine for", r["stderr"], re.M)
    first = None
    if ready:
        stamp = datetime.strptime(ready.group(1), "%Y-%m-%d %H:%M:%S,%f").timestamp()
        first = stamp - r["t0"]
    for p in tmp.glob("cli.parquet*"):
        if p.is_dir():
            import shutil

            shutil.rmtree(p)
        else:
            p.unlink()
    return {**r, "tokens": tokens, "first_s": first, "texts": texts}


def plain_side(args: argparse.Namespace, tmp: Path, folder: Path) -> dict:
    out = tmp / "plain.csv"
    cmd = [sys.executable, __file__, "--worker", "--folder", str(folder), "--out", str(out),
           "--prompts", str(args.prompts), "--n", str(args.n), "--max-new-tokens", str(args.max_new_tokens),
           "--threads", str(args.threads)]  # fmt: skip
    r = timed(cmd, args.threads)
    info = json.loads(Path(str(out) + ".json").read_text())
    return {**r, "tokens": info["tokens"], "first_s": info["first_token"] - r["t0"]}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default="resource:smollm2/SmolLM2-135M-Instruct.Q4_1.gguf")
    ap.add_argument("--external-dir", default=None)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--n", type=int, default=16)
    ap.add_argument("--max-new-tokens", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", action="append", default=None,
                    help="the CLI's --batch-size (engine slots; repeatable; default: auto)")  # fmt: skip
    ap.add_argument("--rounds", type=int, default=1)
    ap.add_argument("--no-plain", action="store_true", help="run the CLI only")
    ap.add_argument("--fresh-probe", action="store_true",
                    help="forget passed engine probes before each CLI run")  # fmt: skip
    ap.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        plain_worker(args)
        return

    from unstereo.models.load import convert_gguf
    from unstereo.models.spec import resolve_model

    if args.external_dir:
        os.environ["UNSTEREO_EXTERNAL_DIR"] = args.external_dir
    spec = resolve_model(args.model)
    folder = convert_gguf(spec) if spec.gguf_file else Path(spec.path)
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        prompts_csv = tmp / "prompts.csv"
        with open(prompts_csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["prompt_id", "prompt"])
            w.writerows((f"p{i}", p) for i, p in enumerate(prompts(args.prompts)))
        best: dict[str, dict] = {}
        sides = [] if args.no_plain else [("plain transformers", lambda: plain_side(args, tmp, folder))]
        for size in args.batch_size or ["auto"]:
            sides.append((f"unstereo llm continue --batch-size {size}",
                          lambda size=size: cli_side(args, tmp, prompts_csv, size)))  # fmt: skip
        for _ in range(args.rounds):
            for name, fn in sides:
                r = fn()
                print(f"  {name}: {r['wall_s']:.1f} s", file=sys.stderr, flush=True)
                if name not in best or r["wall_s"] < best[name]["wall_s"]:
                    best[name] = r
    print(f"{args.model}: {args.prompts} prompts x {args.n} samples x {args.max_new_tokens} tokens, top_p 0.9, "
          f"{args.threads} thread(s), best of {args.rounds}{', fresh probe' if args.fresh_probe else ''}")  # fmt: skip
    print("| side | wall s | first token s | peak RSS MiB | tokens | tokens/s (whole process) | ratio |")
    print("|---|---|---|---|---|---|---|")
    plain = best.get("plain transformers")
    for name, r in best.items():
        first = f"{r['first_s']:.2f}" if r["first_s"] is not None else "-"
        rate = r["tokens"] / r["wall_s"]
        ratio = f"{rate / (plain['tokens'] / plain['wall_s']):.2f}x" if plain and r is not plain else "-"
        print(f"| {name} | {r['wall_s']:.1f} | {first} | {r['rss_mib']:.0f} | {r['tokens']} | {rate:.1f} | "
              f"{ratio} |")  # fmt: skip
    if plain:
        print("ratio: whole-process tokens/s of the CLI run over the plain script's")
    runs = [r["texts"] for r in best.values() if "texts" in r]
    if len(runs) > 1:  # a row's text should not depend on the slots it was sampled in (same seed)
        differ = sum(any(run[key] != runs[0][key] for run in runs[1:]) for key in runs[0])
        print(f"continuations that differ between the CLI's batch sizes: {differ} of {len(runs[0])}")


if __name__ == "__main__":
    main()
