"""The GPU path of scoring and sampling, checked and timed on a CUDA machine, with no model download.

    python benchmarks/check_gpu.py --model DIR [--model DIR ...] [--sentences 512] [--cpu-sentences 256]
        [--shape batch:32x64] [--shape n:100x128] [--repeats 2] [--sampling-only] [--out results.json]

Each ``--model`` is a Hugging Face folder. One with weights is loaded as is; one with only ``config.json`` and a
tokenizer (what the offline resources' converted folders give without their weights) gets random weights from a
fixed seed, saved to a temporary folder, so the model's own architecture (attention, rotary, sliding windows) runs
at its real size. Both go through :func:`unstereo.models.load.load_causal_lm`, once on ``cpu`` and once on ``cuda``.

1. Scoring (:class:`unstereo.scoring.causal.CausalScorer`): ln p(s) of synthetic sentences on ``cuda`` by each
   path (auto, padded, full) against the CPU's (path auto), largest absolute difference; sentences per second on
   ``cuda``: ours (auto) against padded batches of 32 with the full logits (what lm-evaluation-harness does) and
   one forward pass per sentence, on the same token ids.
2. Sampling (:class:`unstereo.engine.engine.SamplingEngine` on ``cuda``): its probe; greedy rows against
   transformers' greedy ``generate``; sampled rows' log-probabilities against the model's full forward pass; the
   same seeds on the CPU (same tokens?); the counter-based uniforms (:func:`unstereo.engine.sampler.stream`)
   computed on ``cuda`` bit for bit those of the CPU; the backend's path on ``cuda`` (``generate`` with the
   batched :class:`~unstereo.engine.sampler.RowSampler`, nothing read back per step) against the CPU engine, same
   seeds (same texts?); tokens per second of that path against ``generate(do_sample=True)`` at each shape
   (``benchmarks/bench_sample.py``'s ``run_shape``, which says whether the engine or the fallback ran).

``--sampling-only`` skips the scoring part (the sampler's check on a lent device in a few minutes). ``--device cpu``
dry-runs the script here: the backend's ``generate`` path is then forced (with the device's ``sort`` strategy).

Prints markdown tables; ``--out`` also writes them as JSON. Random weights give near-flat distributions, so the
greedy comparison is strict (close logits); the log-probability differences are the criterion.
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import sys
import tempfile
import time
import traceback
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))
from bench_sample import distinct_prompts, parse_shape, run_shape  # noqa: E402

SUBJECTS = [
    "The nurse",
    "My neighbour",
    "The engineer",
    "A farmer",
    "The teacher",
    "Our doctor",
    "The child",
    "He",
]
VERBS = ["said that", "thought that", "wrote that", "knew that"]
ENDINGS = [
    "it was late.",
    "the city was quiet today.",
    "nobody came to the meeting after lunch.",
    "she would win.",
]


def sentences(n: int) -> list[str]:
    """``n`` distinct sentences of 5 to 14 words."""
    out = [f"{s} {v} {e}" for s in SUBJECTS for v in VERBS for e in ENDINGS]
    return [out[i % len(out)] + ("" if i < len(out) else f" ({i // len(out)})") for i in range(n)]


def materialise(folder: Path, work: Path) -> Path:
    """``folder`` itself when it holds weights, else a copy with random fp32 weights (seed 0)."""
    if any(folder.glob("*.safetensors")) or any(folder.glob("*.bin")):
        return folder
    from transformers import AutoConfig, AutoModelForCausalLM

    out = work / folder.name
    out.mkdir(parents=True, exist_ok=True)
    for f in folder.iterdir():
        if f.name.endswith(".gz"):
            with gzip.open(f, "rb") as src, open(out / f.name[:-3], "wb") as dst:
                shutil.copyfileobj(src, dst)
        elif f.is_file():
            shutil.copy(f, out / f.name)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(out), torch_dtype=torch.float32)
    model.save_pretrained(out)
    return out


def cuda_time(fn):
    """(result, seconds) of ``fn()`` with the GPU's queue drained before and after."""
    sync = torch.cuda.synchronize if torch.cuda.is_available() else (lambda: None)
    sync()
    t0 = time.perf_counter()
    result = fn()
    sync()
    return result, time.perf_counter() - t0


def lmeval_like(model, ids: list[list[int]], pad: int, batch: int = 32) -> list[float]:
    """ln p of each row (first token is context): right-padded batches, full-vocabulary log_softmax."""
    out = []
    with torch.inference_mode():
        for i in range(0, len(ids), batch):
            chunk = ids[i : i + batch]
            width = max(map(len, chunk))
            x = torch.full((len(chunk), width), pad, dtype=torch.long)
            m = torch.zeros_like(x)
            for r, s in enumerate(chunk):
                x[r, : len(s)], m[r, : len(s)] = torch.tensor(s), 1
            x, m = x.to(model.device), m.to(model.device)
            lp = torch.log_softmax(model(input_ids=x, attention_mask=m).logits[:, :-1].float(), -1)
            lp = lp.gather(-1, x[:, 1:, None])[..., 0] * m[:, 1:]
            out += lp.double().sum(-1).tolist()
    return out


def naive(model, ids: list[list[int]]) -> list[float]:
    """ln p of each row, one forward pass per row."""
    out = []
    with torch.inference_mode():
        for s in ids:
            x = torch.tensor([s], device=model.device)
            lp = torch.log_softmax(model(input_ids=x).logits[0, :-1].float(), -1)
            out.append(float(lp.gather(-1, x[0, 1:, None]).double().sum()))
    return out


def check_scoring(cpu_lm, cuda_lm, tok, n: int, n_cpu: int, device: str) -> dict:
    from unstereo.scoring.causal import CausalScorer

    texts = sentences(n)
    ref = CausalScorer(cpu_lm, tok, device="cpu").score(texts[:n_cpu])
    row: dict = {"sentences": n, "cpu_sentences": n_cpu}
    for path in ("auto", "padded", "full"):
        scorer = CausalScorer(cuda_lm, tok, device=device, path=path)
        scorer.score(texts[:8])  # warm-up: the path's probe, kernels
        got, sec = cuda_time(lambda scorer=scorer: scorer.score(texts))
        row[f"{path}_path"] = scorer.path
        row[f"{path}_max_diff_vs_cpu"] = max(abs(a[0] - b[0]) for a, b in zip(got[:n_cpu], ref, strict=True))
        row[f"{path}_sentences_per_s"] = n / sec
    ids = CausalScorer(cuda_lm, tok, device=device).encode(texts)
    pad = tok.pad_token_id if tok.pad_token_id is not None else 0
    lmeval_like(cuda_lm, ids[:8], pad)
    base, sec = cuda_time(lambda: lmeval_like(cuda_lm, ids, pad))
    row["lmeval_like_sentences_per_s"] = n / sec
    row["lmeval_like_max_diff_vs_ours"] = max(abs(a - b[0]) for a, b in zip(base, got, strict=True))
    k = min(n, 128)
    _, sec = cuda_time(lambda: naive(cuda_lm, ids[:k]))
    row["naive_sentences_per_s"] = k / sec
    return row


def check_sampling(cpu_lm, cuda_lm, tok) -> dict:
    from unstereo.engine.engine import EngineRequest, SamplingEngine
    from unstereo.engine.sampler import stream
    from unstereo.llm.local import LocalBackend
    from unstereo.llm.types import ContinuationRequest

    seeds = [0, 1, 7, 2**40 + 3, -5] + list(range(100, 160))
    on_device = stream(seeds, 256, cuda_lm.device).cpu()
    row: dict = {"uniforms_bitwise_equal_cpu": bool(torch.equal(on_device, stream(seeds, 256)))}
    # the backend's path on the device (generate + RowSampler) against the CPU engine, same seeds: texts
    reqs = [ContinuationRequest(p, temperature=1.0, top_p=(0.9, 1.0)[i % 2], max_tokens=32, seed=i)
            for i, p in enumerate(distinct_prompts(16))]  # fmt: skip
    device_path = LocalBackend.from_loaded(cuda_lm, tok, "check", batch_size=16)
    if cuda_lm.device.type == "cpu":  # a dry run: force the generate path and the device's strategy
        device_path._engine, device_path.generate_strategy = False, "sort"
    got = device_path.continue_batch(reqs)
    assert device_path._engine is False, "the backend built its engine for a model off the CPU"
    want = LocalBackend.from_loaded(cpu_lm, tok, "check", batch_size=16).continue_batch(reqs)
    same = sum(a.text == b.text for a, b in zip(got, want, strict=True))
    row["generate_path_rows_equal_cpu_engine"] = f"{same}/{len(reqs)}"
    engine = SamplingEngine(cuda_lm, tok, slots=16)
    row["probe"] = engine.check() or "passed"
    prompts = [tok(p, add_special_tokens=True)["input_ids"] for p in distinct_prompts(16)]
    greedy = engine.generate([EngineRequest(p, 16, temperature=0.0) for p in prompts], ignore_eos=True)
    same = 0
    with torch.inference_mode():
        for p, out in zip(prompts, greedy, strict=True):
            x = torch.tensor([p], device=cuda_lm.device)
            ref = cuda_lm.generate(  # the mask given: a pad id equal to BOS would hide the first token
                x, attention_mask=torch.ones_like(x), do_sample=False, max_new_tokens=16, min_new_tokens=16,
                pad_token_id=tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id,
            )  # fmt: skip
            same += ref[0, len(p) :].tolist() == out.tokens
    row["greedy_rows_equal_generate"] = f"{same}/{len(prompts)}"
    reqs = [EngineRequest(p, 32, temperature=1.0, top_p=1.0, seed=i) for i, p in enumerate(prompts)]
    sampled = engine.generate(reqs, logprobs=True, ignore_eos=True)
    diff = 0.0
    with torch.inference_mode():
        for req, out in zip(reqs, sampled, strict=True):
            seq = torch.tensor([req.ids + out.tokens], device=cuda_lm.device)
            lp = torch.log_softmax(cuda_lm(input_ids=seq).logits[0, len(req.ids) - 1 : -1].float(), -1)
            want = lp.gather(-1, torch.tensor(out.tokens, device=seq.device)[:, None])[:, 0].cpu()
            diff = max(diff, float((want - torch.tensor(out.logprobs)).abs().max()))
    row["sampled_logprob_max_diff_vs_forward"] = diff
    on_cpu = SamplingEngine(cpu_lm, tok, slots=16).generate(reqs, ignore_eos=True)
    same = sum(a.tokens == b.tokens for a, b in zip(sampled, on_cpu, strict=True))
    row["sampled_rows_equal_cpu"] = f"{same}/{len(reqs)}"
    return row


def check_model(name: Path, tmp: Path, device: str, args, shapes) -> dict:
    """Scoring, sampling and speed of one model folder (module doc)."""
    from unstereo.models.load import load_causal_lm

    t0 = time.perf_counter()
    folder = materialise(name, tmp)
    cpu_lm, tok = load_causal_lm(str(folder), dtype="float32", device="cpu")
    cuda_lm, _ = load_causal_lm(str(folder), dtype="float32", device=device)
    res = {"load_s": time.perf_counter() - t0, "device": str(cuda_lm.device)}
    if not args.sampling_only:
        res["scoring"] = check_scoring(cpu_lm, cuda_lm, tok, args.sentences, args.cpu_sentences, device)
        print(f"## {name.name}\nscoring: {json.dumps(res['scoring'])}", flush=True)
    res["sampling"] = check_sampling(cpu_lm, cuda_lm, tok)
    print(f"## {name.name}\nsampling: {json.dumps(res['sampling'])}", flush=True)
    del cpu_lm
    res["speed"] = {}
    print("| model | shape | generate(do_sample=True) tokens/s | the backend's path tokens/s | ratio | engine ran |\n"
          "|---|---|---|---|---|---|", flush=True)  # fmt: skip
    for kind, rows, new in shapes:
        r = run_shape(cuda_lm, tok, kind, rows, new, 0.9, args.repeats)
        res["speed"][f"{kind}:{rows}x{new}"] = r
        print(f"| {name.name} | {kind}:{rows}x{new} | {r['transformers'][0]:.0f} | {r['engine'][0]:.0f} | "
              f"{r['engine'][0] / r['transformers'][0]:.2f}x | {r['engine_ran']} |", flush=True)  # fmt: skip
    del cuda_lm
    if torch.cuda.is_available():
        torch.cuda.empty_cache()
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--model", action="append", required=True, help="a Hugging Face folder (repeatable)")
    ap.add_argument("--sentences", type=int, default=512)
    ap.add_argument("--cpu-sentences", type=int, default=256, help="sentences also scored on the CPU")
    ap.add_argument("--shape", action="append", default=None, help="batch:PxT or n:NxT (bench_sample.py)")
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--sampling-only", action="store_true", help="skip the scoring checks and speeds")
    ap.add_argument("--out", help="write the results here as JSON")
    ap.add_argument("--device", default="cuda", help="the device under test (cpu: a dry run of this script)")
    args = ap.parse_args()
    if args.device.startswith("cuda") and not torch.cuda.is_available():
        raise SystemExit("check_gpu.py: no CUDA device is visible to torch")
    shapes = [parse_shape(s) for s in (args.shape or ["batch:32x64", "n:100x128"])]
    name = torch.cuda.get_device_name() if args.device.startswith("cuda") else args.device
    print(f"device: {name}; torch {torch.__version__}; TF32 matmul {torch.backends.cuda.matmul.allow_tf32}")
    results = {}
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.model:
            label = Path(name).name
            try:
                results[label] = check_model(Path(name), Path(tmp), args.device, args, shapes)
            except Exception:  # one model's failure is a finding; the others still run
                results[label] = {"error": traceback.format_exc()}
                print(f"## {label}\n{results[label]['error']}", flush=True)
            if args.out:  # after every model, so a run cut short keeps what it measured
                Path(args.out).write_text(json.dumps(results, indent=1, default=str))


if __name__ == "__main__":
    main()
