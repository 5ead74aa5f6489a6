"""Vocabulary stage: English filter, count cutoff, delta bins, seeded sampling (hand-made tables, worked by hand)."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.errors import ConfigError, InputError, ResourceError
from unstereo.unstereoeval.vocabulary import (
    EnglishFilter,
    SeedSelection,
    delta_bin_edges,
    derive_seeds,
    english_vocabulary,
    load_lid,
    load_wordnet,
    sample_seed_words,
    sampling_pool,
)
from unstereo.unstereoeval.vocabulary.compare import (
    drawn_positions,
    infer_pool_sizes,
    overlap,
)
from unstereo.unstereoeval.vocabulary.english import count_cutoff, is_alphabetic
from unstereo.unstereoeval.vocabulary.seeds import assign_bins, central_bin, parse_seeds

# ------------------------------------------------------------------------------------------- English filter

# word: (lid language, lid confidence, WordNet synsets, count)
STUB = {
    "cat": ("en", 0.9, 1, 100),  # lid AND WordNet
    "vaguely": ("en", 0.7, 0, 50),  # lid only
    "influenza": ("it", 0.8, 1, 10),  # WordNet only, but rare
    "hola": ("es", 0.9, 0, 40),  # neither
    "hmm": ("en", 0.6, 0, 30),  # confidence exactly 0.6: not > 0.6
    "49ers": ("en", 0.99, 1, 1000),  # not alphabetic: dropped before any look-up
}


def stub_table() -> pd.DataFrame:
    words = list(STUB)
    return pd.DataFrame(
        {"word": words, "delta": np.linspace(-0.5, 0.5, len(words)), "count": [STUB[w][3] for w in words]}
    )


class Stubs:
    def __init__(self):
        self.seen: list[str] = []

    def lid(self, word):
        self.seen.append(word)
        return STUB[word][0], STUB[word][1]

    def wordnet(self, word):
        return STUB[word][2]


def test_is_alphabetic():
    assert is_alphabetic("cat") and is_alphabetic("café")
    assert not is_alphabetic("café", "ascii")
    assert not is_alphabetic("49ers") and not is_alphabetic("well-known") and not is_alphabetic("")


def test_count_cutoff_linear_quantile():
    # sorted [10, 20, 30, 40, 50]: the 0.2 quantile sits at position 0.2 * 4 = 0.8 -> 10 + 0.8 * 10 = 18
    assert count_cutoff(pd.Series([50, 10, 40, 20, 30]), 0.2) == pytest.approx(18.0)
    assert count_cutoff(pd.Series([50, 10]), 0.0) == -math.inf  # 0 disables the cutoff


def test_english_or_rule_and_quantile_cutoff():
    stubs = Stubs()
    vocab, stats = english_vocabulary(stub_table(), stubs.lid, stubs.wordnet, EnglishFilter())
    # Alphabetic counts sorted [10, 30, 40, 50, 100] -> 0.2 quantile at position 0.8 -> 10 + 0.8 * 20 = 26.
    # English: cat (both), vaguely (lid 0.7 > 0.6), influenza (WordNet); hola and hmm (0.6 is not > 0.6) are not.
    # influenza's count 10 <= 26 -> dropped. Kept: cat (both), vaguely (lid only).
    assert list(vocab["word"]) == ["cat", "vaguely"]
    assert list(vocab["english_by"]) == ["both", "lid"]
    assert "49ers" not in stubs.seen  # look-ups only for alphabetic words
    assert stats["count_cutoff"] == pytest.approx(26.0)
    expected = {
        "words_in": 6,
        "alphabetic": 5,
        "lid_en": 2,
        "wordnet": 2,
        "english": 3,
        "english_lid_only": 1,
        "english_wordnet_only": 1,
        "english_both": 1,
        "english_at_or_below_cutoff": 1,
        "kept": 2,
        "kept_lid_only": 1,
        "kept_wordnet_only": 0,
        "kept_both": 1,
    }
    assert {k: stats[k] for k in expected} == expected
    # freq = count / total count of the input table (1230)
    assert vocab.loc[0, "freq"] == pytest.approx(100 / 1230)


def test_quantile_population():
    stubs = Stubs()
    table = stub_table()
    # q = 0.5. Alphabetic [10, 30, 40, 50, 100]: median 40 -> keep > 40: cat, vaguely.
    v1, s1 = english_vocabulary(table, stubs.lid, stubs.wordnet, EnglishFilter(freq_quantile=0.5))
    assert s1["count_cutoff"] == 40 and list(v1["word"]) == ["cat", "vaguely"]
    # English [10, 50, 100]: median 50 -> keep > 50: cat only.
    params = EnglishFilter(freq_quantile=0.5, freq_population="english")
    v2, s2 = english_vocabulary(table, stubs.lid, stubs.wordnet, params)
    assert s2["count_cutoff"] == 50 and list(v2["word"]) == ["cat"]
    # No cutoff: all three English words, influenza by WordNet only.
    v3, s3 = english_vocabulary(table, stubs.lid, stubs.wordnet, EnglishFilter(freq_quantile=0))
    assert list(v3["word"]) == ["cat", "vaguely", "influenza"] and s3["count_cutoff"] is None
    assert s3["kept_wordnet_only"] == 1


def test_english_params_validated():
    with pytest.raises(ConfigError, match="freq_quantile"):
        EnglishFilter(freq_quantile=1.5)
    with pytest.raises(ConfigError, match="freq_population"):
        EnglishFilter(freq_population="all")


def test_missing_resources_name_the_resource(tmp_path):
    with pytest.raises(ResourceError, match="'lid176'"):
        load_lid(tmp_path / "nothing")
    with pytest.raises(ResourceError, match="'wordnet'"):
        load_wordnet(tmp_path)


def test_real_resources(resource):
    lid = load_lid(resource("lid176"))
    wordnet = load_wordnet(resource("wordnet"))
    assert lid("government")[0] == "en" and lid("government")[1] > 0.6
    assert wordnet("dog") > 0 and wordnet("kumppanuuden") == 0
    words = ["government", "versus", "dog", "que", "kumppanuuden", "49ers"]
    table = pd.DataFrame({"word": words, "delta": [0.1] * 6, "count": [100] * 6})
    vocab, stats = english_vocabulary(table, lid, wordnet, EnglishFilter(freq_quantile=0))
    # government: lid en 0.94 and 4 synsets; versus: lid en 0.87, no synset; dog: lid.176.ftz has no n-gram for
    # it (prior 0.12) but 8 synsets; que (es) and kumppanuuden (fi) have no synset; 49ers is not alphabetic.
    assert dict(zip(vocab["word"], vocab["english_by"], strict=True)) == {
        "government": "both",
        "versus": "lid",
        "dog": "wordnet",
    }
    assert stats["alphabetic"] == 5


# ------------------------------------------------------------------------------------------------- bins


def test_bin_edges_reproduce_paper_bound():
    # max |delta| = 4.7 -> M = ceil = 5; 20 edges -> 19 bins of width 10/19; central bin (-5/19, 5/19] and
    # 5/19 = 0.26316 is the paper's 0.263.
    edges = delta_bin_edges(pd.Series([-4.7, 0.0, 3.1, np.nan]), 20)
    assert len(edges) == 20 and edges[0] == -5 and edges[-1] == 5
    assert central_bin(edges) == 9
    assert edges[9] == pytest.approx(-5 / 19) and edges[10] == pytest.approx(5 / 19)
    assert round(edges[10], 3) == 0.263
    # right-closed bins, lowest edge included, NaN and out-of-range -> -1
    # (a value on an edge belongs to the bin on its left)
    b = assign_bins(np.array([edges[10], edges[9], 0.0, -5.0, 5.0, np.nan, 6.0, -4.2]), edges)
    assert list(b) == [9, 8, 9, 0, 18, -1, -1, 1]  # -4.2 in (-5 + 10/19, -5 + 20/19] = (-4.47, -3.95]


def test_central_bin_with_even_number_of_bins():
    # 3 edges [-1, 0, 1] -> bins (-1, 0] and (0, 1]: 0 belongs to the first (right-closed)
    edges = delta_bin_edges(pd.Series([0.4, -0.9]), 3)
    assert list(edges) == [-1, 0, 1] and central_bin(edges) == 0


def hand_vocab() -> pd.DataFrame:
    # 40 words w00..w39; deltas chosen around the central bin (-5/19, 5/19] of M = 5
    deltas = [-4.2, 3.3, 0.2631, -0.263, 0.263, -0.2632, 1.0, -1.0] + list(np.linspace(-0.25, 0.25, 32))
    return pd.DataFrame(
        {"word": [f"w{i:02d}" for i in range(40)], "delta": deltas, "count": np.arange(40) + 10, "freq": 0.01}
    )


def test_sampling_pool_bound_vs_central_bin():
    vocab = hand_vocab()
    edges = delta_bin_edges(vocab["delta"], 20)
    pool_bound, info = sampling_pool(vocab, SeedSelection(region="bound", bound=0.263), edges)
    pool_bin, info_bin = sampling_pool(vocab, SeedSelection(region="bin"), edges)
    # bound: |d| <= 0.263 -> the 32 linspace words + -0.263 + 0.263 = 34 (0.2631 and -0.2632 are outside)
    assert len(pool_bound) == 34 and info["pool_size"] == 34
    # central bin (-0.263158, 0.263158]: also 0.2631; -0.2632 is below -0.263158 -> 35
    assert len(pool_bin) == 35 and "w02" in set(pool_bin["word"]) and "w05" not in set(pool_bin["word"])
    assert info_bin["region_low"] == pytest.approx(-5 / 19)
    # the pool is sorted by delta
    assert pool_bound["delta"].is_monotonic_increasing
    # another bin: bin 1 = (-4.47, -3.95] holds only -4.2
    pool0, _ = sampling_pool(vocab, SeedSelection(region="bin", bin_index=1), edges)
    assert list(pool0["word"]) == ["w00"]
    with pytest.raises(ConfigError, match="bin_index"):
        sampling_pool(vocab, SeedSelection(region="bin", bin_index=19), edges)


def pandas_sample_equivalent(pool: pd.DataFrame, n: int, seed: int) -> list[int]:
    """Positions drawn by ``pool.sample(n=n, random_state=seed)`` (the oracle our sampler is checked against)."""
    return [pool.index.get_loc(i) for i in pool.sample(n=n, replace=False, random_state=seed).index]


def test_sampler_matches_pandas_sample_and_unites_samples():
    vocab = hand_vocab()
    params = SeedSelection(sample_size=10, seeds=(9123, 19223, 8172361))
    seeds, summary = sample_seed_words(vocab, params)
    pool, _ = sampling_pool(vocab, params, delta_bin_edges(vocab["delta"], 20))
    # Oracle: pandas' DataFrame.sample on the delta-sorted pool, united over the seeds
    expected: dict[str, list[int]] = {}
    for s in params.seeds:
        assert sorted(pandas_sample_equivalent(pool, 10, s)) == sorted(
            i for i, n in drawn_positions(len(pool), 10, [s]).items()
        )
        for w in pool.sample(n=10, random_state=s)["word"]:
            expected.setdefault(w, []).append(s)
    assert dict(zip(seeds["word"], seeds["n_samples"], strict=True)) == {
        w: len(v) for w, v in expected.items()
    }
    assert seeds["n_samples"].sum() == 30 == summary["draws"]
    assert summary["unique_seed_words"] == len(expected)
    assert list(seeds["word"]) == sorted(seeds["word"])
    assert (seeds["delta"].abs() <= 0.263).all()
    assert set(seeds.columns) >= {"word", "delta", "count", "freq", "n_samples", "samples"}


def test_whole_pool_when_sample_exceeds_it():
    # pool of 34 words, 2 samples of 50 -> each sample is the whole pool: every word drawn twice
    seeds, summary = sample_seed_words(hand_vocab(), SeedSelection(sample_size=50, seeds=(1, 2)))
    assert len(seeds) == 34 and (seeds["n_samples"] == 2).all() and summary["draws"] == 68


def test_empty_pool_is_an_error():
    vocab = pd.DataFrame({"word": ["a", "b"], "delta": [2.0, -3.0], "count": [5, 6]})
    with pytest.raises(InputError, match="sampling region"):
        sample_seed_words(vocab, SeedSelection())


def test_determinism_and_input_order():
    vocab = hand_vocab()
    params = SeedSelection(sample_size=8, seeds=derive_seeds(7, 3))
    a, _ = sample_seed_words(vocab, params)
    b, _ = sample_seed_words(vocab, params)
    c, _ = sample_seed_words(vocab.sample(frac=1, random_state=3), params)  # shuffled rows, no tied deltas
    pd.testing.assert_frame_equal(a, b)
    pd.testing.assert_frame_equal(a, c)
    d, _ = sample_seed_words(vocab, SeedSelection(sample_size=8, seeds=derive_seeds(8, 3)))
    assert list(a["word"]) != list(d["word"])  # another seed, another sample


def test_derive_and_parse_seeds():
    assert derive_seeds(0, 5) == derive_seeds(0, 5)
    assert len(set(derive_seeds(0, 5))) == 5 and derive_seeds(0, 5) != derive_seeds(1, 5)
    assert (
        parse_seeds("9123, 19223") == (9123, 19223) and parse_seeds("") is None and parse_seeds([3]) == (3,)
    )
    with pytest.raises(ConfigError):
        parse_seeds("1,x")
    with pytest.raises(ConfigError, match="distinct"):
        SeedSelection(seeds=(1, 1))


# ------------------------------------------------------------------------------------------ comparison


def test_overlap():
    # {a, b, c} vs {b, c, d}: intersection 2, union 4 -> Jaccard 0.5
    assert overlap("abc", "bcd") == {"ours": 3, "released": 3, "intersection": 2, "jaccard": 0.5}


def test_infer_pool_size_recovers_hidden_filter():
    # A delta-sorted region of 300 words; a hidden filter keeps 270 of them; 3 samples of 20 from the kept ones.
    rng = np.random.default_rng(5)
    kept = np.sort(rng.choice(300, size=270, replace=False))
    seeds = (9123, 19223, 8172361)
    drawn = drawn_positions(270, 20, seeds)
    ranks = [int(kept[p]) for p in drawn]
    mult = [drawn[p] for p in drawn]
    assert infer_pool_sizes(ranks, mult, 20, seeds, 300) == [270]


def test_undefined_delta_kept_in_vocabulary_but_never_sampled():
    # A corpus-stage table has NaN delta where a word never co-occurs with one pronoun: the word stays in the
    # vocabulary (and in the count population) but is neither binned nor sampled.
    stubs = Stubs()
    table = stub_table()
    table.loc[table["word"] == "cat", "delta"] = np.nan
    vocab, stats = english_vocabulary(table, stubs.lid, stubs.wordnet, EnglishFilter(freq_quantile=0))
    assert stats["kept"] == 3 and stats["kept_with_delta"] == 2
    seeds, summary = sample_seed_words(vocab, SeedSelection(bound=1.0, sample_size=5, seeds=(1,)))
    # deltas: vaguely -0.3, influenza -0.1 (linspace(-0.5, 0.5, 6)); cat has none
    assert set(seeds["word"]) == {"vaguely", "influenza"} and summary["words_with_delta"] == 2
