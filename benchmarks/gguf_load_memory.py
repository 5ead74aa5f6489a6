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

The direct forms (int8, bf16, bf16-widened, fp32-direct) are cached on the machine after their first load
(:mod:`unstereo.models.form_cache`): ``form_cache`` in the output says whether this load read the cached form
(``hit``), read the GGUF and wrote it (``miss``) or ran without the cache (``off``, ``--no-cache``: the road before
the cache). Cold and warm loads of a form in a fresh cache, each in its own process:

    export UNSTEREO_CACHE_DIR=$(mktemp -d)
    python benchmarks/gguf_load_memory.py --form bf16    # cold: form_cache miss
    python benchmarks/gguf_load_memory.py --form bf16    # warm: form_cache hit, the same answer
    python benchmarks/gguf_load_memory.py --form bf16 --no-cache
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import resource
import time
from pathlib import Path

import torch

#: The forms loaded straight from the GGUF file: the form of :func:`unstereo.models.gguf_direct.load_gguf`.
DIRECT = {"int8": "int8", "bf16": "bfloat16", "bf16-widened": "bfloat16", "fp32-direct": "float32"}
PROMPT = "Write 3 short English sentences, each using the word 'border' and the pronoun 'she'. One per line."


def load(form: str, spec):
    """(model, tokenizer, engine products) of ``form``."""
    if form in DIRECT:
        from unstereo.models.gguf_direct import load_gguf_with_tokenizer

        return (*load_gguf_with_tokenizer(spec.path, spec.gguf_file, DIRECT[form]), DIRECT[form])
    from unstereo.models.load import load_causal_lm

    model, tok = load_causal_lm(spec)
    return model, tok, "int8" if form == "fp32+int8" else "float32"


def cache_state(form: str, spec) -> str:
    """``hit`` where the form (and tokenizer) of a direct load is cached, ``miss`` where the load will write it,
    ``off`` without the cache or for the converted folder."""
    from unstereo.models import form_cache

    if form not in DIRECT or not form_cache.enabled():
        return "off"
    file = Path(spec.path) / spec.gguf_file
    folders = (form_cache.form_folder(file, DIRECT[form]), form_cache.tokenizer_folder(file))
    return "hit" if all(f is not None and f.exists() for f in folders) else "miss"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default="resource:qwen-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf")
    parser.add_argument(
        "--form", choices=["fp32", "fp32+int8", "int8", "bf16", "bf16-widened", "fp32-direct"], required=True
    )
    parser.add_argument("--tokens", type=int, default=24)
    parser.add_argument("--rows", type=int, default=0)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--no-cache", action="store_true", help="load without the cache of direct forms")
    args = parser.parse_args()
    if args.no_cache:
        from unstereo.models import form_cache

        os.environ[form_cache.ENV] = "0"
    torch.set_num_threads(args.threads)
    if args.form == "bf16-widened":
        # as on a CPU without native bf16 products (run it under AVX2 emulation too)
        from unstereo.engine.kernels import bf16

        bf16.native = lambda: False
    from unstereo.engine.engine import EngineRequest, SamplingEngine
    from unstereo.models.spec import resolve_model

    spec = resolve_model(args.model)
    cache = cache_state(args.form, spec)
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
    check = {
        "form_cache": cache,
        "prompt_ids_sha": hashlib.sha256(json.dumps(list(ids)).encode()).hexdigest()[:12],
        "config_sha": hashlib.sha256(model.config.to_json_string(use_diff=False).encode()).hexdigest()[:12],
        "answer_tokens_sha": hashlib.sha256(json.dumps(list(out.tokens)).encode()).hexdigest()[:12],
        "probe_key": engine.probe_key()[:12],  # the probe memo's digest: the same cold and warm
    }
    print(json.dumps({**rows, **check, "form": args.form, "engine_products": products, "probe": problem or "passed",
                      "load_s": round(loaded, 1), "peak_rss_after_load_gb": round(rss_loaded, 2),
                      "sample_s": round(sampled, 1), "answer": tok.decode(out.tokens, skip_special_tokens=True),
                      "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
                      "threads": args.threads}))  # fmt: skip


if __name__ == "__main__":
    main()
