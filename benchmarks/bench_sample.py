"""Generated tokens per second: the project's sampling engine (:mod:`unstereo.engine.engine`, through
``LocalBackend.continue_batch``) against transformers' own ``generate(do_sample=True)``, same model, same rows,
same top_p and max_new_tokens, in one process, the methods taking turns in each round.

    python benchmarks/bench_sample.py [--model tiny | PATH | resource:smollm2/SmolLM2-135M-Instruct.Q4_1.gguf]
        [--shape batch:32x64] [--shape n:100x128] [--top-p 0.9] [--repeats 2] [--threads 1] [--method engine]

Shapes: ``batch:PxT`` is P distinct prompts, one sample each, T new tokens, all in one batch; ``n:NxT`` is N
samples of one prompt, T new tokens (transformers: ``num_return_sequences=N``; the engine: one prefill shared by
the N rows). Both methods get a batch of all the rows (the engine's slots = rows). Rows may end early at end of
sequence, so the figure is generated tokens/s (transformers' padding after a row's end is not counted). Prints a
markdown table row per shape (best of ``--repeats`` rounds) and the process's peak RSS. ``tiny`` is a randomly
initialised 4-layer GPT-2 with a 32,000-word vocabulary built here (no download). ``--method`` (repeatable) runs
only the named methods (default transformers and engine; `engine-int8` is the engine with `sampling_products: int8`,
`engine-unpacked` the engine's fp32 products on the plain weights, ``PACK_WEIGHTS`` off, with a check that its
texts equal the packed ones): transformers alone takes 10+ minutes per round at n = 100 on a slow core.
``--every-row-to-T``: no row ends at end of sequence (the engine samples past it; transformers'
``min_new_tokens``): every row makes T tokens, the work llama.cpp's ``llama-batched-bench`` does
(bench_llamacpp.py).
"""

from __future__ import annotations

import argparse
import contextlib
import resource
import time
from collections.abc import Callable, Iterator

import torch

from unstereo.engine import engine as engine_module
from unstereo.llm.local import LocalBackend
from unstereo.llm.types import ContinuationRequest

PROMPTS = [
    "The nurse said that",
    "After the meeting, the engineer",
    "My neighbour has always been",
    "The best thing about the weekend is",
    "When the teacher walked in,",
    "He",
    "She told me that the city",
    "In the morning the farmer",
]
OPENINGS = ["", "Yesterday ", "In the story, ", "Everyone knows that "]
METHODS = ("transformers", "engine", "engine-int8", "engine-unpacked")
DEFAULT_METHODS = ("transformers", "engine")


@contextlib.contextmanager
def plain_weights() -> Iterator[None]:
    """The engine's fp32 products on the plain weights (``PACK_WEIGHTS`` off) while the block runs."""
    engine_module.PACK_WEIGHTS = False
    try:
        yield
    finally:
        engine_module.PACK_WEIGHTS = True


def distinct_prompts(n: int) -> list[str]:
    """``n`` different prompts (the 8 above, each after 4 openings, then numbered)."""
    base = [o + (p if not o else p[0].lower() + p[1:]) for o in OPENINGS for p in PROMPTS]
    return [base[i % len(base)] + ("" if i < len(base) else f" ({i // len(base)})") for i in range(n)]


def tiny_model(vocab: int = 32000, seed: int = 0):
    """(model, tokenizer): a random GPT-2 (4 layers, 128 wide) over a word-level vocabulary of ``vocab`` words."""
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import GenerationConfig, GPT2Config, GPT2LMHeadModel, PreTrainedTokenizerFast

    words = sorted({w.strip(",.").lower() for p in PROMPTS for w in p.split()} | {",", "."})
    names = ["<pad>", "<unk>", "<eos>", *words]
    names += [f"w{i}" for i in range(vocab - len(names))]
    tok_model = Tokenizer(models.WordLevel({w: i for i, w in enumerate(names)}, unk_token="<unk>"))
    tok_model.pre_tokenizer = pre_tokenizers.Whitespace()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=tok_model, pad_token="<pad>", unk_token="<unk>", eos_token="<eos>"
    )
    torch.manual_seed(seed)
    config = GPT2Config(
        vocab_size=vocab,
        n_positions=256,
        n_embd=128,
        n_layer=4,
        n_head=4,
        eos_token_id=tok.eos_token_id,
        bos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
    )
    model = GPT2LMHeadModel(config).eval()
    model.generation_config = GenerationConfig.from_model_config(config)
    return model, tok


def load_model(spec: str, device: str = "cpu"):
    """(model, tokenizer) of ``--model``: ``tiny`` (:func:`tiny_model`), else any model spec, fp32 on ``device``."""
    if spec == "tiny":
        return tiny_model()
    from unstereo.models.load import load_causal_lm

    return load_causal_lm(spec, dtype="float32", device=device)


def best_of(repeats: int, fns: dict[str, Callable[[], int]]) -> dict[str, tuple[float, int]]:
    """Per method (fastest wall time, tokens generated in that run); the methods take turns in each round, so a
    change of the machine's load during the run hits all of them alike."""
    best = dict.fromkeys(fns, (float("inf"), 0))
    for _ in range(repeats):
        for name, fn in fns.items():
            t0 = time.perf_counter()
            n_tokens = fn()
            best[name] = min(best[name], (time.perf_counter() - t0, n_tokens))
    return best


def parse_shape(text: str) -> tuple[str, int, int]:
    """``batch:32x64`` -> ("batch", 32, 64); ``n:100x128`` -> ("n", 100, 128)."""
    kind, _, size = text.partition(":")
    rows, _, tokens = size.partition("x")
    if kind not in ("batch", "n") or not rows.isdigit() or not tokens.isdigit():
        raise SystemExit(f"--shape {text!r}: expected batch:PROMPTSxTOKENS or n:SAMPLESxTOKENS")
    return kind, int(rows), int(tokens)


def run_shape(
    model,
    tok,
    kind: str,
    rows: int,
    max_new: int,
    top_p: float,
    repeats: int,
    methods=METHODS,
    every_row_to_t: bool = False,
) -> dict:
    """Timings of ``methods`` (default both) at one shape; ``every_row_to_t``: no row ends at end of sequence."""
    prompts = distinct_prompts(rows) if kind == "batch" else [PROMPTS[0]]
    backend = LocalBackend.from_loaded(model, tok, "bench", batch_size=rows)
    int8 = (
        LocalBackend.from_loaded(model, tok, "bench", batch_size=rows, sampling_products="int8")
        if "engine-int8" in methods
        else None
    )
    texts = prompts if kind == "batch" else prompts * rows
    reqs = [
        ContinuationRequest(p, temperature=1.0, top_p=top_p, max_tokens=max_new, seed=i)
        for i, p in enumerate(texts)
    ]
    enc = tok(prompts, return_tensors="pt", padding=True, return_token_type_ids=False).to(model.device)
    width = enc["input_ids"].shape[1]
    extra = {} if kind == "batch" else {"num_return_sequences": rows}
    if every_row_to_t:
        extra["min_new_tokens"] = max_new

    def engine() -> int:
        return sum(r.completion_tokens for r in backend.continue_batch(reqs))

    def engine_int8() -> int:
        return sum(r.completion_tokens for r in int8.continue_batch(reqs))

    def engine_unpacked() -> int:  # the same engine with its fp32 products on the plain weights
        with plain_weights():
            return sum(r.completion_tokens for r in backend.continue_batch(reqs))

    def transformers_sample() -> int:
        with torch.no_grad():
            out = model.generate(
                **enc, do_sample=True, top_p=top_p, top_k=0, max_new_tokens=max_new,
                pad_token_id=tok.pad_token_id, **extra,
            )  # fmt: skip
        new = out[:, width:]
        return int((new != tok.pad_token_id).sum()) if tok.pad_token_id is not None else new.numel()

    engine()  # warm-up: the engine's probe, first-call allocations
    if every_row_to_t and backend._engine:
        backend._engine.eos = set()  # its rows end at their token limit only
    if "engine-unpacked" in methods:  # the packed weights change no token
        packed_texts = [r.text for r in backend.continue_batch(reqs)]
        with plain_weights():
            plain_texts = [r.text for r in backend.continue_batch(reqs)]
        if packed_texts != plain_texts:
            raise SystemExit("the packed and plain weights gave different texts")
    if "engine-int8" in methods:
        engine_int8()  # warm-up: and the int8 weights, quantised once
        if every_row_to_t and int8._engine:
            int8._engine.eos = set()
    fns = {
        "transformers": transformers_sample,
        "engine": engine,
        "engine-int8": engine_int8,
        "engine-unpacked": engine_unpacked,
    }
    timed = best_of(repeats, {name: fns[name] for name in methods})
    stats = backend._engine.stats if backend._engine else None
    return {name: (n_tok / sec, sec, n_tok) for name, (sec, n_tok) in timed.items()} | {
        "engine_ran": bool(backend._engine),  # False: the engine's probe failed and generate ran instead
        "prefills": stats.prefills if stats else None,
        "steps": stats.steps if stats else None,
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model", default="tiny", help="tiny, or any model spec (hub id, folder, .gguf, resource:...)"
    )
    ap.add_argument(
        "--shape", action="append", help="batch:PxT or n:NxT (repeatable; default both paper shapes)"
    )
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--method", action="append", choices=METHODS,
                    help="run these (default transformers and engine; engine-int8: sampling_products int8; "
                         "engine-unpacked: PACK_WEIGHTS off)")  # fmt: skip
    ap.add_argument("--every-row-to-T", dest="every_row_to_t", action="store_true",
                    help="no row ends at end of sequence: every row makes T tokens (llama-batched-bench's work)")  # fmt: skip
    args = ap.parse_args()
    methods = tuple(args.method or DEFAULT_METHODS)
    torch.set_num_threads(args.threads)
    shapes = [parse_shape(s) for s in (args.shape or ["batch:32x64", "n:100x128"])]

    model, tok = load_model(args.model, args.device)
    label = "tiny random GPT-2 (4 layers, d=128, vocab 32000)" if args.model == "tiny" else args.model
    to_t = "; every row to T tokens" if args.every_row_to_t else ""
    print(f"model: {label}; top_p {args.top_p}, T=1, {args.threads} thread(s), best of {args.repeats}{to_t}")
    print(
        "| model | shape | threads | transformers tokens/s | engine tokens/s | engine int8 tokens/s |"
        " engine unpacked tokens/s | ratio | engine prefills/steps |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for kind, rows, max_new in shapes:
        r = run_shape(model, tok, kind, rows, max_new, args.top_p, args.repeats, methods, args.every_row_to_t)
        rate = {name: f"{r[name][0]:.1f}" if name in r else "-" for name in METHODS}
        ratio = (
            f"{r['engine'][0] / r['transformers'][0]:.2f}x" if {"engine", "transformers"} <= r.keys() else "-"
        )
        shape = f"{rows} prompts x {max_new}" if kind == "batch" else f"n={rows} of 1 prompt x {max_new}"
        print(f"| {label.split('/')[-1]} | {shape} | {args.threads} | {rate['transformers']} | {rate['engine']} | "
              f"{rate['engine-int8']} | {rate['engine-unpacked']} | "
              f"{ratio} | {r['prefills']}/{r['steps']} |", flush=True)  # fmt: skip
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"peak RSS of the process: {peak:.0f} MiB")


if __name__ == "__main__":
    main()
