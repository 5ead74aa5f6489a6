"""Time and peak memory of each way to get a GGUF model ready to sample, one form per process (peak RSS is the
process's high-water mark, so run each form in its own process):

    python benchmarks/gguf_load_memory.py --form fp32          # the converted fp32 folder (converted first if absent)
    python benchmarks/gguf_load_memory.py --form fp32+int8     # the same, plus the engine's int8 copy (the int8 opt-in before the direct load)
    python benchmarks/gguf_load_memory.py --form int8          # straight from the GGUF (unstereo.models.gguf_direct)
    python benchmarks/gguf_load_memory.py --form bf16          # straight from the GGUF, body linears in bf16
    python benchmarks/gguf_load_memory.py --form bf16-widened  # the same, widened to fp32 per product (a CPU without native bf16)
    python benchmarks/gguf_load_memory.py --form fp32-direct   # straight from the GGUF, every weight fp32

Each loads ``--model`` (default: the offline 1.5B), runs the sampling engine's probe and one short greedy chat
answer with the form's products (``--tokens``), and prints one JSON line: load seconds, sample seconds, the answer
and the peak RSS in GB (``ru_maxrss``). ``--rows N`` then also samples N rows of ``--tokens`` tokens each (T = 0.7,
the engine's slots = N) and adds their tokens per second.
"""

from __future__ import annotations

import argparse
import json
import resource
import time

import torch

PROMPT = "Write 3 short English sentences, each using the word 'border' and the pronoun 'she'. One per line."


def load(form: str, spec):
    """(model, tokenizer, engine products) of ``form``."""
    direct = {"int8": "int8", "bf16": "bfloat16", "bf16-widened": "bfloat16", "fp32-direct": "float32"}
    if form in direct:
        from unstereo.models.gguf_direct import load_gguf_with_tokenizer

        return (*load_gguf_with_tokenizer(spec.path, spec.gguf_file, direct[form]), direct[form])
    from unstereo.models.load import load_causal_lm

    model, tok = load_causal_lm(spec)
    return model, tok, "int8" if form == "fp32+int8" else "float32"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resource:qwen-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    parser.add_argument(
        "--form", choices=["fp32", "fp32+int8", "int8", "bf16", "bf16-widened", "fp32-direct"], required=True
    )
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    torch.set_num_threads(args.threads)
    if args.form == "bf16-widened":
        # as on a CPU without native bf16 products (run it under AVX2 emulation too)
        from unstereo.engine.kernels import bf16

        bf16.native = lambda: False
    from unstereo.engine.engine import EngineRequest, SamplingEngine
    from unstereo.models.spec import resolve_model

    spec = resolve_model(args.model)
    t0 = time.time()
    model, tok, products = load(args.form, spec)
    loaded = time.time() - t0
    rss_loaded = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
    engine = SamplingEngine(model, tok, slots=4, products=products)
    problem = engine.check()
    ids = tok.apply_chat_template(
        [{"role": "user", "content": PROMPT}], add_generation_prompt=True, tokenize=True
    )
    t0 = time.time()
    out = engine.generate([EngineRequest(list(ids), max_tokens=args.tokens, temperature=0.0)])[0]
    sampled = time.time() - t0
    rows = {}
    if args.rows:
        engine.slots = args.rows
        reqs = [
            EngineRequest(list(ids), max_tokens=args.tokens, temperature=0.7, seed=i)
            for i in range(args.rows)
        ]
        t0 = time.time()
        outs = engine.generate(reqs)
        spent = time.time() - t0
        rows = {"rows": args.rows, "rows_s": round(spent, 1),
                "rows_tokens_per_s": round(sum(len(o.tokens) for o in outs) / spent, 1)}  # fmt: skip
    print(json.dumps({**rows, "form": args.form, "engine_products": products, "probe": problem or "passed",
                      "load_s": round(loaded, 1), "peak_rss_after_load_gb": round(rss_loaded, 2),
                      "sample_s": round(sampled, 1), "answer": tok.decode(out.tokens, skip_special_tokens=True),
                      "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
                      "threads": args.threads}))  # fmt: skip


if __name__ == "__main__":
    main()
