"""Shared fixtures: where the reference data and the offline resources are, and the strict mode of CI.

- ``reference_dir``: ``$UNSTEREO_REFERENCE`` if set; else ``../shared/reference`` beside the checkout, else the
  reference resource the workflow fetched (``$UNSTEREO_EXTERNAL_DIR/reference``, default ``data/external/reference``).
  Tests that need it are skipped with the reason when none is there.
- ``external_dir``: ``$UNSTEREO_EXTERNAL_DIR`` or ``data/external`` of the checkout (the workflow's default), so
  resources fetched once (models, corpus) serve both the tests and the workflow.
- ``resource``: ``resource("smollm2")`` fetches a resource (idempotent) and returns its directory; skipped with the
  reason when it cannot be obtained here. A checksum mismatch is always a failure.

Strict mode (``UNSTEREO_STRICT=1``, set by ``.ci/run``): every skip is a failure unless its test id is listed in
``tests/expected_skips.txt``, so CI runs every test or says why not.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
STRICT = os.environ.get("UNSTEREO_STRICT", "") not in ("", "0")
EXPECTED_SKIPS = Path(__file__).resolve().parent / "expected_skips.txt"


def _external_dir() -> Path:
    return Path(os.environ.get("UNSTEREO_EXTERNAL_DIR", REPO / "data" / "external")).resolve()


def _reference_candidates() -> list[Path]:
    if os.environ.get("UNSTEREO_REFERENCE"):
        return [Path(os.environ["UNSTEREO_REFERENCE"]).resolve()]
    return [(REPO.parent / "shared" / "reference").resolve(), _external_dir() / "reference"]


def _reference_dir() -> Path | None:
    """The first candidate that holds the reference data (a fetched resource counts only when complete)."""
    for path in _reference_candidates():
        if path.name == "reference" and path.parent == _external_dir():
            from unstereo.resources import is_complete

            if is_complete("reference", path.parent):
                return path
        elif (path / "unstereo-eval").is_dir():
            return path
    return None


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    path = _reference_dir()
    if path is None:
        tried = ", ".join(map(str, _reference_candidates()))
        pytest.skip(
            f"reference data not found (tried {tried}; set UNSTEREO_REFERENCE, place ../shared/reference, or run "
            "`unstereo resources fetch reference`)"
        )
    return path


@pytest.fixture(scope="session")
def external_dir() -> Path:
    path = _external_dir()
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def resource(external_dir):
    """Fetch a named offline resource (see unstereo.resources) and return its directory."""
    from unstereo.errors import ChecksumError, ResourceError
    from unstereo.resources import fetch

    def get(name: str) -> Path:
        mirror = _reference_dir() if name == "reference" else None
        try:
            return fetch(name, external_dir, mirror=mirror)
        except ChecksumError:
            raise
        except ResourceError as exc:
            pytest.skip(f"resource {name!r} unavailable here: {exc}")

    return get


# ---------------------------------------------------------------------------------------------------------------
# strict mode


def _expected_skips() -> list[str]:
    """Test-id patterns (fnmatch) of tests CI may skip, one a line; ``#`` starts a comment (say why)."""
    if not EXPECTED_SKIPS.is_file():
        return []
    lines = (line.split("#", 1)[0].strip() for line in EXPECTED_SKIPS.read_text().splitlines())
    return [line for line in lines if line]


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    outcome = yield
    report = outcome.get_result()
    if not STRICT or not report.skipped or hasattr(report, "wasxfail"):
        return
    if any(fnmatch.fnmatchcase(item.nodeid, pattern) for pattern in _expected_skips()):
        return
    reason = report.longrepr[2] if isinstance(report.longrepr, tuple) else str(report.longrepr)
    report.outcome = "failed"
    report.longrepr = (
        f"skipped under UNSTEREO_STRICT=1, and {item.nodeid} is not in tests/expected_skips.txt: {reason}"
    )
