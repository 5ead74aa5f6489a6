"""benchmarks/bench_llamacpp.py: llama-batched-bench's arguments and output at bench_sample's shapes."""

import sys

import pytest
from _paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import bench_llamacpp  # noqa: E402  (benchmarks/ is not a package)

# a hand-made run: loader log, header, separator, two rounds of 32 x 64 and the perf summary
OUTPUT = """\
print_info: file format = GGUF V3 (latest)
print_info: file type   = Q4_1
print_info: file size   = 85.92 MiB (5.35 BPW)

main: n_kv_max = 2304, n_batch = 2048, n_ubatch = 512, flash_attn = -1, is_pp_shared = 0, n_threads = 1

|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |
|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|
|     8 |     64 |   32 |   2304 |    0.500 |   512.00 |    8.192 |   250.00 |    8.692 |   265.01 |
|     8 |     64 |   32 |   2304 |    0.400 |   640.00 |    4.096 |   500.00 |    4.496 |   512.46 |

llama_perf_context_print:        load time =      87.54 ms
"""


def test_parse_shape_and_label():
    assert bench_llamacpp.parse_shape("batch:32x64") == ("batch", 32, 64)
    assert bench_llamacpp.parse_shape("n:100x128") == ("n", 100, 128)
    for bad in ("batch:32", "m:3x4", "n:x4", "batch:0x64", "n:100x0", "n:-1x4"):
        with pytest.raises(SystemExit, match="--shape"):
            bench_llamacpp.parse_shape(bad)
    assert bench_llamacpp.shape_label("batch", 32, 64) == "32 prompts x 64"
    assert bench_llamacpp.shape_label("n", 100, 128) == "n=100 of 1 prompt x 128"


def test_bench_args_per_shape():
    # 32 rows of their own 8-token prompt + 64 new: 32 x 72 = 2304 cache cells; two rounds in one process
    assert bench_llamacpp.bench_args("m.gguf", "batch", 32, 64, 1, 8, 2) == [
        "-m", "m.gguf", "-t", "1", "-c", "2304", "-lv", "4", "-npp", "8", "-ntg", "64", "-npl", "32,32",
    ]  # fmt: skip
    # one shared 5-token prompt copied to 100 rows (-pps), 128 new each: 100 x 133 = 13300 cells
    assert bench_llamacpp.bench_args("m.gguf", "n", 100, 128, 2, 5, 1) == [
        "-m", "m.gguf", "-t", "2", "-c", "13300", "-lv", "4", "-npp", "5", "-ntg", "128", "-npl", "100", "-pps",
    ]  # fmt: skip
    # the KV cache in fp32, as the engine keeps it
    assert bench_llamacpp.bench_args("m.gguf", "batch", 2, 4, 1, 3, 1, cache_type="f32") == [
        "-m", "m.gguf", "-t", "1", "-c", "14", "-lv", "4", "-ctk", "f32", "-ctv", "f32", "-npp", "3", "-ntg", "4",
        "-npl", "2",
    ]  # fmt: skip


def test_parse_markdown_table():
    rows = bench_llamacpp.parse_output(OUTPUT)
    assert len(rows) == 2  # header, separator and log lines skipped
    assert rows[1] == {
        "pp": 8.0, "tg": 64.0, "pl": 32.0, "n_kv": 2304.0, "t_pp": 0.4, "speed_pp": 640.0,
        "t_tg": 4.096, "speed_tg": 500.0, "t": 4.496, "speed": 512.46,
    }  # fmt: skip
    # S_TG is rows x new tokens / decode time: 32 x 64 / 4.096 s = 500
    assert rows[1]["pl"] * rows[1]["tg"] / rows[1]["t_tg"] == pytest.approx(rows[1]["speed_tg"])
    assert bench_llamacpp.file_type(OUTPUT) == "Q4_1"
    assert bench_llamacpp.file_type(
        "file type   = Q4_K - Medium\nresolve_fused_ops: Flash Attention enabled"
    ) == ("Q4_K - Medium+FA")
    assert bench_llamacpp.file_type("no loader log") == "?"


def test_parse_jsonl_lines():
    line = (
        '{"n_kv_max": 13312, "n_batch": 2048, "n_ubatch": 512, "flash_attn": -1, "is_pp_shared": 1, '
        '"n_gpu_layers": -1, "n_threads": 2, "n_threads_batch": 2, "pp": 5, "tg": 128, "pl": 100, '
        '"n_kv": 13300, "t_pp": 0.010000, "speed_pp": 500.000000, "t_tg": 25.600000, "speed_tg": 500.000000, '
        '"t": 25.610000, "speed": 500.000000}'
    )
    (row,) = bench_llamacpp.parse_output("log line\n" + line + "\n")
    assert (row["pl"], row["tg"], row["t_tg"], row["speed_tg"]) == (100.0, 128.0, 25.6, 500.0)


def test_missing_binary_is_one_clear_line(tmp_path, capsys):
    with pytest.raises(SystemExit) as err:
        bench_llamacpp.main(["--llama-bin", str(tmp_path), "--model", "x.gguf"])
    message = str(err.value)
    assert "\n" not in message and "llama-batched-bench" in message and str(tmp_path) in message
