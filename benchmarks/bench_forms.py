"""Every sampling form of the default's models on the running machine, as one table: the products' seconds a step
that :mod:`unstereo.engine.forms` estimates from a few of the model's layers (what the choice is made on), the
engine's real tokens per second with the model loaded in that form, the peak memory of that process, and the form
:func:`unstereo.engine.forms.choose` picks under the default config's budget.

    python benchmarks/bench_forms.py                      # the generator (the 1.5B) and SmolLM2, every form
    python benchmarks/bench_forms.py --models smollm2 --rows 16 --tokens 32
    python benchmarks/bench_forms.py --estimate-only      # the choice's timings alone (seconds, no model loaded)

A session on another CPU kind runs it to see at once whether a choice went wrong there: the estimate's order of the
forms should be the engine's. Each (model, form) runs in a process of its own (peak RSS is a process's high-water
mark), one after another; nothing else should run beside it. Emulating another instruction set tests correctness
here, never speed.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

MODELS = {
    "qwen-coder-1.5b": "resource:qwen-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
    "smollm2": "resource:smollm2/SmolLM2-135M-Instruct.Q4_1.gguf",
    "gemma3": "resource:gemma3/gemma-3-270m-q4_k_m.gguf",
}
PROMPT = "Write 5 short English sentences, each using the word '{word}' and the pronoun 'she'. One per line."
WORDS = ("border", "garden", "market", "river", "letter", "window", "ticket", "candle")


def one(model: str, form: str, rows: int, tokens: int) -> dict:
    """Load ``model`` in ``form`` straight from its GGUF file, run the engine's probe, then ``rows`` sampled rows of
    ``tokens`` tokens each (every row to its limit); the figures as a dict."""
    import torch

    from unstereo.engine import forms
    from unstereo.engine.engine import EngineRequest, SamplingEngine
    from unstereo.models.gguf_direct import load_gguf_with_tokenizer
    from unstereo.models.spec import resolve_model

    products, packed = forms.FORMS[form]
    spec = resolve_model(model)
    t0 = time.perf_counter()
    lm, tok = load_gguf_with_tokenizer(spec.path, spec.gguf_file, products)
    load_s = time.perf_counter() - t0
    engine = SamplingEngine(lm, tok, slots=rows, products=products, pack=packed)
    problem = engine.check()
    prompts = [
        tok.apply_chat_template(
            [{"role": "user", "content": PROMPT.format(word=w)}], add_generation_prompt=True, tokenize=True
        )  # fmt: skip
        if getattr(tok, "chat_template", None)
        else tok(PROMPT.format(word=w))["input_ids"]
        for w in WORDS
    ]
    reqs = [EngineRequest(list(prompts[i % len(prompts)]), tokens, 0.7, 1.0, seed=i) for i in range(rows)]
    engine.generate(reqs[:2])  # warm-up: packing, the head's blocks, first-call allocations
    t0 = time.perf_counter()
    outs = engine.generate(reqs, ignore_eos=True)
    spent = time.perf_counter() - t0
    made = sum(len(o.tokens) for o in outs)
    return {"model": model, "form": form, "probe": problem or "passed", "load_s": round(load_s, 1),
            "tokens_per_s": round(made / spent, 1), "step_ms": round(1000 * spent / max(1, engine.stats.steps), 1),
            "peak_rss_gb": round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6, 2),
            "threads": torch.get_num_threads()}  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--models", nargs="+", default=["qwen-coder-1.5b", "smollm2"], help=f"of {list(MODELS)}"
    )
    parser.add_argument("--forms", nargs="+", default=None, help="default: every form this machine can run")
    parser.add_argument(
        "--rows", type=int, default=16, help="rows a step (the default generator's batch size)"
    )
    parser.add_argument("--tokens", type=int, default=32)
    parser.add_argument(
        "--budget", type=float, default=4.8, help="GB, the choice's memory budget (the default's)"
    )
    parser.add_argument(
        "--estimate-only", action="store_true", help="the choice's timings only, no model loaded"
    )
    parser.add_argument("--one", nargs=2, metavar=("MODEL", "FORM"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.one:
        print(json.dumps(one(*args.one, args.rows, args.tokens)))
        return

    from unstereo.engine import forms
    from unstereo.models.spec import resolve_model

    print(
        f"machine: {forms.machine_key().split('|')[0]} threads {os.environ.get('OMP_NUM_THREADS', 'torch default')}"
    )
    lines = ["| model | form | estimate: products ms a step | engine tokens/s | engine ms a step | load s | "
             "peak RSS GB | weights GB (estimate) | probe |", "|---|---|---|---|---|---|---|---|---|"]  # fmt: skip
    for name in args.models:
        model = MODELS.get(name, name)
        shapes = forms.shapes_of_spec(resolve_model(model))
        todo = args.forms or forms.candidates(["float32", "bfloat16", "int8"])
        timed = forms.time_forms(shapes, todo, forms.rows_class(args.rows))
        estimates = timed.seconds
        pick = forms.choose(shapes, ["float32", "bfloat16", "int8"], forms.rows_class(args.rows),
                            int(args.budget * 1e9), timer=lambda s, f, r, t=timed: t, memo=False)  # fmt: skip
        for form in todo:
            row = {}
            if not args.estimate_only:
                cmd = [sys.executable, __file__, "--one", model, form, "--rows", str(args.rows), "--tokens",
                       str(args.tokens)]  # fmt: skip
                out = subprocess.run(cmd, capture_output=True, text=True, check=True, timeout=1800)
                row = json.loads(out.stdout.strip().splitlines()[-1])
            mark = " (chosen)" if form == pick.form else ""
            lines.append(f"| {name} | {form}{mark} | {1000 * (estimates[form] or float('nan')):.1f} | {row.get('tokens_per_s', '')} | "
                         f"{row.get('step_ms', '')} | {row.get('load_s', '')} | {row.get('peak_rss_gb', '')} | "
                         f"{forms.weight_bytes(shapes, form) / 1e9:.2f} | {row.get('probe', '')} |")  # fmt: skip
            print(lines[-1], flush=True)
    print(f"\nrows {args.rows}, tokens {args.tokens}, budget {args.budget} GB")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
