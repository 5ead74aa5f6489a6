"""Forward passes the score cache saves in the robustness stage: each construction against a naive rescoring.

    python benchmarks/bench_robustness_cache.py PAIRS... [--construction NAME ...] [--adjective A ...]
        [--fraction 0.1 --fraction 0.25 --fraction 0.5] [--trials 20]

PAIRS are benchmark pair tables (``results/benchmarks/{benchmark}/eta-inf.parquet``). For each, the script does what
the workflow does with one model: the score stage scores the original pairs (filling the cache), then the
robustness stage scores every construction through the same cache, and the sub-samples reuse the original's scores.
The model is a counting stub (the counts do not depend on the model: a text reaches the model exactly when the
cache lacks it), so the figures are exact and take seconds. Prints, per benchmark and construction, the sentences a
naive rescoring runs and the forward passes made, and the totals with the ratio. Defaults: the offline config.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

import pandas as pd

from unstereo.robustness.build import ORIGINAL, construct, subsample
from unstereo.robustness.run import concat_pairs, forward_pass_cost
from unstereo.scoring.cache import ScoreCache
from unstereo.scoring.chunks import score_pairs
from unstereo.tables import PAIRS, read_table, write_table

RUN = {
    "model_id": "counting-stub",
    "model_revision": None,
    "gguf_file": None,
    "scorer": "causal",
    "dtype": "float32",
}


class Stub:
    """A scorer that records the texts it is asked for (its 'forward passes')."""

    kind = "causal"

    def __init__(self, seen: list[str]):
        self.seen = seen

    def score(self, sentences: list[str]) -> list[tuple[float, int]]:
        self.seen.extend(sentences)
        return [(-float(len(s)), len(s.split())) for s in sentences]

    def metadata(self) -> dict:
        return {"scorer": "causal"}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("pairs", nargs="+", type=Path)
    ap.add_argument(
        "--construction",
        action="append",
        default=None,
        help="default: the offline config's subject_clause_back adj_object synonyms negation",
    )
    ap.add_argument("--adjective", action="append", default=None, help="default: smart")
    ap.add_argument("--fraction", action="append", type=float, default=None, help="default: 0.1 0.25 0.5")
    ap.add_argument("--trials", type=int, default=20)
    args = ap.parse_args()
    names = args.construction or [
        "subject_clause_back",
        "object_clause_back",
        "adj_object",
        "synonyms",
        "negation",
    ]
    adjectives = args.adjective or ["smart"]
    fractions = args.fraction or [0.1, 0.25, 0.5]
    from unstereo.robustness.constructions import load_synonyms

    synonyms = load_synonyms()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp_path = Path(tmp)
        cache = ScoreCache(tmp_path / "cache.sqlite")
        for path in args.pairs:
            pairs = read_table(path, PAIRS)
            bench = str(pairs["benchmark"].iloc[0])
            stage: list[str] = []  # the score stage: the original pairs
            score_pairs(
                pairs,
                lambda s=stage: Stub(s),
                tmp_path / f"{bench}-score.parquet",
                model_name="m",
                run=RUN,
                cache=cache,
            )
            files = []
            for name in [ORIGINAL, *names]:
                out = tmp_path / bench / name / "pairs.parquet"
                write_table(construct(pairs, name, adjectives, synonyms), out, PAIRS)
                files.append(out)
            seen: list[str] = []
            all_pairs = concat_pairs(files)
            score_pairs(
                all_pairs.drop(columns=["construction", "original_pair_id", "changed"]),
                lambda s=seen: Stub(s),
                tmp_path / f"{bench}-robustness.parquet",
                model_name="m",
                run=RUN,
                cache=cache,
            )
            cost = forward_pass_cost(all_pairs, seen, "m")
            rows.append(
                pd.DataFrame(
                    {
                        "benchmark": bench,
                        "construction": "(score stage)",
                        "pairs": len(pairs),
                        "texts": 2 * len(pairs),
                        "forward_passes": len(stage),
                    },
                    index=[0],
                )
            )
            rows.append(cost.drop(columns="model"))
            for fraction in fractions:
                n = sum(len(subsample(pairs, fraction, t, 0)) for t in range(args.trials))
                name = f"sample_{fraction * 100:g}"
                rows.append(
                    pd.DataFrame(
                        {
                            "benchmark": bench,
                            "construction": name,
                            "pairs": n,
                            "texts": 2 * n,
                            "forward_passes": 0,
                        },
                        index=[0],
                    )
                )
    table = pd.concat(rows, ignore_index=True)
    print(table.to_string(index=False))
    stage_rows = table[table["construction"] != "(score stage)"]
    naive, passes = int(stage_rows["texts"].sum()), int(stage_rows["forward_passes"].sum())
    print(
        f"\nrobustness stage: {naive} sentences naive, {passes} forward passes ({naive / max(passes, 1):.2f}x fewer)"
    )


if __name__ == "__main__":
    main()
