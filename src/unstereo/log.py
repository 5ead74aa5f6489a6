"""Logging and progress helpers shared by every stage.

Progress bars go to stderr, which Snakemake rules redirect into the rule's log file.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable, Iterator
from typing import TypeVar

from tqdm.auto import tqdm

T = TypeVar("T")

_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def get_logger(name: str) -> logging.Logger:
    """Return the package logger ``unstereo.<name>``, configured once to write to stderr."""
    root = logging.getLogger("unstereo")
    if not root.handlers:
        handler = logging.StreamHandler(sys.stderr)
        handler.setFormatter(logging.Formatter(_FORMAT))
        root.addHandler(handler)
        root.setLevel(logging.INFO)
    return logging.getLogger(f"unstereo.{name}" if not name.startswith("unstereo") else name)


def progress(
    iterable: Iterable[T], desc: str, total: int | None = None, unit: str = "it", **kw
) -> Iterator[T]:
    """Wrap ``iterable`` in a progress bar on stderr (plain lines when stderr is not a terminal)."""
    interval = 0.1 if sys.stderr.isatty() else 10.0
    yield from tqdm(iterable, desc=desc, total=total, unit=unit, file=sys.stderr, mininterval=interval, **kw)
