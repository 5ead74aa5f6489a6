"""Strict mode (UNSTEREO_STRICT=1): skips become failures unless listed; the reference is found where the workflow
fetched it. Runs pytest on a scratch folder with a copy of tests/conftest.py, so nothing depends on this machine."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent

SCRATCH_TESTS = """
import pytest

def test_needs_reference(reference_dir):
    assert (reference_dir / "unstereo-eval").is_dir()

def test_needs_a_resource(resource):
    resource("lid176-broken")

def test_skips_itself():
    pytest.skip("no GPU here")

def test_passes():
    pass
"""


def _pytest(root: Path, env: dict, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("UNSTEREO_")} | env
    return subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-q", "-rA", str(root / "tests"), *args],
        cwd=root,
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
    )


@pytest.fixture
def scratch(tmp_path):
    root = tmp_path / "repo"
    (root / "tests").mkdir(parents=True)
    shutil.copy(TESTS / "conftest.py", root / "tests" / "conftest.py")
    # a fake registry entry that always fails, so the `resource` fixture has something to skip
    (root / "tests" / "test_scratch.py").write_text(
        "from unstereo.errors import ResourceError\n"
        "from unstereo.resources import core, Resource\n"
        "def _fail(target, opts):\n    raise ResourceError('no network here')\n"
        "core.RESOURCES['lid176-broken'] = Resource('lid176-broken', 'x', _fail)\n" + SCRATCH_TESTS
    )
    return root


def test_without_strict_the_missing_pieces_skip(scratch, tmp_path):
    run = _pytest(scratch, {"UNSTEREO_EXTERNAL_DIR": str(tmp_path / "ext")})
    assert run.returncode == 0, run.stdout[-3000:]
    assert "1 passed, 3 skipped" in run.stdout


def test_strict_turns_skips_into_failures(scratch, tmp_path):
    run = _pytest(scratch, {"UNSTEREO_EXTERNAL_DIR": str(tmp_path / "ext"), "UNSTEREO_STRICT": "1"})
    assert run.returncode == 1, run.stdout[-3000:]
    assert "1 passed" in run.stdout and "skipped" not in run.stdout.splitlines()[-1]
    assert run.stdout.count("skipped under UNSTEREO_STRICT=1") >= 3
    assert "reference data not found" in run.stdout and "no network here" in run.stdout
    assert "no GPU here" in run.stdout


def test_strict_allows_the_listed_skips(scratch, tmp_path):
    (scratch / "tests" / "expected_skips.txt").write_text(
        "# why: these need things CI does not have\ntests/test_scratch.py::test_skips_itself  # no GPU\n"
        "tests/test_scratch.py::test_needs_*\n"
    )
    run = _pytest(scratch, {"UNSTEREO_EXTERNAL_DIR": str(tmp_path / "ext"), "UNSTEREO_STRICT": "1"})
    assert run.returncode == 0, run.stdout[-3000:]
    assert "1 passed, 3 skipped" in run.stdout


def test_checksum_mismatch_fails_even_without_strict(scratch, tmp_path):
    test = scratch / "tests" / "test_scratch.py"
    test.write_text(test.read_text().replace("raise ResourceError('no network here')",
                                             "from unstereo.errors import ChecksumError; raise ChecksumError('bad sha')"))  # fmt: skip
    run = _pytest(scratch, {"UNSTEREO_EXTERNAL_DIR": str(tmp_path / "ext")}, "-k", "resource")
    assert run.returncode == 1 and "bad sha" in run.stdout, run.stdout[-3000:]


def test_reference_fetched_by_the_workflow_is_found(scratch, tmp_path):
    ext = tmp_path / "ext"
    (ext / "reference" / "unstereo-eval").mkdir(parents=True)
    (ext / "reference" / "unstereo-eval" / "f.txt").write_text("x")
    env = {"UNSTEREO_EXTERNAL_DIR": str(ext), "UNSTEREO_STRICT": "1"}
    # without a manifest the fetch is not complete: not used
    assert _pytest(scratch, env, "-k", "reference").returncode == 1
    from unstereo.resources import RESOURCES

    files = {"unstereo-eval/f.txt": {"sha256": "-", "size": 1}}
    manifest = {"name": "reference", "version": RESOURCES["reference"].version, "files": files}
    (ext / "reference" / "RESOURCE.json").write_text(json.dumps(manifest))
    run = _pytest(scratch, env, "-k", "reference")
    assert run.returncode == 0, run.stdout[-3000:]
    assert "1 passed" in run.stdout
