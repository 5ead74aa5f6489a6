"""Word lists of the corpus stage: stop words, gendered (female, male) pairs with weights, target words."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from unstereo.errors import InputError
from unstereo.package_data import DATA_DIR, packaged

PAIRS_FILE = DATA_DIR / "gendered_pairs.csv"
DEFAULT_PAIR = ("she", "he")


@dataclass(frozen=True)
class Pair:
    """A gendered word pair and its weight in the generalised score (paper Eq. 4)."""

    female: str
    male: str
    weight: float = 1.0

    @property
    def name(self) -> str:
        return f"{self.female}:{self.male}"


def load_stopwords(spec: str | Path | None = "spacy") -> frozenset[str]:
    """``"spacy"`` (spaCy's English STOP_WORDS, lowercased), ``"none"``, or a file with one word per line."""
    if spec is None or str(spec) == "none":
        return frozenset()
    if str(spec) == "spacy":
        return frozenset(w.lower() for w in _spacy_stop_words())
    path = Path(spec)
    if not path.is_file():
        raise InputError("stop-word file not found (use 'spacy', 'none' or a path)", path=path)
    return frozenset(_word_lines(path, "stop word"))


def _word_lines(path: Path, what: str) -> list[str]:
    """The words of a file with one word per line (lowercased; blank lines and ``#`` comments skipped), each one
    alphabetic token, else an InputError naming the line (``what``: the error's name for a word)."""
    words = []
    for i, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        w = line.strip().lower()
        if w and not w.startswith("#"):
            if not w.isalpha():
                raise InputError(f"{what} {w!r} is not one alphabetic token", path=path, line=i)
            words.append(w)
    return words


def _spacy_stop_words() -> set[str]:
    """spaCy's English STOP_WORDS. The module holds only the list, but importing it imports spaCy (~3 s, in every
    count job), so its file is run on its own when it can be found."""
    import importlib.util
    import runpy

    spec = importlib.util.find_spec("spacy")  # finds the package without importing it
    if spec is not None and spec.origin:
        path = Path(spec.origin).parent / "lang" / "en" / "stop_words.py"
        if path.is_file():
            return set(runpy.run_path(str(path))["STOP_WORDS"])
    from spacy.lang.en.stop_words import STOP_WORDS  # pragma: no cover - another layout

    return set(STOP_WORDS)


def load_pairs(path: str | Path | None = None) -> list[Pair]:
    """Gendered pairs from a CSV with columns ``female, male`` and optional ``weight`` (default 1)."""
    path = packaged(path) if path else PAIRS_FILE
    try:
        df = pd.read_csv(path, keep_default_na=False, dtype=str, comment="#")
    except FileNotFoundError as exc:
        raise InputError("pairs file not found", path=path) from exc
    except Exception as exc:
        raise InputError(f"cannot read pairs file: {exc}", path=path) from exc
    for col in ("female", "male"):
        if col not in df.columns:
            raise InputError(f"pairs file lacks column {col!r} (has {list(df.columns)})", path=path)
    pairs = []
    for i, row in enumerate(df.itertuples(index=False), 2):
        f, m = row.female.strip().lower(), row.male.strip().lower()
        if not (f.isalpha() and m.isalpha()):
            raise InputError(f"pair ({f!r}, {m!r}) must be two alphabetic words", path=path, line=i)
        w = getattr(row, "weight", "") or "1"
        try:
            weight = float(w)
        except ValueError as exc:
            raise InputError(f"weight {w!r} is not a number", path=path, line=i) from exc
        pairs.append(Pair(f, m, weight))
    names = [p.name for p in pairs]
    dup = {n for n in names if names.count(n) > 1}
    if dup:
        raise InputError(f"duplicated pairs {sorted(dup)}", path=path)
    return pairs


def parse_pair(text: str) -> tuple[str, str]:
    """``"she:he"`` -> ("she", "he")."""
    parts = text.strip().lower().split(":")
    if len(parts) != 2 or not all(p.isalpha() for p in parts):
        raise InputError(f"a pair is written FEMALE:MALE (e.g. she:he), not {text!r}")
    return parts[0], parts[1]


def load_targets(path: str | Path | None = None) -> list[str]:
    """Target words: the union of a pairs CSV's words (default data/gendered_pairs.csv), or a file with one word
    per line. Sorted, so target indices are stable."""
    path = packaged(path) if path else PAIRS_FILE
    if path.suffix == ".csv":
        words = {w for p in load_pairs(path) for w in (p.female, p.male)}
    else:
        if not path.is_file():
            raise InputError("targets file not found", path=path)
        words = set(_word_lines(path, "target"))
    words |= set(DEFAULT_PAIR)
    return sorted(words)
