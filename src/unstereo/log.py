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


class _CurrentStderr(logging.StreamHandler):
    """A stream handler writing to whatever ``sys.stderr`` is when a record is emitted. A handler bound to the
    ``sys.stderr`` of its creation breaks once that stream is closed: the first logger may be made inside click's
    CliRunner (or any caller that swaps stderr for a while), and every later record then ends in a logging error."""

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:  # StreamHandler.__init__ assigns it; the current sys.stderr wins
        pass


def get_logger(name: str) -> logging.Logger:
    """Return the package logger ``unstereo.<name>``, configured once to write to stderr."""
    root = logging.getLogger("unstereo")
    if not root.handlers:
        handler = _CurrentStderr()
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
