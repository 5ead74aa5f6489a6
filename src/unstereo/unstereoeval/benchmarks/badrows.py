"""Bad input rows: raise an error naming file and line, or drop the row and count it (config ``on_bad_row``)."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from unstereo.errors import InputError
from unstereo.log import get_logger

log = get_logger("unstereoeval.benchmarks")

ON_BAD_ROW = ("error", "drop")

# At most this many dropped rows are logged one by one; the summary always counts all of them.
_LOG_EACH = 20


@dataclass
class BadRows:
    """Collects bad rows. ``policy="error"`` raises :class:`InputError` at the first one; ``"drop"`` records it."""

    policy: str = "error"
    dropped: list[tuple[str, int | None, str]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.policy not in ON_BAD_ROW:
            raise ValueError(f"on_bad_row must be one of {ON_BAD_ROW}, got {self.policy!r}")

    def report(self, path: str | Path, line: int | None, reason: str) -> None:
        """A bad row at ``path:line``: raise, or record it for the summary."""
        if self.policy == "error":
            raise InputError(reason, path=path, line=line)
        self.dropped.append((str(path), line, reason))
        if len(self.dropped) <= _LOG_EACH:
            where = f"{path}:{line}" if line is not None else str(path)
            log.warning("dropped bad row %s: %s", where, reason)

    def summary(self) -> dict[str, int]:
        """Number of dropped rows per reason kind (the text before the first ':' of the reason)."""
        return dict(Counter(reason.split(":")[0] for _, _, reason in self.dropped))

    def log_summary(self, what: str) -> None:
        """Log how many rows were dropped and why (nothing is lost silently)."""
        if not self.dropped:
            log.info("%s: no bad rows", what)
            return
        counts = ", ".join(f"{n} x {kind}" for kind, n in sorted(self.summary().items()))
        log.warning("%s: dropped %d bad row(s): %s", what, len(self.dropped), counts)
