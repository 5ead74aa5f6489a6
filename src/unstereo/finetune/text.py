"""Training text: texts of .jsonl/.txt files and their sentences."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path

from unstereo.errors import InputError

_SENT_SPLIT = re.compile(r"(?<=[.!?])\s+")


def read_texts(paths: Sequence[str | Path]) -> list[str]:
    """Texts of .jsonl (field ``text``) or .txt (one a line) files; a bad line is an InputError naming it."""
    texts = []
    for path in paths:
        path = Path(path)
        if not path.is_file():
            raise InputError("file not found", path=path)
        with open(path, encoding="utf-8") as fh:
            for i, line in enumerate(fh, start=1):
                line = line.strip()
                if not line:
                    continue
                if path.suffix == ".jsonl":
                    try:
                        texts.append(str(json.loads(line)["text"]))
                    except (json.JSONDecodeError, KeyError, TypeError) as exc:
                        raise InputError(f"not a JSON object with a `text` field: {exc}", path, i) from exc
                else:
                    texts.append(line)
    return texts


def split_sentences(texts: Sequence[str]) -> list[str]:
    """Sentences of the texts (split after . ! ? followed by space; newlines split too), of 3 words or more."""
    out = []
    for text in texts:
        for line in text.splitlines():
            out += [s.strip() for s in _SENT_SPLIT.split(line) if len(s.split()) >= 3]
    return out
