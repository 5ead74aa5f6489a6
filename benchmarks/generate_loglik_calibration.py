"""The data behind ``generate.naturalness`` (``start_logprob``, ``min_token_logprob``): log-likelihoods of known-natural
sentences (the released USE-k templates marked natural) and of generated ones under the filter's model.

    python benchmarks/generate_loglik_calibration.py --released-dir <unstereo-eval>/data/datasets/raw \\
        --full results/generate/USE-5/full.parquet --cache results/score-cache.sqlite

From ``--n`` random natural templates of each released USE-5/10/20 (both fillings): the least-squares fit
``ln p ~ a * tokens + b`` (b is ``start_logprob``), then per benchmark the percentiles of the worse filling's
``(ln p - b) / tokens`` (the threshold is a low percentile of USE-5's). With ``--full``: each templated row of a
generate stage's full table with its value, status and reason, lowest first (to set against a reader's judgement).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.templates import fill_template
from unstereo.unstereoeval.generate.naturalness import make_scorer

DEFAULT_MODEL = {"resource": "smollm2", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}
QS = [1, 2, 5, 10, 25, 50]


def scores(scorer, templates: list[str]) -> np.ndarray:
    """(templates, 2, 2): (ln p, tokens) of the male and female filling of each template."""
    texts = [fill_template(t, g) for t in templates for g in ("male", "female")]
    return np.array(scorer.score(texts), dtype=float).reshape(-1, 2, 2)


def worse(s: np.ndarray, start: float) -> np.ndarray:
    return ((s[:, :, 0] - start) / s[:, :, 1]).min(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument(
        "--released-dir", required=True, help="folder with the released USE-5.csv, USE-10.csv, USE-20.csv"
    )
    ap.add_argument("--full", nargs="*", default=[])
    ap.add_argument("--n", type=int, default=300)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=None, help="score cache (SQLite)")
    args = ap.parse_args()
    scorer = make_scorer(DEFAULT_MODEL, args.cache)
    released = {}
    for k in (5, 10, 20):
        d = pd.read_csv(Path(args.released_dir) / f"USE-{k}.csv")
        d = d[(d["is_natural"] == True) & d["template"].str.contains("{pronoun", regex=False)]  # noqa: E712
        d = d[~d["template"].str.contains("\n")]
        released[k] = scores(
            scorer, d.sample(n=min(args.n, len(d)), random_state=args.seed)["template"].tolist()
        )
    pooled = np.concatenate([s.reshape(-1, 2) for s in released.values()])
    (a, b), *_ = np.linalg.lstsq(np.c_[pooled[:, 1], np.ones(len(pooled))], pooled[:, 0], rcond=None)
    print(f"fit on {len(pooled)} released natural sentences: ln p = {a:.3f} * tokens + {b:.2f}")
    for start in (0.0, round(b, 1)):
        print(f"start_logprob {start}: worse filling's (ln p - start) / tokens")
        for k, s in released.items():
            w = worse(s, start)
            print(
                f"  released USE-{k} ({len(w)} templates): "
                + ", ".join(f"p{q} {np.percentile(w, q):.2f}" for q in QS)
            )
    for path in args.full:
        full = pd.read_parquet(path)
        full = full[full["template"].notna()]
        w = worse(scores(scorer, full["template"].tolist()), round(b, 1))
        print(f"\n{path}: {len(w)} templated rows, start_logprob {round(b, 1)}")
        for v, t, st, reason in sorted(zip(w, full["template"], full["status"], full["reason"], strict=True)):
            print(f"{v:7.2f}  {st:10s} {fill_template(t, 'male')!r}  [{reason}]")


if __name__ == "__main__":
    main()
