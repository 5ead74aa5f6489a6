"""The generic resumable chunked map: chunking, resume after a kill, fingerprints, bad chunks, 1 -> n rows."""

from __future__ import annotations

import json

import pandas as pd
import pytest

from unstereo.chunked_map import chunk_dir_for, chunked_map
from unstereo.errors import InputError
from unstereo.tables import Column, TableSchema, read_table

RUN = {"model": "square", "version": 1}
OUT_SCHEMA = TableSchema("squares", "test", (Column("id", "str", "id"), Column("y", "int", "x squared")))


def numbers(n: int) -> pd.DataFrame:
    return pd.DataFrame({"id": [f"r{i}" for i in range(n)], "x": list(range(n))})


class Square:
    """fn that squares ``x``; counts its calls and the rows it saw; raises when called for chunk ``die_at``."""

    def __init__(self, die_at: int | None = None):
        self.die_at = die_at
        self.calls: list[list[str]] = []

    def __call__(self, chunk: pd.DataFrame) -> pd.DataFrame:
        if self.die_at is not None and len(self.calls) == self.die_at:
            raise KeyboardInterrupt("simulated kill")
        self.calls.append(list(chunk["id"]))
        return chunk.drop(columns=["x"]).assign(y=chunk["x"] ** 2)  # keeps the id column(s)


def run(table, fn, out, **kw):
    kw = {"fingerprint": RUN, "chunk_size": 3, "key": "id", **kw}
    return chunked_map(table, fn, out, **kw)


def test_result_chunks_and_cleanup(tmp_path):
    out = tmp_path / "sq.parquet"
    fn = Square()
    got = run(numbers(7), fn, out, schema=OUT_SCHEMA)
    assert fn.calls == [["r0", "r1", "r2"], ["r3", "r4", "r5"], ["r6"]]  # 7 rows, chunks of 3
    assert list(got["y"]) == [0, 1, 4, 9, 16, 25, 36]
    pd.testing.assert_frame_equal(read_table(out, OUT_SCHEMA), got)
    assert not chunk_dir_for(out).exists()


def test_kill_in_chunk_k_then_resume_recomputes_only_chunks_from_k(tmp_path):
    out = tmp_path / "sq.parquet"
    want = run(numbers(10), Square(), tmp_path / "ref.parquet")  # chunks: 3, 3, 3, 1 rows
    with pytest.raises(KeyboardInterrupt):
        run(numbers(10), Square(die_at=2), out)
    chunks = chunk_dir_for(out)
    assert sorted(p.name for p in chunks.glob("*.parquet")) == ["0000.parquet", "0001.parquet"]
    assert json.loads((chunks / "RUN.json").read_text())["run"] == RUN and not out.exists()
    again = Square()
    got = run(numbers(10), again, out)
    assert again.calls == [["r6", "r7", "r8"], ["r9"]]
    pd.testing.assert_frame_equal(got, want)


def test_after_chunk_hook_simulates_a_kill_after_the_write(tmp_path):
    out = tmp_path / "sq.parquet"
    seen = []

    def hook(k, n):
        seen.append((k, n))
        if k == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(numbers(8), Square(), out, after_chunk=hook)
    assert seen == [(0, 3), (1, 3)]
    again = Square()
    run(numbers(8), again, out)
    assert again.calls == [["r6", "r7"]]


def test_setup_is_lazy_and_called_once(tmp_path):
    out = tmp_path / "sq.parquet"
    setups = []

    def setup():
        setups.append(1)
        return 10

    def fn(chunk, offset):
        return pd.DataFrame({"id": chunk["id"], "y": chunk["x"] + offset})

    def kill_after_second(k, n):
        if k == 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(numbers(9), fn, out, setup=setup, after_chunk=kill_after_second)
    assert setups == [1]  # one setup for two chunks
    got = run(numbers(9), fn, out, setup=setup)
    assert setups == [1, 1] and list(got["y"]) == list(range(10, 19))  # set up again for the last chunk

    def kill_after_last(k, n):
        if k == n - 1:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(numbers(9), fn, out, setup=setup, after_chunk=kill_after_last)
    assert len(setups) == 3
    run(numbers(9), fn, out, setup=setup)
    assert len(setups) == 3  # every chunk finished before the kill: no setup
    setups.clear()
    run(numbers(0), fn, tmp_path / "empty.parquet", setup=setup)
    assert setups == []


@pytest.mark.parametrize("change", ["run", "chunk_size", "input_value", "input_column", "key"])
def test_another_fingerprint_discards_old_chunks(tmp_path, change, caplog):
    out = tmp_path / "sq.parquet"
    table = numbers(6).assign(id2=lambda d: d["id"] + "'")
    with pytest.raises(KeyboardInterrupt):
        run(table, Square(die_at=1), out)
    kw = {}
    if change == "run":
        kw["fingerprint"] = {**RUN, "version": 2}
    elif change == "chunk_size":
        kw["chunk_size"] = 2
    elif change == "input_value":
        table.loc[5, "x"] = 50
    elif change == "input_column":
        table["extra"] = 0
    elif change == "key":
        kw["key"] = "id2"
    fn = Square()
    run(table, fn, out, **kw)
    size = kw.get("chunk_size", 3)
    assert len(fn.calls) == 6 // size  # nothing reused
    assert "discarding chunks" in caplog.text


@pytest.mark.parametrize("damage", ["garbage", "other_keys", "other_fingerprint", "no_metadata"])
def test_bad_chunk_is_recomputed(tmp_path, damage):
    out = tmp_path / "sq.parquet"
    with pytest.raises(KeyboardInterrupt):
        run(numbers(9), Square(die_at=2), out)
    chunks = chunk_dir_for(out)
    first, second = chunks / "0000.parquet", chunks / "0001.parquet"
    if damage == "garbage":
        first.write_bytes(b"not a parquet file")
    elif damage == "other_keys":
        second.replace(first)  # chunk 1's file in chunk 0's place
    elif damage == "other_fingerprint":
        # a chunk of another table with the same keys: run a different input into a side folder, copy its chunk 0
        side = tmp_path / "side.parquet"
        with pytest.raises(KeyboardInterrupt):
            run(numbers(9).assign(x=lambda d: d["x"] + 1), Square(die_at=1), side)
        (chunk_dir_for(side) / "0000.parquet").replace(first)
    elif damage == "no_metadata":
        pd.DataFrame({"id": ["r0", "r1", "r2"], "y": [7, 7, 7]}).to_parquet(first, index=False)
    fn = Square()
    got = run(numbers(9), fn, out)
    assert fn.calls[0] == ["r0", "r1", "r2"] and len(fn.calls) == (2 if damage != "other_keys" else 3)
    assert list(got["y"]) == [i * i for i in range(9)]


def test_empty_table(tmp_path):
    fn = Square()
    got = run(numbers(0), fn, tmp_path / "e.parquet", columns=["id", "y"], schema=OUT_SCHEMA)
    assert fn.calls == [] and list(got.columns) == ["id", "y"] and len(got) == 0
    assert len(read_table(tmp_path / "e.parquet", OUT_SCHEMA)) == 0
    assert not chunk_dir_for(tmp_path / "e.parquet").exists()


@pytest.mark.parametrize("size", [0, -1, 1.5, True, "3"])
def test_chunk_size_must_be_a_positive_integer(tmp_path, size):
    with pytest.raises(ValueError, match="chunk size"):
        run(numbers(3), Square(), tmp_path / "x.parquet", chunk_size=size)


def test_bad_keys_are_input_errors(tmp_path):
    with pytest.raises(InputError, match="key column 'nope' missing"):
        run(numbers(3), Square(), tmp_path / "x.parquet", key="nope")
    table = numbers(3)
    table.loc[2, "id"] = "r0"
    with pytest.raises(InputError, match="repeats 'r0'"):
        run(table, Square(), tmp_path / "x.parquet")
    table.loc[1, "id"] = None
    with pytest.raises(InputError, match=r"missing values \(row 1\)"):
        run(table, Square(), tmp_path / "x.parquet")


def test_one_to_n_rows_and_finalize(tmp_path):
    # Sampling-like fn: x copies of each row (0 for r0); the chunk's keys are covered though r0 gives no row.
    out = tmp_path / "samples.parquet"

    def samples(chunk):
        rows = [(i, s) for i, x in zip(chunk["id"], chunk["x"], strict=True) for s in range(x)]
        return pd.DataFrame(rows, columns=["id", "sample"])

    killed = []

    def die_after_first(k, n):
        if k == 0:
            killed.append(k)
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        run(numbers(5), samples, out, chunk_size=2, after_chunk=die_after_first)
    calls = []

    def counted(chunk):
        calls.append(list(chunk["id"]))
        return samples(chunk)

    got = run(numbers(5), counted, out, chunk_size=2, finalize=lambda d: d.assign(n=len(d)))
    assert calls == [["r2", "r3"], ["r4"]]
    assert list(zip(got["id"], got["sample"], strict=True)) == [
        ("r1", 0), ("r2", 0), ("r2", 1), ("r3", 0), ("r3", 1), ("r3", 2), ("r4", 0), ("r4", 1), ("r4", 2), ("r4", 3)
    ]  # fmt: skip
    assert set(got["n"]) == {10}


def test_fn_returning_foreign_keys_is_an_error(tmp_path):
    def bad(chunk):
        return pd.DataFrame({"id": ["r9"], "y": [1]})

    with pytest.raises(ValueError, match=r"keys not in its chunk: \['r9'\]"):
        run(numbers(3), bad, tmp_path / "x.parquet")
    with pytest.raises(ValueError, match="lacks the key column"):
        run(numbers(3), lambda c: pd.DataFrame({"y": [1]}), tmp_path / "x.parquet")
