"""Distribution of per-token log-likelihoods (the generate stage's naturalness filter) on known-natural sentences
and on generated ones: the data behind ``generate.naturalness.min_token_logprob``.

    python benchmarks/generate_loglik_calibration.py --released <USE-5.csv> --full results/generate/USE-5/full.parquet

``--released``: a released USE-k raw CSV (column ``template``; rows with ``is_natural`` True), a random sample of
``--n`` templates; ``--full``: a generate stage's full table (its templated rows). Both fillings of each template are
scored under ``--model`` (default the config's SmolLM2); prints percentiles and, for the generated rows, each
template's worse per-token value (so a reader can set it against their own reading).
"""

from __future__ import annotations

import argparse

import numpy as np
import pandas as pd

from unstereo.generate.naturalness import make_scorer, token_logprob
from unstereo.templates import fill_template

DEFAULT_MODEL = {"resource": "smollm2", "gguf_file": "SmolLM2-135M-Instruct.Q4_1.gguf"}


def worse(scorer, templates: list[str]) -> np.ndarray:
    """min over the male and female filling of each template's per-token log-likelihood."""
    texts = [fill_template(t, g) for t in templates for g in ("male", "female")]
    lp = np.array(token_logprob(scorer, texts)).reshape(-1, 2)
    return lp.min(axis=1)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--released", required=True)
    ap.add_argument("--full", nargs="*", default=[])
    ap.add_argument("--n", type=int, default=400)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--cache", default=None, help="score cache (SQLite)")
    args = ap.parse_args()
    scorer = make_scorer(DEFAULT_MODEL, args.cache)
    rel = pd.read_csv(args.released)
    rel = rel[(rel["is_natural"] == True) & rel["template"].str.contains("{pronoun", regex=False)]  # noqa: E712
    rel = rel[~rel["template"].str.contains("\n")]
    sample = rel.sample(n=min(args.n, len(rel)), random_state=args.seed)["template"].tolist()
    r = worse(scorer, sample)
    qs = [1, 2, 5, 10, 25, 50]
    print(f"released natural ({len(r)} templates), worse filling per token: "
          + ", ".join(f"p{q} {np.percentile(r, q):.2f}" for q in qs))  # fmt: skip
    for path in args.full:
        full = pd.read_parquet(path)
        full = full[full["template"].notna()]
        templates = full["template"].tolist()
        g = worse(scorer, templates)
        print(
            f"\n{path}: {len(g)} templated rows; " + ", ".join(f"p{q} {np.percentile(g, q):.2f}" for q in qs)
        )
        for t, v, st, reason in sorted(zip(templates, g, full["status"], full["reason"], strict=True),
                                       key=lambda x: x[1]):  # fmt: skip
            print(f"{v:7.2f}  {st:10s} {fill_template(t, 'male')!r}  [{reason}]")


if __name__ == "__main__":
    main()
