"""The Hu & Liu (2004) opinion lexicon (2006 positive, 4783 negative English opinion words): reader of the
``opinion-lexicon`` resource, whose builder is in :mod:`unstereo.resources.sentiment_resources`."""

from __future__ import annotations

from functools import cache
from pathlib import Path

from unstereo.errors import ResourceError
from unstereo.resources.sentiment_resources import FILES, extract_opinion_lexicon  # noqa: F401 (re-exported)


@cache
def _load(directory: str) -> tuple[frozenset[str], frozenset[str]]:
    out = []
    for kind in ("positive", "negative"):
        path = Path(directory) / FILES[kind]
        if not path.is_file():
            raise ResourceError(f"{path}: missing (fetch the `opinion-lexicon` resource)")
        words = (w.strip().lower() for w in path.read_text(encoding="utf-8").splitlines())
        out.append(frozenset(w for w in words if w and not w.startswith(";")))
    return out[0], out[1]


def load_opinion_lexicon(directory: str | Path) -> tuple[frozenset[str], frozenset[str]]:
    """(positive, negative) word sets of a lexicon folder (``;`` lines, the original files' header, skipped)."""
    return _load(str(Path(directory).resolve()))
