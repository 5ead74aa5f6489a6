"""Integration: the Snakemake workflow runs end to end on a tiny config, and a rerun does nothing."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from _paths import REPO


def snakemake(workdir: Path, config: Path, *args: str) -> subprocess.CompletedProcess:
    exe = shutil.which("snakemake", path=str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"])
    assert exe, "snakemake not installed"
    cmd = [
        exe,
        "-s",
        str(REPO / "Snakefile"),
        "--directory",
        str(workdir),
        "--configfile",
        str(config),
        "--cores",
        "1",
        *args,
    ]
    env = {**os.environ, "PATH": str(Path(sys.executable).parent) + os.pathsep + os.environ["PATH"]}
    return subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)


def test_tiny_workflow_runs_and_reruns_nothing(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"results_dir": "res", "external_dir": "ext", "resources": ["lid176"]}))
    first = snakemake(tmp_path, config)
    assert first.returncode == 0, first.stderr[-3000:]
    assert (tmp_path / "ext" / "lid176" / "lid.176.ftz").is_file()
    assert (tmp_path / "res" / "logs" / "resources" / "lid176.log").is_file()
    second = snakemake(tmp_path, config, "--dry-run")
    assert second.returncode == 0, second.stderr[-3000:]
    assert "Nothing to be done" in second.stdout + second.stderr


def test_bad_config_names_the_key(tmp_path):
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"resources": ["lid176"], "sed": 3}))
    run = snakemake(tmp_path, config, "--dry-run")
    assert run.returncode != 0
    assert "config key 'sed'" in run.stdout + run.stderr


@pytest.mark.parametrize("cfg", sorted(p.name for p in (REPO / "config").glob("*.yaml")))
def test_dry_run_of_shipped_configs(tmp_path, cfg):
    run = snakemake(REPO, REPO / "config" / cfg, "--dry-run", "--nolock", "--quiet", "rules")
    assert run.returncode == 0, run.stderr[-3000:]


@pytest.mark.parametrize("cfg", sorted(p.name for p in (REPO / ".test").glob("*.yaml")))
def test_dry_run_of_test_configs(cfg):
    # CI's end-to-end configs (.ci/run runs each, then unstereo.workflow.outputs_check)
    run = snakemake(REPO, REPO / ".test" / cfg, "--dry-run", "--nolock", "--quiet", "rules")
    assert run.returncode == 0, run.stderr[-3000:]


def test_cli_version_and_help():
    out = subprocess.run(
        [sys.executable, "-m", "unstereo.cli", "--version"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "0.1.0" in out.stdout
    out = subprocess.run(
        [sys.executable, "-m", "unstereo.cli", "--help"], capture_output=True, text=True, timeout=120
    )
    assert out.returncode == 0 and "resources" in out.stdout


def test_cli_reports_library_errors_cleanly(tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("seed: x\n")
    out = subprocess.run(
        [sys.executable, "-m", "unstereo.cli", "config", "validate", str(bad)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 1
    assert "unstereo: error:" in out.stderr and "config key 'seed'" in out.stderr
    assert "Traceback" not in out.stderr


def test_configfile_on_the_command_line_replaces_the_default(tmp_path):
    # Snakemake merges --configfile into the Snakefile's `configfile:`; the Snakefile skips the default instead, so
    # nothing of config/config.yaml (e.g. its benchmark sources or models) leaks into another config.
    config = tmp_path / "config.yaml"
    config.write_text(yaml.safe_dump({"results_dir": "res", "external_dir": "ext", "resources": ["lid176"]}))
    run = snakemake(tmp_path, config, "--dry-run", "--quiet", "rules")
    assert run.returncode == 0, run.stderr[-3000:]
    out = run.stdout + run.stderr
    assert "fetch_resource" in out
    for rule in ("corpus_count", "generate_use", "benchmarks_build", "score"):
        assert rule not in out


def test_failed_reference_download_says_on_the_terminal_what_to_set(tmp_path, monkeypatch):
    """A missing mirror falls back to the download; when that fails too, the terminal (not only the rule's log) gets
    the one line that says what to set."""
    import http.server
    import threading

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), http.server.BaseHTTPRequestHandler)  # 501s
    threading.Thread(target=server.serve_forever, daemon=True).start()
    config = tmp_path / "config.yaml"
    config.write_text(
        yaml.safe_dump(
            {
                "results_dir": "res",
                "external_dir": "ext",
                "reference_mirror": "no-mirror",
                "resources": ["reference"],
            }
        )
    )
    env_origin = f"http://127.0.0.1:{server.server_address[1]}"
    monkeypatch.setenv("UNSTEREO_REFERENCE_ORIGIN", env_origin)
    try:
        run = snakemake(tmp_path, config)
    finally:
        server.shutdown()
        server.server_close()
    assert run.returncode != 0
    terminal = run.stdout + run.stderr
    assert f"unstereo: error: resource 'reference': cannot download {env_origin}/" in terminal
    assert "set reference_mirror in the config" in terminal
    log = (tmp_path / "res" / "logs" / "resources" / "reference.log").read_text()
    assert "no-mirror is missing or incomplete" in log  # the fallback is logged


SHIPPED_CONFIGS = [
    "config/config.yaml",
    "config/paper.yaml",
    "config/biastest-release.yaml",
    "config/study.yaml",
    "config/study-hub.yaml",
    "config/study-variants.yaml",
    ".test/config.yaml",
    ".test/config-methods.yaml",
]


def test_shipped_configs_have_their_own_results_dir():
    dirs = {cfg: Path(yaml.safe_load((REPO / cfg).read_text())["results_dir"]) for cfg in SHIPPED_CONFIGS}
    for a, da in dirs.items():
        for b, db in dirs.items():
            if a != b:
                assert not da.is_relative_to(db), f"{a} writes into {db}, the results folder of {b}"


def _tiny_from_shipped(cfg: str, workdir: Path, i: int) -> Path:
    """The shipped config with its own results_dir, every stage off but a tiny benchmarks stage (its own source)."""
    config = yaml.safe_load((REPO / cfg).read_text())
    stages = {"corpus", "vocabulary", "benchmarks", "generate", "score", "metrics", "report"}
    stages |= {k for k, v in config.items() if isinstance(v, dict) and "enabled" in v}  # the newer stages too
    for stage in stages:
        config[stage] = {"enabled": False}
    source = workdir / f"templates-{i}.csv"
    source.write_text(f"id,template\n1,{{pronoun}} walked cat {i}.\n2,{{pronoun}} saw a dog.\n")
    config.update(external_dir="ext", reference_mirror=None, resources=[])
    config["benchmarks"] = {
        "enabled": True,
        "sources": {"Mine": {"kind": "templates", "path": str(source)}},
        "delta": str(workdir / "delta.csv"),
        "etas": ["inf", 0.5],
    }
    path = workdir / f"config-{i}.yaml"
    path.write_text(yaml.safe_dump(config))
    return path


@pytest.mark.slow
def test_shipped_configs_run_one_after_the_other_without_touching_each_other(tmp_path):
    (tmp_path / "delta.csv").write_text(",word,pmi_diff,counts,freq\n0,cat,0.2,5,0.1\n1,dog,-0.7,5,0.1\n")
    configs = [_tiny_from_shipped(cfg, tmp_path, i) for i, cfg in enumerate(SHIPPED_CONFIGS)]
    before: list[dict[Path, int]] = []
    for i, config in enumerate(configs):
        run = snakemake(tmp_path, config)
        assert run.returncode == 0, run.stderr[-3000:]
        results = tmp_path / yaml.safe_load(config.read_text())["results_dir"]
        files = {p: p.stat().st_mtime_ns for p in results.rglob("*") if p.is_file() and "logs" not in p.parts}
        assert any(p.name == "pairs.parquet" for p in files), SHIPPED_CONFIGS[i]
        before.append(files)
    for i, config in enumerate(configs):  # every earlier run's outputs untouched, and still up to date
        assert {p: p.stat().st_mtime_ns for p in before[i]} == before[i], SHIPPED_CONFIGS[i]
        again = snakemake(tmp_path, config, "--dry-run")
        assert "Nothing to be done" in again.stdout + again.stderr, (SHIPPED_CONFIGS[i], again.stdout[-2000:])


def test_the_default_run_starts_its_long_pole_first():
    # the dry run's job list says each job's priority (Snakemake prints it when not 0): generation, the rules it
    # waits for and the fetches of what they read carry unstereo.workflow.rules.LONG_POLE_PRIORITY, scoring none
    from unstereo.workflow.rules import LONG_POLE_PRIORITY

    run = snakemake(REPO, REPO / "config" / "config.yaml", "--dry-run", "--nolock", "--forceall")
    assert run.returncode == 0, run.stderr[-3000:]
    jobs = {}
    for block in re.split(r"\n(?=(?:local)?rule \w+:)", run.stdout + run.stderr):
        head = re.search(r"^(?:local)?rule (\w+):", block, re.M)
        if head:
            wildcards = re.search(r"wildcards: (.*)", block)
            prio = re.search(r"priority: (\d+)", block)
            key = (head.group(1), wildcards.group(1) if wildcards else "")
            jobs[key] = int(prio.group(1)) if prio else 0
    assert jobs[("generate_use", "benchmark=USE-5")] == LONG_POLE_PRIORITY
    for name in ("vocabulary_seeds", "vocabulary_english", "corpus_merge", "corpus_delta"):
        assert jobs[(name, "")] == LONG_POLE_PRIORITY, name
    assert jobs[("fetch_resource", "resource=qwen-coder-1.5b")] == LONG_POLE_PRIORITY
    assert jobs[("fetch_resource", "resource=minilm")] == 0
    assert jobs[("score", "model=smollm2, benchmark=Winogender")] == 0
