"""PMI and delta per word from merged counts (UnStereoEval paper, Eq. 1 and its generalisation Eq. 4).

- ``PMI(w, g) = ln p(w, g) - ln p(w) - ln p(g)``, ``p(w) = c(w) / N_uni``, ``p(w, g) = c(w, g) / N_pairs``;
- ``delta_{f,m}(w) = PMI(w, f) - PMI(w, m) = ln c(w, f) - ln c(w, m) - ln c(f) + ln c(m)`` (positive: female);
- natural log, no smoothing, NaN (undefined) wherever a count in the formula is 0;
- Eq. 4: ``delta_L(w) = sum_p weight_p * delta_p(w) / sum_p weight_p`` over the pairs p of L; with
  ``eq4_missing="skip"`` the sums run over the pairs whose delta is defined for w (undefined when none is),
  with ``"nan"`` any undefined pair delta makes delta_L undefined.

Output columns (the DELTA schema plus extras): ``word, delta, count, freq, pmi_<f>, pmi_<m>, cooc_<f>, cooc_<m>``
for the main pair (default she/he), ``delta__<female>_<male>`` for every pair of the list, ``delta_eq4``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

from unstereo.errors import InputError
from unstereo.unstereoeval.lexicon import Pair


def pair_column(pair: Pair | tuple[str, str]) -> str:
    """Column name of a pair's delta: ``delta__her_his``."""
    f, m = (pair.female, pair.male) if isinstance(pair, Pair) else pair
    return f"delta__{f}_{m}"


def _log(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(x > 0, np.log(np.where(x > 0, x, 1.0)), np.nan)


def compute_delta(
    unigrams: pd.DataFrame,
    cooc: pd.DataFrame,
    n_tokens: int,
    n_pairs: int,
    pairs: Sequence[Pair] = (),
    main_pair: tuple[str, str] = ("she", "he"),
    eq4_pairs: Sequence[str] | None = None,
    eq4_missing: str = "skip",
    min_count: int = 1,
) -> pd.DataFrame:
    """The delta table of every word with ``c(w) >= min_count`` (see the module docstring for the columns)."""
    if eq4_missing not in ("skip", "nan"):
        raise InputError(f"eq4_missing must be 'skip' or 'nan', not {eq4_missing!r}")
    uni = unigrams[unigrams["count"] >= min_count].sort_values("word").reset_index(drop=True)
    words = uni["word"].to_numpy(dtype=object)
    c_w = uni["count"].to_numpy(np.float64)
    unigram_of = dict(zip(unigrams["word"], unigrams["count"], strict=True))
    f0, m0 = main_pair
    needed = {f0, m0} | {w for p in pairs for w in (p.female, p.male)}
    co = cooc[cooc["target"].isin(needed)]
    wide = co.pivot_table(index="word", columns="target", values="count", aggfunc="sum", fill_value=0)
    wide = wide.reindex(index=pd.Index(words, name="word"), columns=sorted(needed), fill_value=0)
    log_c = {g: _log(wide[g].to_numpy()) for g in needed}
    log_cg = {g: (np.log(unigram_of[g]) if unigram_of.get(g, 0) > 0 else np.nan) for g in needed}

    def pmi(g: str) -> np.ndarray:
        return log_c[g] - np.log(n_pairs) - _log(c_w) + np.log(n_tokens) - log_cg[g] + np.log(n_tokens)

    def delta(f: str, m: str) -> np.ndarray:
        return log_c[f] - log_c[m] - log_cg[f] + log_cg[m]

    out = pd.DataFrame({"word": words, "delta": delta(f0, m0), "count": uni["count"].to_numpy(np.int64)})
    out["freq"] = c_w / n_tokens if n_tokens else np.nan
    for g in (f0, m0):
        out[f"pmi_{g}"] = pmi(g) if n_pairs and n_tokens else np.nan
        out[f"cooc_{g}"] = wide[g].to_numpy(np.int64)
    for p in pairs:
        out[pair_column(p)] = delta(p.female, p.male)
    chosen = [p for p in pairs if eq4_pairs is None or p.name in set(eq4_pairs)]
    if eq4_pairs is not None:
        unknown = set(eq4_pairs) - {p.name for p in pairs}
        if unknown:
            raise InputError(f"eq4 pairs {sorted(unknown)} are not in the pair list")
    if chosen:
        out["delta_eq4"] = eq4(out, chosen, eq4_missing)
    return out


def eq4(table: pd.DataFrame, pairs: Sequence[Pair], missing: str = "skip") -> np.ndarray:
    """Weighted mean of the per-pair delta columns of ``table`` (paper Eq. 4)."""
    d = np.column_stack([table[pair_column(p)].to_numpy(np.float64) for p in pairs])
    w = np.array([p.weight for p in pairs], dtype=np.float64)
    defined = ~np.isnan(d)
    if missing == "nan":
        with np.errstate(invalid="ignore", divide="ignore"):
            return np.where(defined.all(axis=1), (np.nan_to_num(d) * w).sum(axis=1) / w.sum(), np.nan)
    wsum = (defined * w).sum(axis=1)
    num = (np.where(defined, d, 0.0) * w).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(defined.any(axis=1) & (wsum != 0), num / wsum, np.nan)
