"""Shared fixtures: where the reference data and the offline resources are.

- ``reference_dir``: ``$UNSTEREO_REFERENCE`` or ``../shared/reference`` beside the checkout; tests that need it are
  skipped with the reason when it is absent.
- ``external_dir``: ``$UNSTEREO_EXTERNAL_DIR`` or ``data/external`` of the checkout (the workflow's default), so
  resources fetched once (models, corpus) serve both the tests and the workflow.
- ``resource``: ``resource("smollm2")`` fetches a resource (idempotent) and returns its directory; skipped with the
  reason when it cannot be obtained here.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def _reference_dir() -> Path:
    return Path(os.environ.get("UNSTEREO_REFERENCE", REPO.parent / "shared" / "reference")).resolve()


@pytest.fixture(scope="session")
def repo_dir() -> Path:
    return REPO


@pytest.fixture(scope="session")
def reference_dir() -> Path:
    path = _reference_dir()
    if not (path / "unstereo-eval").is_dir():
        pytest.skip(
            f"reference data not found at {path} (set UNSTEREO_REFERENCE or place ../shared/reference)"
        )
    return path


@pytest.fixture(scope="session")
def external_dir() -> Path:
    path = Path(os.environ.get("UNSTEREO_EXTERNAL_DIR", REPO / "data" / "external")).resolve()
    path.mkdir(parents=True, exist_ok=True)
    return path


@pytest.fixture(scope="session")
def resource(external_dir):
    """Fetch a named offline resource (see unstereo.resources) and return its directory."""
    from unstereo.errors import ResourceError
    from unstereo.resources import fetch

    def get(name: str) -> Path:
        mirror = _reference_dir() if name == "reference" else None
        try:
            return fetch(name, external_dir, mirror=mirror)
        except ResourceError as exc:
            pytest.skip(f"resource {name!r} unavailable here: {exc}")

    return get
