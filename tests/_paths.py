"""Where things are, for tests in any folder: the repository root and the tests folder.

Tests are laid out by package (tests/<package>/...), so ``Path(__file__).parent`` differs from folder to folder; a test
that needs a path in the repository (workflow/, docs/, benchmarks/, tests/slurm_failure/...) starts from these.
"""

from __future__ import annotations

from pathlib import Path

TESTS = Path(__file__).resolve().parent
REPO = TESTS.parent
