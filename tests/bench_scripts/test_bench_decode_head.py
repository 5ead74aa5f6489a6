"""benchmarks/bench_decode_head.py runs on a small head and finds the blocks equal to the whole product."""

import importlib.util
import sys

import pytest
import torch
from _paths import REPO

from unstereo.engine.kernels.int8 import available as int8_available
from unstereo.engine.kernels.onednn import available

BENCH = REPO / "benchmarks"


@pytest.mark.skipif(
    not (available(torch.zeros(1)) and int8_available(torch.zeros(1))), reason="no oneDNN or int8 products"
)
def test_small_head_blocks_equal_the_whole(monkeypatch, capsys):
    spec = importlib.util.spec_from_file_location("bench_decode_head", BENCH / "bench_decode_head.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    monkeypatch.setattr("unstereo.engine.kernels.decode_head.BLOCK", 256)  # 3 blocks, the last narrower
    mod.main(["--shape", "700x64", "--rows", "3", "--repeats", "1", "--threads", "1", "--int8"])
    row = capsys.readouterr().out.strip().splitlines()[-1]
    assert row.startswith("| 700x64 | 3 |") and row.endswith("| True |")
    sys.modules.pop("bench_decode_head", None)
