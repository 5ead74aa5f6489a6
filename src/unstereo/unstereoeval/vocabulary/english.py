"""English vocabulary (paper appendix B, docs/methods.md#vocabulary-and-seed-words): alphabetic words that are
English by lid.176 OR WordNet, minus the rare ones.

The order follows the authors' released word-selection notebook: (1) keep words made only of letters
(``str.isalpha``); (2) the count cutoff is the ``freq_quantile`` quantile (linear interpolation, as pandas) of the
counts of a *population* of words: ``alphabetic`` = every alphabetic word of the input table, delta defined or not
(the notebook took the quantile over all alphabetic PILE words), or ``english`` = the English words only; a word is
kept when its count is strictly greater than the cutoff (the notebook's ``counts > q_val``); (3) a word is English when
fastText lid.176 predicts ``en`` with confidence strictly above ``lid_threshold`` OR WordNet has at least one synset
for it (``wordnet.synsets(word)``, which lemmatises with morphy).

The language-id and WordNet look-ups are plain callables so tests can inject stubs; :func:`load_lid` and
:func:`load_wordnet` build the real ones from the offline resources ``lid176`` and ``wordnet``.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from dataclasses import asdict, dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.errors import ConfigError, ResourceError
from unstereo.log import get_logger, progress

log = get_logger("unstereoeval.vocabulary")

LidFn = Callable[[str], tuple[str, float]]  # word -> (language code, confidence)
WordNetFn = Callable[[str], int]  # word -> number of synsets

LID_FILE = "lid.176.ftz"
FREQ_POPULATIONS = ("alphabetic", "english")
ALPHABETS = ("unicode", "ascii")


@dataclass(frozen=True)
class EnglishFilter:
    """Parameters of the English-vocabulary step (defaults = the paper's)."""

    lid_threshold: float = 0.6  # English when lid says en with confidence > this
    freq_quantile: float = 0.2  # drop words whose count is <= this quantile; 0 disables the cutoff
    freq_population: str = "alphabetic"  # words the quantile is taken over (see module docstring)
    alphabet: str = "unicode"  # "unicode" = str.isalpha (authors' code); "ascii" = letters a-z/A-Z only

    def __post_init__(self) -> None:
        if not 0.0 <= self.freq_quantile < 1.0:
            raise ConfigError(f"must be in [0, 1), got {self.freq_quantile}", key="vocabulary.freq_quantile")
        if not 0.0 <= self.lid_threshold <= 1.0:
            raise ConfigError(f"must be in [0, 1], got {self.lid_threshold}", key="vocabulary.lid_threshold")
        if self.freq_population not in FREQ_POPULATIONS:
            raise ConfigError(
                f"must be one of {FREQ_POPULATIONS}, got {self.freq_population!r}",
                key="vocabulary.freq_population",
            )
        if self.alphabet not in ALPHABETS:
            raise ConfigError(f"must be one of {ALPHABETS}, got {self.alphabet!r}", key="vocabulary.alphabet")


# ------------------------------------------------------------------------------------------------ resources


def _lid_path(path: str | Path) -> Path:
    path = Path(path)
    return path / LID_FILE if path.is_dir() else path


def load_lid(path: str | Path) -> LidFn:
    """fastText lid.176 (a ``.ftz``/``.bin`` file or the ``lid176`` resource directory) as ``word -> (lang, conf)``.

    Loaded with the ``fasttext`` module of the ``fasttext-predict`` package (works with numpy 2); cached per file.
    """
    return _load_lid(_lid_path(path).resolve())


@lru_cache(maxsize=4)
def _load_lid(file: Path) -> LidFn:
    if not file.is_file():
        raise ResourceError(
            f"resource 'lid176': language-id model {file} not found; run `unstereo resources fetch lid176` "
            "(or pass the path of lid.176.ftz / lid.176.bin)"
        )
    try:
        import fasttext
    except ImportError as exc:
        raise ResourceError(
            "resource 'lid176' needs the Python module 'fasttext' (pip install fasttext-predict)"
        ) from exc
    try:
        model = fasttext.load_model(str(file))
    except Exception as exc:  # the C++ loader raises plain ValueError/RuntimeError without the path
        raise ResourceError(f"resource 'lid176': cannot load {file}: {exc}") from exc

    def predict(word: str) -> tuple[str, float]:
        # One word per call: fasttext-predict's list form is broken (multilinePredict unpacking error).
        labels, probs = model.predict(word.replace("\n", " "), k=1)
        if not labels:
            return "", 0.0
        return labels[0].removeprefix("__label__"), float(probs[0])

    return predict


def load_wordnet(data_dir: str | Path) -> WordNetFn:
    """WordNet from an NLTK data directory (the ``wordnet`` resource: ``DIR/corpora/wordnet``) as a synset counter.

    The directory is added to ``nltk.data.path`` (NLTK only reads corpora from there). Cached per directory:
    reading WordNet's index takes seconds.
    """
    return _load_wordnet(Path(data_dir).resolve())


@lru_cache(maxsize=4)
def _load_wordnet(data_dir: Path) -> WordNetFn:
    root = data_dir / "corpora" / "wordnet"
    if not (root / "data.noun").is_file() or not (root / "lexnames").is_file():
        raise ResourceError(
            f"resource 'wordnet': NLTK WordNet data not found under {root} (needs data.noun, lexnames, ...); "
            "run `unstereo resources fetch wordnet`"
        )
    try:
        import nltk
        from nltk.corpus.reader.wordnet import WordNetCorpusReader
    except ImportError as exc:
        raise ResourceError("resource 'wordnet' needs the Python package 'nltk' (pip install nltk)") from exc
    if str(data_dir) not in nltk.data.path:
        nltk.data.path.insert(0, str(data_dir))
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # "multilingual functions are not available": not needed here
            reader = WordNetCorpusReader(str(root), None)
    except Exception as exc:
        raise ResourceError(f"resource 'wordnet': cannot read {root}: {exc}") from exc

    def synsets(word: str) -> int:
        return len(reader.synsets(word))

    return synsets


# ------------------------------------------------------------------------------------------------ the filter


def is_alphabetic(word: str, alphabet: str = "unicode") -> bool:
    """True when ``word`` is made of letters only (``str.isalpha``; ``ascii`` also requires ASCII)."""
    return word.isalpha() and (alphabet == "unicode" or word.isascii())


def count_cutoff(counts: pd.Series, quantile: float) -> float:
    """The count at ``quantile`` (linear interpolation, pandas' default); -inf when the cutoff is disabled."""
    if quantile <= 0 or counts.empty:
        return -math.inf
    return float(np.quantile(counts.to_numpy(dtype=float), quantile))


def english_vocabulary(
    delta: pd.DataFrame, lid: LidFn, wordnet: WordNetFn, params: EnglishFilter | None = None
) -> tuple[pd.DataFrame, dict]:
    """Filter a DELTA table (``word, delta, count`` + extras) to the English vocabulary.

    Returns the kept rows (input columns plus ``freq``, ``lid_lang``, ``lid_conf``, ``wordnet_synsets``,
    ``english_by`` in {both, lid, wordnet}) in input order, and a dict of counts per criterion (also logged).
    """
    params = params or EnglishFilter()
    df = delta.reset_index(drop=True).copy()
    if "freq" not in df.columns:
        total = float(df["count"].sum())
        df["freq"] = df["count"] / total if total > 0 else 0.0
    alpha = np.fromiter((is_alphabetic(w, params.alphabet) for w in df["word"]), bool, len(df))

    # Language id and WordNet only for alphabetic words: the others are dropped anyway.
    words = df.loc[alpha, "word"].tolist()
    lang = np.full(len(df), "", dtype=object)
    conf = np.full(len(df), np.nan)
    syn = np.zeros(len(df), dtype=np.int64)
    idx = np.flatnonzero(alpha)
    for i, word in zip(idx, progress(words, desc="lid.176", unit="word"), strict=True):
        lang[i], conf[i] = lid(word)
    for i, word in zip(idx, progress(words, desc="WordNet", unit="word"), strict=True):
        syn[i] = wordnet(word)
    df["lid_lang"] = lang
    df["lid_conf"] = conf
    df["wordnet_synsets"] = syn

    by_lid = alpha & (lang == "en") & (np.nan_to_num(conf, nan=-1.0) > params.lid_threshold)
    by_wn = alpha & (syn > 0)
    english = by_lid | by_wn

    population = alpha if params.freq_population == "alphabetic" else english
    cutoff = count_cutoff(df.loc[population, "count"], params.freq_quantile)
    frequent = df["count"].to_numpy(dtype=float) > cutoff
    kept = english & frequent

    df["english_by"] = np.where(by_lid & by_wn, "both", np.where(by_lid, "lid", "wordnet"))
    out = df.loc[kept].reset_index(drop=True)
    stats = {
        "words_in": len(df),
        "alphabetic": int(alpha.sum()),
        "lid_en": int(by_lid.sum()),
        "wordnet": int(by_wn.sum()),
        "english": int(english.sum()),
        "english_lid_only": int((by_lid & ~by_wn).sum()),
        "english_wordnet_only": int((by_wn & ~by_lid).sum()),
        "english_both": int((by_lid & by_wn).sum()),
        "freq_population": params.freq_population,
        "freq_population_size": int(population.sum()),
        "freq_quantile": params.freq_quantile,
        "count_cutoff": None if math.isinf(cutoff) else cutoff,
        "english_at_or_below_cutoff": int((english & ~frequent).sum()),
        "kept": int(kept.sum()),
        "kept_lid_only": int((out["english_by"] == "lid").sum()),
        "kept_wordnet_only": int((out["english_by"] == "wordnet").sum()),
        "kept_both": int((out["english_by"] == "both").sum()),
        "kept_with_delta": int(out["delta"].notna().sum()),
        "params": asdict(params),
    }
    log.info(
        "English vocabulary: %d words in, %d alphabetic, %d English (lid en > %.2f: %d, WordNet: %d; lid only %d, "
        "WordNet only %d, both %d), count cutoff %s (q=%.2f over %d %s words) drops %d English words -> kept %d "
        "(lid only %d, WordNet only %d, both %d; %d with a defined delta)",
        stats["words_in"],
        stats["alphabetic"],
        stats["english"],
        params.lid_threshold,
        stats["lid_en"],
        stats["wordnet"],
        stats["english_lid_only"],
        stats["english_wordnet_only"],
        stats["english_both"],
        "none" if stats["count_cutoff"] is None else f"{cutoff:g}",
        params.freq_quantile,
        stats["freq_population_size"],
        params.freq_population,
        stats["english_at_or_below_cutoff"],
        stats["kept"],
        stats["kept_lid_only"],
        stats["kept_wordnet_only"],
        stats["kept_both"],
        stats["kept_with_delta"],
    )
    return out, stats
