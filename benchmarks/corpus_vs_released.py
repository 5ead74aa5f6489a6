"""How close is a corpus delta to the released PILE delta? Spearman over common words with enough counts.

    python benchmarks/corpus_vs_released.py [results/delta/corpus.parquet] [results/delta/released.parquet]
        [--min-cooc 10] [--strong 1.0]

Words qualify when both c(w, she) and c(w, he) in the corpus are >= --min-cooc. Prints the Spearman correlation
of delta over the common qualifying words, and the sign agreement on the strongly gendered ones
(|released delta| >= --strong), plus a few examples.
"""

from __future__ import annotations

import argparse

import numpy as np
from scipy.stats import spearmanr

from unstereo.tables import read_delta


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("corpus", nargs="?", default="results/delta/corpus.parquet")
    ap.add_argument("released", nargs="?", default="results/delta/released.parquet")
    ap.add_argument("--min-cooc", type=int, default=10)
    ap.add_argument("--strong", type=float, default=1.0)
    args = ap.parse_args()
    ours = read_delta(args.corpus)
    ref = read_delta(args.released)[["word", "delta"]].rename(columns={"delta": "released"})
    ours = ours[ours["delta"].notna()]
    both = ours.merge(ref, on="word")
    print(f"words with a defined delta: corpus {len(ours)}, released {len(ref)}, common {len(both)}")
    for k in sorted({1, 5, args.min_cooc, 25}):
        sel = both[(both["cooc_she"] >= k) & (both["cooc_he"] >= k)]
        rho = spearmanr(sel["delta"], sel["released"]).statistic if len(sel) > 2 else np.nan
        strong = sel[sel["released"].abs() >= args.strong]
        agree = (
            float((np.sign(strong["delta"]) == np.sign(strong["released"])).mean()) if len(strong) else np.nan
        )
        print(
            f"c(w,she), c(w,he) >= {k:3d}: {len(sel):6d} words, Spearman {rho:.3f}; "
            f"|released delta| >= {args.strong}: {len(strong)} words, same sign {agree:.1%}"
        )
    sel = both[(both["cooc_she"] >= args.min_cooc) & (both["cooc_he"] >= args.min_cooc)]
    strong = sel[sel["released"].abs() >= args.strong].sort_values("released")
    cols = ["word", "delta", "released", "cooc_she", "cooc_he"]
    print("most male-skewed in the release:\n" + strong.head(8)[cols].to_string(index=False))
    print("most female-skewed in the release:\n" + strong.tail(8)[cols].to_string(index=False))


if __name__ == "__main__":
    main()
