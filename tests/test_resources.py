"""Resource layer: idempotent fetch, checksum mismatch detected, missing tool named, real offline resources."""

from __future__ import annotations

import json

import pytest

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


def test_pinned_checksum_mismatch_fails_and_leaves_nothing(tmp_path, fake_registry):
    with pytest.raises(ResourceError, match="checksum mismatch for sub/hello.txt"):
        fetch("fake-bad", tmp_path)
    assert not (tmp_path / "fake-bad").exists()
    assert [p.name for p in tmp_path.iterdir()] == []  # temporary build dir removed too


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
