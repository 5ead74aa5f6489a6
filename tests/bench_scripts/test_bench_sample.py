"""benchmarks/bench_sample.py: --method runs only the named methods; --every-row-to-T."""

import sys

from _paths import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
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


def test_bench_sampler_times_both_strategies_on_real_steps(capsys, monkeypatch):
    import bench_sampler

    model, tok = bench_sample.tiny_model(vocab=300)
    steps = bench_sampler.step_logits(model, tok, 3, 2)
    assert len(steps) == 2 and steps[0].shape == (3, 300)
    monkeypatch.setattr(bench_sample, "tiny_model", lambda: (model, tok))
    monkeypatch.setattr(sys, "argv", ["bench_sampler.py", "--rows", "3", "--steps", "2", "--repeats", "1",
                                      "--top-p", "0.5"])  # fmt: skip
    bench_sampler.main()
    out = capsys.readouterr().out
    assert "| 0.5 |" in out and "6/6 of 6" in out  # the two strategies' tokens equal


def test_every_row_to_t_makes_every_row_t_tokens():
    model, tok = bench_sample.tiny_model(vocab=200)
    model.generation_config.eos_token_id = list(range(100))  # half the words end a row
    free = bench_sample.run_shape(model, tok, "batch", 2, 3, 0.9, 1, methods=("engine",))
    assert free["engine"][2] < 2 * 3  # rows end early at those words
    r = bench_sample.run_shape(
        model, tok, "batch", 2, 3, 0.9, 1, ("engine", "transformers"), every_row_to_t=True
    )
    assert r["engine"][2] == r["transformers"][2] == 2 * 3
