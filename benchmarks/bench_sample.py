"""Continuations per second: the project's local sampler (per-row seeded, vectorised top-p) vs. transformers' own
``generate(do_sample=True)``, same model, same left-padded batch of prompts, same top_p and max_new_tokens, same
process. Also times the previous sampler (a Python loop over rows sorting the vocabulary per row) for reference.

    python benchmarks/bench_sample.py [--model tiny | PATH | resource:smollm2/SmolLM2-135M-Instruct.Q4_1.gguf]
        [--batch-size 8] [--max-new-tokens 32] [--top-p 0.9] [--repeats 3] [--threads 1]

``tiny`` is a randomly initialised 4-layer GPT-2 with a 32,000-word vocabulary built here (no download). Prints the
rates (continuations/s and generated tokens/s, best of ``--repeats`` rounds in which the methods take turns) and the ratio to transformers (target: within
15 %, i.e. >= 0.85). Rows may stop early at end of sequence, so tokens/s is the fairer figure when they differ.
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

import torch

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


def previous_sampler(top_p: float, generators):
    """The sampler before the vectorisation: a Python loop over rows, a full sort per row and token."""

    def process(input_ids, scores):
        out = torch.full_like(scores, float("-inf"))
        for i in range(scores.shape[0]):
            probs = torch.softmax(scores[i].float(), dim=-1)
            sorted_p, idx = torch.sort(probs, descending=True)
            keep = torch.cumsum(sorted_p, 0) - sorted_p < top_p
            mask = torch.zeros_like(probs, dtype=torch.bool)
            mask[idx[keep]] = True
            probs = torch.where(mask, probs, torch.zeros_like(probs))
            out[i, int(torch.multinomial(probs / probs.sum(), 1, generator=generators[i]))] = 0.0
        return out

    return process


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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument(
        "--model", default="tiny", help="tiny, or any model spec (hub id, folder, .gguf, resource:...)"
    )
    ap.add_argument("--batch-size", type=int, default=8)
    ap.add_argument("--max-new-tokens", type=int, default=32)
    ap.add_argument("--top-p", type=float, default=0.9)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--device", default="cpu")
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    if args.model == "tiny":
        model, tok = tiny_model()
        label = "tiny random GPT-2 (4 layers, d=128, vocab 32000)"
    else:
        from unstereo.models import load_causal_lm

        model, tok = load_causal_lm(args.model, dtype="float32", device=args.device)
        label = args.model
    backend = LocalBackend.from_loaded(model, tok, label, batch_size=args.batch_size)
    prompts = (PROMPTS * (args.batch_size // len(PROMPTS) + 1))[: args.batch_size]
    reqs = [
        ContinuationRequest(p, temperature=1.0, top_p=args.top_p, max_tokens=args.max_new_tokens, seed=i)
        for i, p in enumerate(prompts)
    ]
    enc = tok(prompts, return_tensors="pt", padding=True, return_token_type_ids=False).to(model.device)
    width = enc["input_ids"].shape[1]
    common = dict(max_new_tokens=args.max_new_tokens, pad_token_id=tok.pad_token_id)

    def ours() -> int:
        return sum(r.completion_tokens for r in backend.continue_batch(reqs))

    def generated(out) -> int:
        new = out[:, width:]
        return int((new != tok.pad_token_id).sum()) if tok.pad_token_id is not None else new.numel()

    def transformers_sample() -> int:
        with torch.no_grad():
            return generated(model.generate(**enc, do_sample=True, top_p=args.top_p, top_k=0, **common))

    def previous() -> int:
        from transformers import LogitsProcessorList

        gens = [torch.Generator().manual_seed(i) for i in range(len(prompts))]
        with torch.no_grad():
            out = model.generate(
                **enc, do_sample=False, logits_processor=LogitsProcessorList([previous_sampler(args.top_p, gens)]), **common
            )  # fmt: skip
        return generated(out)

    ours()  # warm-up (first-call allocations)
    timed = best_of(
        args.repeats,
        {
            "transformers generate(do_sample=True)": transformers_sample,
            "unstereo LocalBackend.continue_batch": ours,
            "previous per-row sampler": previous,
        },
    )
    rows = list(timed.items())
    print(f"model: {label}; batch {args.batch_size}, max_new_tokens {args.max_new_tokens}, top_p {args.top_p}, "
          f"{args.threads} thread(s), best of {args.repeats}")  # fmt: skip
    base_cps = args.batch_size / rows[0][1][0]
    base_tps = rows[0][1][1] / rows[0][1][0]
    for name, (sec, n_tok) in rows:
        cps, tps = args.batch_size / sec, n_tok / sec
        print(f"{name:40s} {cps:8.2f} continuations/s {tps:9.1f} tokens/s  "
              f"ratio {cps / base_cps:5.2f} (tokens/s {tps / base_tps:5.2f})")  # fmt: skip


if __name__ == "__main__":
    main()
