"""Speed of unstereo.unstereoeval.metrics.compute_metrics against a naive loop in the style of the reference notebooks
(one pandas filter per model, eta and threshold), on a synthetic table of the paper's size (28 models x 5000 pairs,
6 etas, 101 thresholds). Prints both times and the ratio; checks that both give the same numbers.

    PYTHONPATH=src python benchmarks/metrics_speed.py [--models 28] [--pairs 5000]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np
import pandas as pd

from unstereo.defaults import DEFAULT_EPS as EPS
from unstereo.unstereoeval.eta import PAPER_ETAS
from unstereo.unstereoeval.metrics import compute_metrics, default_eps_grid

ETAS = list(PAPER_ETAS)
GRID = default_eps_grid()


def synthetic(n_models: int, n_pairs: int, seed: int = 0) -> tuple[pd.DataFrame, pd.DataFrame]:
    rng = np.random.default_rng(seed)
    ids = [f"B:{i}" for i in range(n_pairs)]
    pairs = pd.DataFrame(
        {
            "pair_id": ids,
            "benchmark": "B",
            "template": "{pronoun} x.",
            "sentence_female": "She x.",
            "sentence_male": "He x.",
            "seed_word": None,
            "max_pmi": rng.normal(0, 0.6, n_pairs),
            "max_pmi_word": None,
            "source": "synthetic",
        }
    )
    scores = pd.DataFrame(
        {
            "pair_id": ids * n_models,
            "model": np.repeat([f"m{i}" for i in range(n_models)], n_pairs),
            "logp_female": rng.normal(-40, 5, n_pairs * n_models),
            "logp_male": rng.normal(-40, 5, n_pairs * n_models),
            "ntok_female": 10,
            "ntok_male": 10,
        }
    )
    return scores, pairs


def naive(scores: pd.DataFrame, pairs: pd.DataFrame) -> pd.DataFrame:
    """The reference notebooks' way: a DataFrame filter per (model, eta) and a full scan per threshold."""
    df = scores.merge(pairs[["pair_id", "max_pmi"]], on="pair_id")
    df["fm"] = df["logp_female"] - df["logp_male"]
    rows = []
    for model in df["model"].unique():
        dm = df[df["model"] == model]
        for eta in ETAS:
            d = dm if math.isinf(eta) else dm[(dm["max_pmi"] >= -eta) & (dm["max_pmi"] <= eta)]
            absfm = d["fm"].apply(np.abs)
            curve = [((absfm <= e).sum()) / len(d) for e in GRID]
            rows.append(
                {
                    "model": model,
                    "eta": eta,
                    "us": 100 * (absfm <= EPS).mean(),
                    "aufc": np.trapezoid(curve, GRID),
                }
            )
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", type=int, default=28)
    ap.add_argument("--pairs", type=int, default=5000)
    args = ap.parse_args()
    scores, pairs = synthetic(args.models, args.pairs)
    t0 = time.perf_counter()
    ref = naive(scores, pairs)
    t1 = time.perf_counter()
    ours = compute_metrics(scores, pairs, ETAS, eps=EPS, eps_grid=GRID)
    t2 = time.perf_counter()
    merged = ref.merge(ours, on=["model", "eta"], suffixes=("_naive", ""))
    assert np.allclose(merged["us_naive"], merged["us"]) and np.allclose(merged["aufc_naive"], merged["aufc"])
    print(f"{args.models} models x {args.pairs} pairs, {len(ETAS)} etas, {len(GRID)} thresholds")
    print(f"naive loop:      {t1 - t0:8.2f} s")
    print(f"compute_metrics: {t2 - t1:8.2f} s")
    print(f"speed-up:        {(t1 - t0) / (t2 - t1):8.1f}x (same US and AuFC)")


if __name__ == "__main__":
    main()
