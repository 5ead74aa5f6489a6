"""Vocabulary stage: from a delta table to an English vocabulary and the seed words that steer generation.

docs/methods.md#vocabulary-and-seed-words, paper section 2.3 and appendices B-C:

1. :mod:`.english` keeps alphabetic words that fastText lid.176 calls English (confidence > 0.6) OR that have a
   WordNet synset, and drops words at or below the 20 % count quantile.
2. :mod:`.seeds` splits delta into equal-width bins symmetric around 0, takes the words of the central region
   (|delta| <= 0.263 in the paper) and unites several seeded samples (paper: 5 x 100 words -> 493 unique words).
3. :mod:`.plot` draws the delta histogram with the bins and the sampled region (paper figure 4b style).
"""

from unstereo.unstereoeval.vocabulary.english import EnglishFilter, english_vocabulary, load_lid, load_wordnet
from unstereo.unstereoeval.vocabulary.seeds import (
    SeedSelection,
    delta_bin_edges,
    derive_seeds,
    sample_seed_words,
    sampling_pool,
)

__all__ = [
    "EnglishFilter",
    "SeedSelection",
    "delta_bin_edges",
    "derive_seeds",
    "english_vocabulary",
    "load_lid",
    "load_wordnet",
    "sample_seed_words",
    "sampling_pool",
]
