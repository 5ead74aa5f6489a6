"""Exceptions with messages that name the file, line or config key at fault."""

from __future__ import annotations

from pathlib import Path


class UnstereoError(Exception):
    """Base class: every error the library raises on bad input or a missing resource."""


class InputError(UnstereoError):
    """Bad input data: names the file and, where known, the line (1-based) or row."""

    def __init__(self, message: str, path: str | Path | None = None, line: int | None = None):
        self.path = None if path is None else str(path)
        self.line = line
        where = ""
        if self.path is not None:
            where = self.path if line is None else f"{self.path}:{line}"
            where += ": "
        super().__init__(where + message)


class ConfigError(UnstereoError):
    """Invalid configuration: names the dotted key path (e.g. ``corpus.window``)."""

    def __init__(self, message: str, key: str | None = None, source: str | None = None):
        self.key = key
        parts = []
        if source:
            parts.append(source)
        if key:
            parts.append(f"config key '{key}'")
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ResourceError(UnstereoError):
    """A resource could not be obtained: names the resource and the missing tool, package or file."""


class ChecksumError(ResourceError):
    """A fetched or stored file differs from its pinned or recorded sha256: a defect, never 'unavailable here'."""
