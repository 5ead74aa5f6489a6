"""benchmarks/profile_decode.py's timers: a timed call's own time goes to its kind, not to the call around it."""

import importlib.util
import sys

from _paths import REPO

BENCH = REPO / "benchmarks"


def _module():
    sys.path.insert(0, str(BENCH))
    try:
        spec = importlib.util.spec_from_file_location("profile_decode", BENCH / "profile_decode.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(BENCH))


def test_nested_timed_calls_split_their_time(monkeypatch):
    mod = _module()
    clock = iter([0.0, 1.0, 4.0, 10.0])  # outer starts 0, inner 1..4 (3 s), outer ends 10 (10 s in all)
    monkeypatch.setattr(mod.time, "perf_counter", lambda: next(clock))
    timers = mod.Timers()
    inner = timers.wrap(lambda w: "LM head" if w == "head" else "linears", lambda w: w)
    outer = timers.wrap("prefill", lambda: inner("head"))
    assert outer() == "head"
    assert dict(timers.total) == {"LM head": 3.0, "prefill": 7.0}
