"""The benchmarks rules: CLI arguments from the config, and a tiny end-to-end Snakemake run."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
import yaml
from _paths import REPO

from unstereo.unstereoeval.benchmarks.rules import eta_names, source_inputs, source_paths


def test_eta_names_and_source_inputs():
    assert eta_names({"etas": ["inf", 1, 0.8, 0.65]}) == ["inf", "1.0", "0.8", "0.65"]
    manifest = lambda name: f"ext/{name}/RESOURCE.json"  # noqa: E731
    assert source_inputs({"kind": "winobias", "resource": "reference", "path": "x"}, manifest) == {
        "manifest": "ext/reference/RESOURCE.json"
    }
    assert source_inputs({"kind": "use-released", "path": ["a.csv.gz"], "raw": "r.csv"}, manifest) == {
        "src": ["a.csv.gz", "r.csv"]
    }


def test_source_paths():
    """The files of a source as `benchmarks build` takes them (the rest of the source comes from --settings):
    relative to the resource folder (the manifest's) when the source names a resource, and --raw beside them."""
    cfg = {
        "sources": {
            "WB": {"kind": "winobias", "resource": "reference", "path": "winobias/data", "split": ["test"]},
            "U": {"kind": "use-released", "path": ["u.csv.gz", "v.csv.gz"], "raw": "r.csv", "max_pairs": 50},
        },
        "reference_quirks": True,
    }
    assert source_paths(cfg, "WB", "ext/reference/RESOURCE.json") == "ext/reference/winobias/data"
    assert source_paths(cfg, "U") == "u.csv.gz v.csv.gz --raw r.csv"
    cfg["sources"]["U"]["resource"] = "reference"
    assert source_paths(cfg, "U", "ext/reference/RESOURCE.json") == (
        "ext/reference/u.csv.gz ext/reference/v.csv.gz --raw ext/reference/r.csv"
    )


@pytest.mark.slow
def test_tiny_benchmarks_workflow(tmp_path):
    # max_pmi: M:1 cat 0.2, M:2 dog -0.7, M:3 undefined -> eta inf: 3 pairs, eta 0.5: 1 pair
    (tmp_path / "mine.csv").write_text(
        "id,template\n1,{pronoun} walked the cat.\n2,{pronoun} saw a dog.\n3,{pronoun} is here.\n"
    )
    (tmp_path / "delta.csv").write_text(",word,pmi_diff,counts,freq\n0,cat,0.2,5,0.1\n1,dog,-0.7,5,0.1\n")
    config = {
        "results_dir": "res",
        "external_dir": "ext",
        "resources": [],
        "benchmarks": {
            "enabled": True,
            "sources": {"Mine": {"kind": "templates", "path": str(tmp_path / "mine.csv")}},
            "delta": str(tmp_path / "delta.csv"),
            "etas": ["inf", 0.5],
            "reference_quirks": False,
            "on_bad_row": "error",
        },
    }
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(config))
    bindir = str(Path(sys.executable).parent)
    exe = shutil.which("snakemake", path=bindir + os.pathsep + os.environ["PATH"])
    assert exe, "snakemake not installed"
    cmd = [exe, "-s", str(REPO / "Snakefile"), "--directory", str(tmp_path), "--cores", "2"]
    cmd += ["--configfile", str(tmp_path / "config.yaml")]
    env = {**os.environ, "PATH": bindir + os.pathsep + os.environ["PATH"]}
    run = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=600)
    assert run.returncode == 0, run.stderr[-3000:]
    res = tmp_path / "res" / "benchmarks"
    pairs = pd.read_parquet(res / "Mine" / "pairs.parquet")
    assert pairs["pair_id"].tolist() == ["Mine:1", "Mine:2", "Mine:3"]
    assert pairs["max_pmi"].tolist()[:2] == [0.2, -0.7]
    assert len(pd.read_parquet(res / "Mine" / "eta-inf.parquet")) == 3
    assert pd.read_parquet(res / "Mine" / "eta-0.5.parquet")["pair_id"].tolist() == ["Mine:1"]
    assert pd.read_csv(res / "figure2.csv")["n"].tolist() == [3, 1]
    assert (res / "figure2.png").is_file() and (res / "figure2.pdf").is_file()
    again = subprocess.run(cmd + ["--dry-run"], capture_output=True, text=True, env=env, timeout=600)
    assert "Nothing to be done" in again.stdout + again.stderr
