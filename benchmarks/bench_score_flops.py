"""The scorer's achieved GFLOP/s against the machine's fp32 peak, measured in the same process, and where it goes.

    python benchmarks/bench_score_flops.py [--model resource:qwen-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf]
        [--pairs 300] [--templates USE-10] [--threads 2] [--peak-repeats 5] [--batch-size auto] [--torch-profile]
        [--compare-unfused] [--check-full 48] [--sweeps]

1. Peak: plain fp32 products with random operands, best of ``--peak-repeats`` after a warm-up: ``torch.mm`` at
   2048 x 2048 x 2048, and the model's own MLP shapes (``M x hidden`` by ``hidden x intermediate`` and back, M = 512
   rows) by ``torch.mm`` and by oneDNN's matmul (the scorer's, :mod:`unstereo.engine.kernels.onednn`). The peak is the
   fastest of these.
2. Scoring: ``--pairs`` templates of the reference release (``bench_score.reference_templates``), each filled
   female and male, scored by :class:`~unstereo.scoring.CausalScorer` (fp32, CPU, ``--batch-size``) after a
   warm-up call on 8 sentences that resolves the scoring path (its probe is not timed).
3. FLOPs, counted from the model's config and what was actually computed (2 per multiply-add, biases and
   elementwise work not counted):
   - linears: every position the body ran (on the tree path the prefix tree's nodes: each distinct proper prefix
     of the batch's sentences once, the sentences' last tokens not at all; on the padded path rows x width,
     padding included) x layers x 2 (2 h^2 + 2 h kv + 3 h I), h the hidden size, kv the key/value width, I the
     MLP width;
   - attention, *useful*: per layer 4 h (d + 1) for a node at depth d (scores and weighted values over its d + 1
     ancestors-or-self); *computed*: per layer 4 h S^2 per segment of S slots (the segmented tree attention,
     :mod:`unstereo.engine.kernels.tree_attention`, padding and masked pairs included);
   - LM head: 2 h V per row the head ran on (V the vocabulary).
   Achieved GFLOP/s = (linears + useful attention + LM head) / scoring wall time.
4. Breakdown, by wall-clock timers around: the oneDNN products of the body (``linears``), the tree attention, the
   LM head's products and its log-sum-exp/gather (``head rest``), the body outside those (norms, rotary embedding,
   SiLU, residual adds, embedding lookup, module calls: ``body rest``), tokenisation, tree building (prefix tree,
   ancestor mask, segment layout), and ``other`` (the scorer's Python, mask tensors, batching, sums). With
   ``--torch-profile`` one more batch runs under ``torch.profiler`` and the top ops by self CPU time are printed.
5. ``--compare-unfused``: the same scoring again with the gated MLPs unfused (:mod:`unstereo.engine.kernels.onednn`), same
   process; ``--check-full N``: each variant's largest difference from the full path at batch 1 on the first N
   sentences; ``--sweeps``: oneDNN's rate on the layer's product shapes by rows per product (``--pairs 0``: only the
   peak and the sweep).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_score import reference_templates  # noqa: E402
from profile_decode import Timers  # noqa: E402

DEFAULT_MODEL = "resource:qwen-coder-1.5b/qwen2.5-coder-1.5b-instruct-q4_k_m.gguf"
KINDS = (
    "linears",
    "attention",
    "body rest",
    "LM head products",
    "head rest",
    "tokenisation",
    "tree building",
)


def best_seconds(fn, repeats: int) -> float:
    fn()  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def measure_peak(hidden: int, inter: int, repeats: int) -> list[tuple[str, float]]:
    """(label, GFLOP/s) of plain fp32 products with random operands."""
    from unstereo.engine.kernels.onednn import linear

    g = torch.Generator().manual_seed(0)
    out = []
    a, b = torch.randn(2048, 2048, generator=g), torch.randn(2048, 2048, generator=g)
    out.append(("torch.mm 2048x2048x2048", 2 * 2048**3 / best_seconds(lambda: torch.mm(a, b), repeats) / 1e9))
    out.append(
        ("oneDNN linear 2048x2048x2048", 2 * 2048**3 / best_seconds(lambda: linear(a, b), repeats) / 1e9)
    )
    m = 512
    for k, n in ((hidden, inter), (inter, hidden)):
        x, w = torch.randn(m, k, generator=g), torch.randn(n, k, generator=g)
        flops = 2 * m * k * n
        mm, dnn = (lambda x=x, w=w: torch.mm(x, w.t())), (lambda x=x, w=w: linear(x, w))
        out.append((f"torch.mm {m}x{k}x{n}", flops / best_seconds(mm, repeats) / 1e9))
        out.append((f"oneDNN linear {m}x{k}x{n}", flops / best_seconds(dnn, repeats) / 1e9))
    return out


def timed_scoring(scorer, sentences: list[str]) -> tuple[float, dict, dict, list]:
    """(wall seconds, counts, seconds per kind, scores) of ``scorer.score(sentences)`` with the counters and timers
    of the module doc around the scorer's parts; everything is put back afterwards."""
    from transformers import AttentionInterface

    from unstereo.engine.kernels import onednn
    from unstereo.engine.kernels import tree_attention as ta
    from unstereo.scoring import causal as causal_mod

    counts: dict[str, float] = defaultdict(float)
    timers = Timers()
    head_weight = scorer._parts[1].weight

    def is_head(w) -> bool:
        return w.data_ptr() == head_weight.data_ptr() or w._base is head_weight

    saved = {
        "pack_prefix_tree": causal_mod.pack_prefix_tree,
        "ancestor_mask": causal_mod.ancestor_mask,
        "segment_layout": causal_mod.segment_layout,
        "head_logprobs": causal_mod.head_logprobs,
    }
    saved_onednn = {k: getattr(onednn, k) for k in ("linear", "fused_linear", "linear_mul")}
    saved_attention = ta._attention

    def pack(seqs):
        tree = saved["pack_prefix_tree"](seqs)
        counts["attn_useful"] += sum(p + 1 for p in tree.positions)
        counts["tokens"] += sum(len(s) for s in seqs)
        counts["batches"] += 1
        return tree

    def layout(*a, **k):
        lay = saved["segment_layout"](*a, **k)
        counts["attn_computed"] += lay.gather.shape[0] * lay.gather.shape[1] ** 2
        return lay

    def head(hidden, *a, **k):
        counts["head_rows"] += hidden.shape[0]
        return saved["head_logprobs"](hidden, *a, **k)

    original_body = scorer._body

    def body_rows(**kw):
        counts["body_positions"] += kw["input_ids"].numel()
        return original_body(**kw)

    causal_mod.pack_prefix_tree = timers.wrap("tree building", pack)
    causal_mod.ancestor_mask = timers.wrap("tree building", saved["ancestor_mask"])
    causal_mod.segment_layout = timers.wrap("tree building", layout)
    causal_mod.head_logprobs = timers.wrap("head rest", head)
    onednn.linear = timers.wrap(
        lambda x, w, *_: "LM head products" if is_head(w) else "linears", onednn.linear
    )
    onednn.fused_linear = timers.wrap("linears", onednn.fused_linear)
    onednn.linear_mul = timers.wrap("linears", onednn.linear_mul)
    ta._attention = timers.wrap("attention", saved_attention)
    AttentionInterface.register(ta.NAME, ta._attention)
    scorer._body = timers.wrap("body rest", body_rows)
    scorer.encode = timers.wrap("tokenisation", scorer.encode)
    try:
        t0 = time.perf_counter()
        scores = scorer.score(sentences)
        wall = time.perf_counter() - t0
    finally:
        for k, v in saved.items():
            setattr(causal_mod, k, v)
        for k, v in saved_onednn.items():
            setattr(onednn, k, v)
        ta._attention = saved_attention
        AttentionInterface.register(ta.NAME, ta._attention)
        del scorer._body, scorer.encode
    spent = dict(timers.total)
    spent["other"] = wall - sum(spent.values())
    return wall, counts, spent, scores


def row_sweep(h: int, kv: int, inter: int, repeats: int) -> None:
    """oneDNN's GFLOP/s on a layer's product shapes at M = 192..768 rows (random operands, best of ``repeats``)."""
    from unstereo.engine.kernels.onednn import fused_linear, linear, linear_mul

    g = torch.Generator().manual_seed(0)
    w_in, w_out = torch.randn(inter, h, generator=g), torch.randn(h, inter, generator=g)
    w_q, w_k = torch.randn(h, h, generator=g), torch.randn(kv, h, generator=g)
    print("oneDNN GFLOP/s by rows M: gate+SiLU, up*gate, down, q/o, k/v")
    for m in (192, 256, 320, 384, 448, 512, 640, 768):
        x, xi = torch.randn(m, h, generator=g), torch.randn(m, inter, generator=g)
        gate = fused_linear(x, w_in, None, ("swish", ""))
        shapes = (
            (lambda x=x: fused_linear(x, w_in, None, ("swish", "")), h * inter),
            (lambda x=x, gate=gate: linear_mul(x, gate, w_in), h * inter),
            (lambda xi=xi: linear(xi, w_out), h * inter),
            (lambda x=x: linear(x, w_q), h * h),
            (lambda x=x: linear(x, w_k), h * kv),
        )
        rates = [2 * m * n / best_seconds(fn, repeats) / 1e9 for fn, n in shapes]
        print(f"  M = {m:4d}: " + ", ".join(f"{r:.0f}" for r in rates), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=DEFAULT_MODEL)
    ap.add_argument("--pairs", type=int, default=300)
    ap.add_argument("--templates", default="USE-10")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peak-repeats", type=int, default=5)
    ap.add_argument("--batch-size", default="auto")
    ap.add_argument(
        "--compare-unfused",
        action="store_true",
        help="score again with the gated MLPs unfused (each product alone), same process, and compare",
    )
    ap.add_argument(
        "--check-full",
        type=int,
        default=0,
        help="score the first N sentences alone on the full path (the model's own forward pass and log-softmax, "
        "what lm-eval computes) and print the largest difference of each variant",
    )
    ap.add_argument("--torch-profile", action="store_true")
    ap.add_argument(
        "--sweeps", action="store_true", help="also oneDNN's rate by rows per product (row_sweep)"
    )
    args = ap.parse_args()
    torch.set_num_threads(args.threads)

    from unstereo.engine.kernels import onednn
    from unstereo.models.load import load_causal_lm
    from unstereo.scoring import CausalScorer
    from unstereo.templates import fill_template

    t0 = time.perf_counter()
    model, tok = load_causal_lm(args.model, dtype="float32", device="cpu")
    load_s = time.perf_counter() - t0
    cfg = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    h, inter, layers, vocab = cfg.hidden_size, cfg.intermediate_size, cfg.num_hidden_layers, cfg.vocab_size
    heads = cfg.num_attention_heads
    head_dim = getattr(cfg, "head_dim", None) or h // heads
    kv = cfg.num_key_value_heads * head_dim
    q_width = heads * head_dim
    per_position = layers * 2 * (h * q_width + 2 * h * kv + q_width * h + 3 * h * inter)

    peaks = measure_peak(h, inter, args.peak_repeats)
    peak = max(v for _, v in peaks)
    print(
        f"model {args.model}: {layers} layers, hidden {h}, kv {kv}, MLP {inter}, vocabulary {vocab}; "
        f"{args.threads} threads; torch {torch.__version__}; load {load_s:.1f} s"
    )
    print(f"fp32 peak (best of {args.peak_repeats}):")
    for label, v in peaks:
        print(f"  {label:32s} {v:7.1f} GFLOP/s")

    if args.sweeps:
        row_sweep(h, kv, inter, args.peak_repeats)
    if args.pairs < 1:
        return
    templates, source = reference_templates(args.pairs, args.templates)
    sentences = [fill_template(t, g) for t in templates for g in ("female", "male")]
    batch_size = args.batch_size if args.batch_size == "auto" else int(args.batch_size)
    variants = [("fused MLP", None)]
    if args.compare_unfused:
        variants.append(("unfused MLP", lambda module: None))
    full = None
    if args.check_full:
        reference = CausalScorer(model, tok, device="cpu", batch_size=1, path="full")
        full = [lp for lp, _ in reference.score(sentences[: args.check_full])]
    results = {}
    for name, replacement in variants:
        saved = onednn.gated_mlp_activation
        if replacement is not None:
            onednn.gated_mlp_activation = replacement
        try:
            scorer = CausalScorer(model, tok, device="cpu", batch_size=batch_size)
            t0 = time.perf_counter()
            scorer.score(sentences[:8])  # resolves the path (probe), not timed
            probe_s = time.perf_counter() - t0
            wall, counts, spent, scores = timed_scoring(scorer, sentences)
        finally:
            onednn.gated_mlp_activation = saved
        results[name] = scores
        f_linear = counts["body_positions"] * per_position
        f_attn_useful = layers * 4 * q_width * counts["attn_useful"]
        f_attn_computed = layers * 4 * q_width * counts["attn_computed"]
        f_head = counts["head_rows"] * 2 * h * vocab
        useful = f_linear + f_attn_useful + f_head
        print(
            f"[{name}] {len(templates)} pairs ({source}), {len(sentences)} sentences, path {scorer.path}, "
            f"{int(counts['batches'])} batches, {int(counts['tokens'])} tokens -> "
            f"{int(counts['body_positions'])} body positions, {int(counts['head_rows'])} head rows; "
            f"probe {probe_s:.1f} s; scoring {wall:.1f} s, {len(sentences) / wall:.2f} sentences/s"
        )
        print(
            f"  FLOPs: linears {f_linear / 1e12:.3f} T, attention useful {f_attn_useful / 1e12:.4f} T "
            f"(computed {f_attn_computed / 1e12:.4f} T), LM head {f_head / 1e12:.3f} T; total {useful / 1e12:.3f} T"
        )
        print(
            f"  achieved {useful / wall / 1e9:.1f} GFLOP/s = {useful / wall / 1e9 / peak:.1%} of the peak "
            f"{peak:.1f}; linears alone {f_linear / max(spent.get('linears', 0), 1e-9) / 1e9:.1f} GFLOP/s, "
            f"LM head products {f_head / max(spent.get('LM head products', 0), 1e-9) / 1e9:.1f} GFLOP/s"
        )
        print("  | " + " | ".join((*KINDS, "other")) + " |")
        print("  |" + "---|" * (len(KINDS) + 1))
        cells = [f"{spent.get(k, 0.0):.1f} s ({spent.get(k, 0.0) / wall:.1%})" for k in (*KINDS, "other")]
        print("  | " + " | ".join(cells) + " |", flush=True)
        if full is not None:
            diff = max(abs(x - y) for (x, _), y in zip(scores, full, strict=False))
            print(f"  max |scores - full path, batch 1| over the first {len(full)} sentences: {diff:.2e}")
    if len(results) == 2:
        a, b = results.values()
        diff = max(abs(x - y) for (x, _), (y, _) in zip(a, b, strict=True))
        print(f"max |fused - unfused| per sentence: {diff:.2e}")
    if args.torch_profile:
        from torch.profiler import ProfilerActivity, profile

        scorer = CausalScorer(model, tok, device="cpu", batch_size=batch_size)
        scorer.score(sentences[:8])
        with profile(activities=[ProfilerActivity.CPU]) as prof:
            scorer.score(sentences[:64])
        print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=25))


if __name__ == "__main__":
    main()
