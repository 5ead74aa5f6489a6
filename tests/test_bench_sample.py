"""benchmarks/bench_sample.py: --method runs only the named methods."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "benchmarks"))
import bench_sample  # noqa: E402  (benchmarks/ is not a package)


def test_run_shape_only_the_named_method():
    model, tok = bench_sample.tiny_model(vocab=200)
    r = bench_sample.run_shape(model, tok, "batch", 2, 3, 0.9, 1, methods=("engine",))
    assert "engine" in r and "transformers" not in r
    rate, seconds, tokens = r["engine"]
    assert 0 < tokens <= 2 * 3 and rate == tokens / seconds
    assert bench_sample.DEFAULT_METHODS == ("transformers", "engine")


def test_run_shape_engine_with_int8_products():
    model, tok = bench_sample.tiny_model(vocab=200)
    r = bench_sample.run_shape(model, tok, "batch", 2, 3, 0.9, 1, methods=("engine-int8",))
    assert set(r) & set(bench_sample.METHODS) == {"engine-int8"} and r["engine-int8"][2] > 0
