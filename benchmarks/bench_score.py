"""Sentence scoring speed: the scorer against lm-evaluation-harness and a naive loop, same sentences, same run.

    python benchmarks/bench_score.py [--model data/external/gemma3/gemma-3-270m-q4_k_m.gguf] [--pairs 1000]
        [--threads 2] [--batch-size auto] [--path auto] [--lmeval-batch-size 32] [--naive-pairs 100]
        [--templates USE-10] [--sides ours,lm-eval,naive] [--rounds 1]

Sentences: ``--pairs`` templates of the reference release's ``--templates`` table (``$UNSTEREO_REFERENCE``,
``../shared/reference`` or ``data/external/reference``; synthetic 5-word templates when it is not found), each
filled female and male. Each side runs in its own process, so that its time is the whole process (start-up,
imports, model load, scoring) and its peak RSS its own:
- ``ours``: ``unstereo``'s loading (``unstereo.models.load.load_causal_lm``) and :class:`~unstereo.scoring.CausalScorer` (fp32 on
  CPU, ``--path`` and ``--batch-size`` as given);
- ``lm-eval``: lm-evaluation-harness (``pip install -e '.[lmeval]'``) ``HFLM.loglikelihood`` with an empty context
  (its prefix token, BOS, then the sentence), batch ``--lmeval-batch-size``, on the same converted Hugging Face
  folder; reported as missing when the package is not installed;
- ``naive``: one forward pass per sentence, log_softmax, sum, on the first ``--naive-pairs`` pairs;
- ``ours-torch`` (not run unless named): ``ours`` with PyTorch's default matmul instead of oneDNN's
  (``CausalScorer(onednn=False)``, see :mod:`unstereo.engine.kernels.onednn`).
Prints pairs per second (whole process and scoring alone), the ratio to lm-eval (target >= 1.3x, whole process, on
both models), to the naive loop, the largest per-sentence score differences and each side's peak RSS. With
``--rounds`` > 1 the sides run in turn that many times and each keeps its fastest run (for a busy machine).
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
DEFAULT_MODEL = REPO / "data/external/smollm2/SmolLM2-135M-Instruct.Q4_1.gguf"
SIDES = ("ours", "lm-eval", "naive", "ours-torch")
DEFAULT_SIDES = ("ours", "lm-eval", "naive")


def reference_templates(n: int, table: str = "USE-10", seed: int = 0) -> tuple[list[str], str]:
    """n templates of the reference release's ``table`` (synthetic 5-word ones when it is absent), and where from."""
    import pandas as pd

    candidates = [
        os.environ.get("UNSTEREO_REFERENCE"),
        REPO.parent / "shared" / "reference",
        REPO / "data" / "external" / "reference",
    ]
    for base in filter(None, candidates):
        path = Path(base) / "unstereo-eval" / "data" / "datasets" / "raw" / f"{table}.csv"
        if path.is_file():
            templates = pd.read_csv(path, keep_default_na=False)["template"].tolist()
            return random.Random(seed).sample(templates, min(n, len(templates))), str(path)
    rng = random.Random(seed)
    subjects, verbs = (
        ["{pronoun}", "{pronoun1} friend", "The doctor"],
        ["loved", "painted", "found", "helped"],
    )
    objects = ["the old house", "{pronoun2} quietly", "{pronoun1} bright garden", "the small boat today"]
    out = [f"{rng.choice(subjects)} {rng.choice(verbs)} {rng.choice(objects)}." for _ in range(n)]
    return out, "synthetic"


def naive_scores(model, tokenizer, sentences: list[str]) -> list[float]:
    """The obvious loop: one forward pass per sentence, log_softmax, sum over the sentence's tokens."""
    import torch

    out = []
    with torch.inference_mode():
        for s in sentences:
            ids = torch.tensor(
                [[tokenizer.bos_token_id, *tokenizer(s, add_special_tokens=False)["input_ids"]]]
            )
            logits = model(input_ids=ids).logits[0, :-1]
            out.append(float(torch.log_softmax(logits.float(), -1).gather(-1, ids[0, 1:, None]).sum()))
    return out


def lmeval_available() -> bool:
    import importlib.util

    return importlib.util.find_spec("lm_eval") is not None


# ------------------------------------------------------------------------------------ one side, in its process


def worker(args: argparse.Namespace) -> None:
    """Score the sentences of ``--sentences`` with one side; write scores and timings to ``--out``."""
    import torch

    torch.set_num_threads(args.threads)
    sentences = json.loads(Path(args.sentences).read_text())
    t0 = time.perf_counter()
    info: dict = {}
    if args.worker == "lm-eval":
        from lm_eval.api.instance import Instance
        from lm_eval.models.huggingface import HFLM

        lm = HFLM(pretrained=args.folder, batch_size=args.lmeval_batch_size, device="cpu", dtype="float32")
        t1 = time.perf_counter()
        requests = [Instance("loglikelihood", {}, ("", s), i) for i, s in enumerate(sentences)]
        scores = [lp for lp, _ in lm.loglikelihood(requests, disable_tqdm=True)]
    else:
        from unstereo.models.load import load_causal_lm
        from unstereo.scoring import CausalScorer

        model, tokenizer = load_causal_lm(args.model, dtype="float32", device="cpu")
        t1 = time.perf_counter()
        if args.worker == "naive":
            scores = naive_scores(model, tokenizer, sentences)
        else:
            batch_size = args.batch_size if args.batch_size == "auto" else int(args.batch_size)
            scorer = CausalScorer(
                model,
                tokenizer,
                device="cpu",
                batch_size=batch_size,
                path=args.path,
                onednn=args.worker == "ours",
            )
            scores = [lp for lp, _ in scorer.score(sentences)]
            info = {"path": scorer.path, "largest_batch": scorer.batcher.largest_batch, **scorer.metadata()}
    t2 = time.perf_counter()
    result = {"scores": scores, "load_s": t1 - t0, "score_s": t2 - t1, **info}
    Path(args.out).write_text(json.dumps(result))


def run_side(side: str, args: argparse.Namespace, sentences_file: Path, out: Path) -> dict:
    """Run one side in a child process: its result, whole-process seconds and peak RSS (MiB)."""
    cmd = [
        sys.executable,
        __file__,
        "--worker",
        side,
        "--sentences",
        str(sentences_file),
        "--out",
        str(out),
        "--model",
        args.model,
        "--folder",
        str(args.folder),
        "--threads",
        str(args.threads),
        "--batch-size",
        str(args.batch_size),
        "--path",
        args.path,
        "--lmeval-batch-size",
        str(args.lmeval_batch_size),
    ]
    env = {**os.environ, "OMP_NUM_THREADS": str(args.threads), "TOKENIZERS_PARALLELISM": "false"}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stderr = proc.stderr.read() if proc.stderr else ""
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"side {side} failed:\n{stderr[-3000:]}")
    result = json.loads(out.read_text())
    return {**result, "wall_s": wall, "rss_mib": usage.ru_maxrss / 1024}


# ------------------------------------------------------------------------------------------------- the report


def max_diff(a: list[float], b: list[float]) -> float:
    return max(abs(x - y) for x, y in zip(a, b, strict=False))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=str(DEFAULT_MODEL))
    ap.add_argument("--pairs", type=int, default=1000)
    ap.add_argument("--templates", default="USE-10", help="reference template table: USE-5, USE-10 or USE-20")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch-size", default="auto", help="ours: sentences per forward pass, or auto")
    ap.add_argument("--path", default="auto", help="ours: scoring path (auto, tree, padded, full)")
    ap.add_argument("--lmeval-batch-size", type=int, default=32)
    ap.add_argument("--naive-pairs", type=int, default=100, help="pairs for the naive loop (it is slow)")
    ap.add_argument(
        "--sides", default=",".join(DEFAULT_SIDES), help="comma-separated: ours, lm-eval, naive, ours-torch"
    )
    ap.add_argument(
        "--rounds", type=int, default=1, help="run the sides in turn this many times, keep the best"
    )
    ap.add_argument("--worker", choices=SIDES, help=argparse.SUPPRESS)
    ap.add_argument("--sentences", help=argparse.SUPPRESS)
    ap.add_argument("--out", help=argparse.SUPPRESS)
    ap.add_argument("--folder", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args)
        return

    from unstereo.models.load import convert_gguf
    from unstereo.models.spec import resolve_model
    from unstereo.templates import fill_template

    spec = resolve_model(args.model)
    args.folder = (
        convert_gguf(spec) if spec.gguf_file else Path(spec.path)
    )  # converted once, before any timing
    templates, source = reference_templates(args.pairs, args.templates)
    sentences = [fill_template(t, g) for t in templates for g in ("female", "male")]
    n_pairs = len(templates)
    sides = [s.strip() for s in args.sides.split(",") if s.strip()]
    if "lm-eval" in sides and not lmeval_available():
        print("lm-eval: not installed (pip install -e '.[lmeval]'); skipping that side")
        sides.remove("lm-eval")
    naive_n = min(args.naive_pairs, n_pairs)

    best: dict[str, dict] = {}
    with tempfile.TemporaryDirectory() as tmp:
        files = {}
        for side in sides:
            files[side] = Path(tmp) / f"{side}.json"
            subset = sentences[: 2 * naive_n] if side == "naive" else sentences
            files[side].write_text(json.dumps(subset))
        for round_ in range(args.rounds):
            for side in sides:
                r = run_side(side, args, files[side], Path(tmp) / f"{side}.out.json")
                print(
                    f"  round {round_ + 1} {side}: {r['wall_s']:.1f} s whole process, {r['score_s']:.1f} s scoring",
                    flush=True,
                )
                if side not in best or r["wall_s"] < best[side]["wall_s"]:
                    best[side] = r

    print(
        f"model {args.model}; {n_pairs} pairs ({source}); {args.threads} threads; fp32 on CPU; "
        f"ours: batch size {args.batch_size}, path {best.get('ours', {}).get('path', '-')}, "
        f"matmul {best.get('ours', {}).get('matmul', '-')}; "
        f"lm-eval batch size {args.lmeval_batch_size}; best of {args.rounds} round(s)"
    )
    print(
        f"{'side':8} {'pairs':>6} {'whole s':>8} {'pairs/s':>8} {'score s':>8} {'pairs/s':>8} {'peak RSS':>10}"
    )
    for side in sides:
        r = best[side]
        n = naive_n if side == "naive" else n_pairs
        print(
            f"{side:8} {n:6d} {r['wall_s']:8.1f} {n / r['wall_s']:8.2f} {r['score_s']:8.1f} "
            f"{n / r['score_s']:8.2f} {r['rss_mib']:7.0f} MiB"
        )
    if "ours" in best and "lm-eval" in best:
        ours, lm = best["ours"], best["lm-eval"]
        print(
            f"ours vs lm-eval: {lm['wall_s'] / ours['wall_s']:.2f}x whole process (target >= 1.3x), "
            f"{lm['score_s'] / ours['score_s']:.2f}x scoring alone"
        )
        print(f"max |ours - lm-eval| per sentence: {max_diff(ours['scores'], lm['scores']):.2e}")
    if "ours" in best and "ours-torch" in best:
        ours, plain = best["ours"], best["ours-torch"]
        print(
            f"ours ({ours.get('matmul')}) vs ours-torch ({plain.get('matmul')}): "
            f"{plain['wall_s'] / ours['wall_s']:.2f}x whole process, {plain['score_s'] / ours['score_s']:.2f}x "
            f"scoring alone; max |diff| per sentence {max_diff(ours['scores'], plain['scores']):.2e}"
        )
    if "ours" in best and "naive" in best:
        ours, naive = best["ours"], best["naive"]
        rate = (n_pairs / ours["score_s"]) / (naive_n / naive["score_s"])
        print(f"ours vs naive loop: {rate:.2f}x pairs per second of scoring")
        print(
            f"max |ours - naive| per sentence (first {2 * naive_n}): {max_diff(ours['scores'], naive['scores']):.2e}"
        )


if __name__ == "__main__":
    main()
