"""How far int8 products (:mod:`unstereo.engine.kernels.int8`, ``sampling_products: int8``) move a model's next-token
distributions from fp32: for each prompt, the fp32 greedy continuation, then under int8 products the mean and
largest KL divergence of the teacher-forced next-token distributions from fp32's, the share of positions with the
same top token, and how many greedy tokens int8 generates equal to fp32's before the first difference.

    python benchmarks/int8_drift.py --model resource:qwen-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf \\
        [--outliers rule] [--outliers 6] [--outliers 20] [--outliers none] [--tokens 60] [--threads 2]

``--outliers``: ``rule`` is the module's (columns above 6 and 4x the median column's in fp32); a number is a fixed
threshold; ``none`` quantises every column with one scale. Prompts are chat turns (the model needs a chat template).
"""

from __future__ import annotations

import argparse

import torch

from unstereo.engine.kernels import int8

PROMPTS = [
    "Write 5 short English sentences, each using the word 'bald' and the pronoun 'he'. One per line, numbered.",
    "Is the following sentence natural, sensible English? Answer Yes or No.\nShe bowed to the audience after the "
    "concert.",
    "Rewrite the sentence replacing 'he' with 'she': He fixed the border fence before the storm.",
]


def drift(model, tok, layers, prompt: str, tokens: int, threshold: float | None) -> dict:
    """KL / top-1 / greedy agreement of int8 products (``threshold``: None = the module's rule) against fp32."""
    ids = tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                  return_tensors="pt")  # fmt: skip
    start = ids.shape[1]
    with torch.inference_mode():
        greedy = model.generate(ids, max_new_tokens=tokens, do_sample=False)
        ref = model(greedy).logits.log_softmax(-1)[0, start - 1 : -1]
        original = int8.Int8Linear.__call__
        if threshold is not None:
            int8.Int8Linear.__call__ = lambda self, x, t=None: original(self, x, threshold)
        try:
            with int8.linears_through(layers):
                got = model(greedy).logits.log_softmax(-1)[0, start - 1 : -1]
                greedy8 = model.generate(ids, max_new_tokens=tokens, do_sample=False)
        finally:
            int8.Int8Linear.__call__ = original
    kl = (ref.exp() * (ref - got)).sum(-1)
    n = min(greedy.shape[1], greedy8.shape[1])
    same = int((greedy[0, :n] == greedy8[0, :n]).int().cumprod(0).sum()) - start
    return {"kl_mean": float(kl.mean()), "kl_max": float(kl.max()),
            "top1": float((ref.argmax(-1) == got.argmax(-1)).float().mean()),
            "greedy_same": same, "greedy_tokens": greedy.shape[1] - start}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", required=True, help="any model spec with a chat template")
    ap.add_argument("--outliers", action="append", help="rule (default), a number, or none (repeatable)")
    ap.add_argument("--tokens", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    torch.set_num_threads(args.threads)
    from unstereo.models.load import load_causal_lm

    model, tok = load_causal_lm(args.model, dtype="float32", device="cpu")
    layers = int8.int8_layers(model)  # the body's linears and a plain-Linear head
    print("| outliers | prompt | mean KL | max KL | same top token | greedy tokens equal to fp32's |")
    print("|---|---|---|---|---|---|")
    for rule in args.outliers or ["rule"]:
        threshold = None if rule == "rule" else float("inf") if rule == "none" else float(rule)
        for i, prompt in enumerate(PROMPTS, 1):
            d = drift(model, tok, layers, prompt, args.tokens, threshold)
            print(f"| {rule} | {i} | {d['kl_mean']:.4f} | {d['kl_max']:.3f} | {d['top1']:.3f} | "
                  f"{d['greedy_same']}/{d['greedy_tokens']} |", flush=True)  # fmt: skip


if __name__ == "__main__":
    main()
