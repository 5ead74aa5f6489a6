"""Time of the occupation correlations at the study's size (the study's cold runtime must not grow by more
than 10 %): random leans laid out as config/study.yaml gives them (4 models; UnStereoEval's 60 occupations in 2
variants, robustness's 60 under 3 constructions, FairPair 30, BiasTestGPT 12, sentiment 13), then
``unstereo.model_card.occupations.correlations`` (the rule's costly step: 9,999 permutations per test).

    python benchmarks/bench_occupations.py
"""

from __future__ import annotations

import time

import numpy as np
import pandas as pd

from unstereo.model_card import occupations as oc


def study_leans(seed: int = 0) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    stats = pd.DataFrame({"occupation": [f"occ{i}" for i in range(60)], "bergsma_pct_female": rng.uniform(0, 100, 60),
                          "bls_pct_female": rng.uniform(0, 100, 60), "bls_year": 2015})  # fmt: skip
    measures = [("unstereoeval", "all pairs", "lean", 60), ("unstereoeval", "occupation referent", "lean", 60),
                ("robustness", "original", "lean", 60), ("robustness", "subject_clause_back", "lean", 60),
                ("robustness", "synonymized", "lean", 60), ("fairpair", "F (jaccard, k = 5)", "magnitude", 30),
                ("biastest", "Professions_vs_Gender", "lean", 12), ("sentiment", "vader", "sentiment", 13)]  # fmt: skip
    rows = [dict(model=m, method=me, variant=v, occupation=f"occ{i}", term=f"occ{i}", kind=k, lean=rng.normal(),
                 unit="u", n_items=4, neutral_share=np.nan)
            for m in ("smollm2", "gemma3-270m", "qwen-coder", "qwen-coder-1.5b") for me, v, k, n in measures
            for i in range(n)]  # fmt: skip
    return oc.leans_table(rows, stats)


def main() -> None:
    leans = study_leans()
    t0 = time.process_time()
    corr = oc.correlations(leans)
    cpu = time.process_time() - t0
    print(f"{len(leans)} lean rows -> {len(corr)} correlation rows: {cpu:.1f} s of CPU")


if __name__ == "__main__":
    main()
