"""Seed words (paper section 2.3 and appendix C, docs/methods.md#vocabulary-and-seed-words): seeded samples
from the centre of the delta distribution.

"20 equal-sized bins from the empirical distribution of delta" means, in the authors' released word-selection
notebook, *equal-width* bins symmetric around 0: ``np.linspace(-M, M, 20)`` with ``M = ceil(max |delta|)`` over the
English vocabulary, i.e. 20 bin **edges** and so 19 bins of width ``2M / 19``. On PILE ``M = 5`` and the central bin
is ``(-5/19, 5/19] = (-0.26316, 0.26316]``; that is where the paper's bound 0.263 comes from (the authors then
sampled from ``-0.263 <= delta <= 0.263``). Equal-count bins cannot give that bound: on the released PILE table the
5 % quantile bins around 0 are (-0.070, -0.003] and (-0.003, 0.066]. Hence ``bin_edges`` counts edges, as the
notebook's ``num_bins`` does.

Sampling reproduces ``DataFrame.sample(n, replace=False, random_state=seed)`` of the pool sorted by delta:
``np.random.RandomState(seed).permutation(N)[:n]`` (the legacy RandomState stream, frozen by NumPy's compatibility
policy, is what pandas uses). The samples are united; ``n_samples`` counts how many samples drew a word (the value
of the released ``seed_words`` JSON). Because the permutation depends on the pool size N, the same seeds give
entirely different words as soon as one word more or less is in the pool.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field

import numpy as np
import pandas as pd

from unstereo.errors import ConfigError, InputError
from unstereo.log import get_logger

log = get_logger("unstereoeval.vocabulary")

PAPER_SEEDS = (9123, 19223, 8172361, 91283, 72613)
REGIONS = ("bound", "bin")


@dataclass(frozen=True)
class SeedSelection:
    """Parameters of the seed-word step (defaults = the paper's)."""

    bin_edges: int = 20  # equally spaced edges from -M to M (bin_edges - 1 equal-width bins)
    max_abs: float | None = None  # M; None = ceil(max |delta|) of the vocabulary
    region: str = "bound"  # "bound": |delta| <= bound; "bin": the words of one bin
    bound: float = 0.263
    bin_index: int | None = None  # with region "bin": 0-based bin; None = the bin that contains 0
    sample_size: int = 100
    seeds: tuple[int, ...] = field(default=PAPER_SEEDS)

    def __post_init__(self) -> None:
        if self.bin_edges < 2:
            raise ConfigError(f"needs at least 2 edges, got {self.bin_edges}", key="vocabulary.bin_edges")
        if self.region not in REGIONS:
            raise ConfigError(f"must be one of {REGIONS}, got {self.region!r}", key="vocabulary.region")
        if self.bound < 0:
            raise ConfigError(f"must be >= 0, got {self.bound}", key="vocabulary.bound")
        if self.max_abs is not None and self.max_abs <= 0:
            raise ConfigError(f"must be > 0, got {self.max_abs}", key="vocabulary.max_abs")
        if self.sample_size < 1:
            raise ConfigError(f"must be >= 1, got {self.sample_size}", key="vocabulary.sample_size")
        if not self.seeds:
            raise ConfigError("needs at least one seed", key="vocabulary.seeds")
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError(f"seeds must be distinct, got {list(self.seeds)}", key="vocabulary.seeds")


def derive_seeds(seed: int, n: int) -> tuple[int, ...]:
    """``n`` distinct sample seeds derived deterministically from one seed (when the config lists none)."""
    rng = np.random.default_rng(seed)
    out: list[int] = []
    while len(out) < n:
        s = int(rng.integers(0, 2**31 - 1))
        if s not in out:
            out.append(s)
    return tuple(out)


def delta_bin_edges(
    delta: pd.Series | np.ndarray, n_edges: int = 20, max_abs: float | None = None
) -> np.ndarray:
    """Equal-width bin edges symmetric around 0: ``linspace(-M, M, n_edges)``, M = ceil(max |delta|) by default."""
    values = np.asarray(delta, dtype=float)
    values = values[np.isfinite(values)]
    if max_abs is None:
        if values.size == 0:
            raise InputError("no word with a defined delta: cannot bin the delta distribution")
        max_abs = float(math.ceil(np.abs(values).max()))
        max_abs = max_abs or 1.0  # every delta exactly 0
    return np.linspace(-max_abs, max_abs, n_edges)


def assign_bins(delta: pd.Series | np.ndarray, edges: np.ndarray) -> np.ndarray:
    """0-based bin of each value for right-closed bins ``(e_k, e_k+1]`` (the lowest edge included, as
    ``pd.cut(..., include_lowest=True)``); -1 for NaN or values outside the edges."""
    x = np.asarray(delta, dtype=float)
    b = np.searchsorted(edges, x, side="left") - 1
    b[x == edges[0]] = 0
    b[~np.isfinite(x) | (x < edges[0]) | (x > edges[-1])] = -1
    return b


def central_bin(edges: np.ndarray) -> int:
    """The bin that contains 0 (right-closed, so with an even number of bins the one ending at 0)."""
    b = assign_bins(np.array([0.0]), edges)[0]
    if b < 0:
        raise ConfigError(f"the bins {edges[0]:g}..{edges[-1]:g} do not contain 0", key="vocabulary.max_abs")
    return int(b)


def sampling_pool(vocab: pd.DataFrame, params: SeedSelection, edges: np.ndarray) -> tuple[pd.DataFrame, dict]:
    """Words the samples are drawn from, sorted by delta (stable: ties keep the input order), and a description."""
    finite = vocab[np.isfinite(vocab["delta"].to_numpy(dtype=float))]
    bins = assign_bins(finite["delta"], edges)
    if params.region == "bound":
        mask = finite["delta"].abs().to_numpy() <= params.bound
        lo, hi = -params.bound, params.bound
        desc = f"|delta| <= {params.bound:g}"
    else:
        k = central_bin(edges) if params.bin_index is None else params.bin_index
        if not 0 <= k < len(edges) - 1:
            raise ConfigError(f"bin {k} does not exist (0..{len(edges) - 2})", key="vocabulary.bin_index")
        mask = bins == k
        lo, hi = float(edges[k]), float(edges[k + 1])
        desc = f"bin {k}: ({lo:.6g}, {hi:.6g}]"
    pool = finite.loc[mask].assign(bin=bins[mask]).sort_values("delta", kind="stable").reset_index(drop=True)
    info = {"region": desc, "region_low": lo, "region_high": hi, "pool_size": len(pool)}
    return pool, info


def sample_seed_words(
    vocab: pd.DataFrame, params: SeedSelection | None = None, edges: np.ndarray | None = None
) -> tuple[pd.DataFrame, dict]:
    """Draw ``len(params.seeds)`` samples of ``sample_size`` words from the pool and unite them.

    Returns the seed-word table (``word, delta, count, freq, n_samples, samples, bin`` sorted by word) and a summary
    (bin edges, per-bin counts, region, pool size, sizes) that is also logged.
    """
    params = params or SeedSelection()
    if edges is None:
        edges = delta_bin_edges(vocab["delta"], params.bin_edges, params.max_abs)
    pool, info = sampling_pool(vocab, params, edges)
    n_pool = len(pool)
    if n_pool == 0:
        raise InputError(f"no word of the vocabulary lies in the sampling region {info['region']}")
    size = params.sample_size
    if size > n_pool:
        log.warning(
            "sample_size %d exceeds the pool of %d words: every sample is the whole pool", size, n_pool
        )
        size = n_pool
    drawn: dict[int, list[int]] = {}
    for seed in params.seeds:
        # == pool.sample(n=size, replace=False, random_state=seed).index (pandas' RandomState.choice)
        for i in np.random.RandomState(seed).permutation(n_pool)[:size]:
            drawn.setdefault(int(i), []).append(seed)
    rows = sorted(drawn)
    out = pool.iloc[rows].copy()
    out["n_samples"] = [len(drawn[i]) for i in rows]
    out["samples"] = [";".join(map(str, drawn[i])) for i in rows]
    cols = ["word", "delta", "count", "freq", "n_samples", "samples", "bin"]
    out = out[[c for c in cols if c in out.columns]].sort_values("word", kind="stable").reset_index(drop=True)

    finite = vocab["delta"].to_numpy(dtype=float)
    finite = finite[np.isfinite(finite)]
    all_bins = assign_bins(finite, edges)
    per_bin = np.bincount(all_bins[all_bins >= 0], minlength=len(edges) - 1)
    summary = {
        **info,
        "bin_edges": [float(e) for e in edges],
        "bin_counts": [int(c) for c in per_bin],
        "central_bin": central_bin(edges) if edges[0] < 0 < edges[-1] else None,
        "words_with_delta": int(finite.size),
        "outside_bins": int((all_bins < 0).sum()),
        "draws": size * len(params.seeds),
        "unique_seed_words": len(out),
        "drawn_more_than_once": int((out["n_samples"] > 1).sum()),
        "params": {**asdict(params), "seeds": list(params.seeds)},
    }
    log.info(
        "Seed words: %d edges over [%g, %g] (bin width %.6g), region %s holds %d of %d words; %d samples of %d "
        "(seeds %s) -> %d unique words (%d drawn more than once)",
        len(edges),
        edges[0],
        edges[-1],
        (edges[-1] - edges[0]) / (len(edges) - 1),
        info["region"],
        n_pool,
        finite.size,
        len(params.seeds),
        size,
        ",".join(map(str, params.seeds)),
        len(out),
        summary["drawn_more_than_once"],
    )
    return out, summary


def parse_seeds(text: str | Sequence[int] | None) -> tuple[int, ...] | None:
    """``"9123,19223"`` or a list -> tuple of ints; None/empty -> None."""
    if text is None:
        return None
    if isinstance(text, str):
        parts = [p.strip() for p in text.split(",") if p.strip()]
        try:
            return tuple(int(p) for p in parts) or None
        except ValueError as exc:
            raise ConfigError(f"seeds must be integers separated by commas, got {text!r}") from exc
    return tuple(int(s) for s in text) or None
