"""Every file the CLI reads, in every damaged form: each test makes a sound file in a temporary folder, a
damaged copy of it (missing, empty, cut short, random bytes, a valid file of the wrong shape) and runs the reader.

- A file the user gave (a table of texts or prompts, a GGUF model, a config): the command ends with one line
  ``unstereo: error: <file>: <what is wrong>`` on stderr, exit status 1 (2 for click's own checks), no traceback.
- Derived data (the score cache, the LLM cache, a probe verdict, a chunk folder; a GGUF conversion in
  tests/models/test_gguf_convert.py): set aside (renamed ``<name>.damaged-<time>``, never deleted), a warning naming it,
  and the same output as from a clean state.

docs/damaged-files.md is the table of these cases; keep the two in step.
"""

from __future__ import annotations

import json
import os
import sqlite3
from contextlib import closing
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from _scoring_models import save_tiny_gpt2

from unstereo.cli import main
from unstereo.tables import write_table

DAMAGES = ["missing", "empty", "cut", "random"]
TEXTS = [("s1", "She went to the store."), ("s2", "I gave him a book."), ("s3", "he said hi")]


def damage(path: Path, kind: str) -> Path:
    """Damage the file ``path`` in place: remove it, empty it, keep its first half, or replace it with random bytes
    of the same length (seeded: the same bytes at every run)."""
    data = path.read_bytes()
    if kind == "missing":
        path.unlink()
    elif kind == "empty":
        path.write_bytes(b"")
    elif kind == "cut":
        path.write_bytes(data[: len(data) // 2])
    elif kind == "random":
        path.write_bytes(np.random.default_rng(55).bytes(max(len(data), 64)))
    else:
        raise ValueError(kind)
    return path


def run_cli(capsys, *args: str) -> tuple[int, str]:
    """(exit status, stderr) of ``unstereo ARGS`` run in this process, as the console entry point runs it."""
    import logging
    import sys

    capsys.readouterr()
    for handler in logging.getLogger("unstereo").handlers:  # made in an earlier test, on that test's stderr
        if isinstance(handler, logging.StreamHandler):
            handler.stream = sys.stderr  # (setStream would flush the closed one)
    try:
        main([str(a) for a in args])
        code = 0
    except SystemExit as exc:
        code = exc.code if isinstance(exc.code, int) else 1
    return code, capsys.readouterr().err


def assert_one_clear_line(code: int, err: str, path: Path, *words: str) -> None:
    """A failure reported as the user should see it: non-zero status, the file named, no traceback."""
    assert code != 0, err
    assert "Traceback" not in err, err
    assert str(path) in err or path.name in err, err
    for word in words:
        assert word in err, err


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    """A randomly initialised 2-layer GPT-2 with a word-level tokenizer, saved as a Hugging Face folder."""
    return save_tiny_gpt2(tmp_path_factory.mktemp("gpt2"))


@pytest.fixture
def isolated(tmp_path, monkeypatch):
    """GGUF conversions and probe verdicts under tmp_path, not the user's cache."""
    monkeypatch.setenv("UNSTEREO_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path


def texts_table(path: Path) -> Path:
    write_table(pd.DataFrame(TEXTS, columns=["id", "text"]), path)
    return path


def score_args(model: Path, table: Path, out: Path, *extra: str) -> list[str]:
    return ["score", str(model), str(table), "--texts", "--device", "cpu", "-o", str(out), *extra]


# ---- files the user gives -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", [*DAMAGES, "wrong-columns", "wrong-types"])
def test_a_damaged_table_of_texts(model_dir, isolated, capsys, kind):
    table = texts_table(isolated / "texts.parquet")
    if kind == "wrong-columns":  # a valid parquet file of another table
        write_table(pd.DataFrame({"prompt_id": ["a"], "prompt": ["x"]}), table)
    elif kind == "wrong-types":
        write_table(pd.DataFrame({"id": ["a", "b"], "text": [1.5, 2.5]}), table)
    else:
        damage(table, kind)
    out = isolated / "o.parquet"
    code, err = run_cli(capsys, *score_args(model_dir, table, out, "--no-cache"))
    assert_one_clear_line(code, err, table)
    assert not out.exists() and not out.with_name("o.chunks").exists()


def tiny_gguf(path: Path, arch: str = "llama") -> Path:
    """A small, well-formed GGUF file of ``arch`` (two fp32 tensors of 8 x 64, 2 KiB each): enough for the header
    check, not a model anyone could load."""
    import gguf

    writer = gguf.GGUFWriter(str(path), arch)
    writer.add_block_count(1)
    writer.add_tensor("token_embd.weight", np.zeros((8, 64), dtype=np.float32))
    writer.add_tensor("output.weight", np.ones((8, 64), dtype=np.float32))
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()
    return path


@pytest.mark.parametrize(
    "kind, words",
    [
        ("missing", ["not found"]),
        ("empty", ["empty"]),
        ("cut", ["cut short", "ends at byte"]),  # the header is whole, the tensors' data is not
        ("header-cut", ["cut short inside its header"]),
        ("random", ["not a GGUF file"]),
        ("other-architecture", ["architecture 'clip'"]),
    ],
)
def test_a_damaged_gguf_model(isolated, capsys, kind, words):
    """The issue's first case: `unstereo score trunc.gguf t.csv --texts -o o.parquet` ended in a numpy reshape error
    and left an o.chunks folder behind."""
    from unstereo.models.gguf_check import check_gguf

    gguf = tiny_gguf(isolated / "m.gguf", arch="clip" if kind == "other-architecture" else "llama")
    if kind == "header-cut":
        gguf.write_bytes(gguf.read_bytes()[:40])
    elif kind != "other-architecture":
        damage(gguf, kind)
    table = texts_table(isolated / "t.parquet")
    out = isolated / "o.parquet"
    code, err = run_cli(capsys, *score_args(gguf, table, out, "--no-cache"))
    assert_one_clear_line(code, err, gguf, *words)
    assert not out.exists() and not out.with_name("o.chunks").exists()
    if kind != "missing":
        with pytest.raises(Exception, match=words[0]):  # the same check, callable by any GGUF loader
            check_gguf(gguf)
    # a GGUF that is only sampled loads straight from its tensors (models/gguf_direct.py): the same message
    from unstereo.errors import InputError
    from unstereo.models.gguf_direct import load_gguf

    with pytest.raises(InputError, match=words[0]):
        load_gguf(gguf.parent, gguf.name, "int8")


def test_a_sound_gguf_header_passes_the_check(isolated):
    from unstereo.models.gguf_check import check_gguf

    assert check_gguf(tiny_gguf(isolated / "m.gguf")) == "llama"


@pytest.mark.parametrize("kind", [*DAMAGES, "not-a-mapping", "wrong-type"])
def test_a_damaged_config(tmp_path, capsys, kind):
    config = tmp_path / "config.yaml"
    config.write_text("results_dir: results-x\ncorpus:\n  window: 10\n")
    if kind == "not-a-mapping":
        config.write_text("- a\n- b\n")
    elif kind == "wrong-type":
        config.write_text("results_dir: results-x\ncorpus:\n  window: ten\n")
    else:
        damage(config, kind)
    code, err = run_cli(capsys, "config", "validate", config)
    if kind in (
        "empty",
        "cut",
    ):  # an empty mapping is the defaults; the first half is a valid config of fewer keys
        assert code == 0, err
        return
    assert_one_clear_line(code, err, config)
    if kind == "wrong-type":
        assert "corpus.window" in err


@pytest.mark.parametrize("kind", [*DAMAGES, "wrong-columns"])
def test_a_damaged_table_of_prompts(model_dir, tmp_path, capsys, kind):
    prompts = tmp_path / "prompts.parquet"
    write_table(pd.DataFrame({"prompt_id": ["p1"], "prompt": ["she went to"]}), prompts)
    if kind == "wrong-columns":
        write_table(pd.DataFrame(TEXTS, columns=["id", "text"]), prompts)
    else:
        damage(prompts, kind)
    out = tmp_path / "c.parquet"
    code, err = run_cli(capsys, "llm", "continue", model_dir, prompts, "-o", out, "--device", "cpu")
    assert_one_clear_line(code, err, prompts)
    assert not out.exists()


@pytest.mark.parametrize("suffix", [".jsonl", ".jsonl.zst", ".txt"])
@pytest.mark.parametrize("kind", ["empty", "cut", "random"])
def test_a_damaged_corpus_file(tmp_path, capsys, suffix, kind):
    """A corpus shard: empty ("no documents"), cut short (.jsonl: a malformed last line; .zst: a truncated stream),
    random bytes (not UTF-8, not zstd): an error naming the file and line. A plain-text shard cut short is a shard
    of fewer lines (its last one cut): counted."""
    import zstandard

    text = "\n".join(json.dumps({"text": f"she said he went to the store {i}"}) for i in range(200)) + "\n"
    if suffix == ".txt":
        text = "\n".join(f"she said he went to the store {i}" for i in range(200)) + "\n"
    data = text.encode()
    shard = tmp_path / f"shard{suffix}"
    shard.write_bytes(zstandard.ZstdCompressor().compress(data) if suffix.endswith(".zst") else data)
    damage(shard, kind)
    code, err = run_cli(capsys, "corpus", "count", shard, "-o", tmp_path / "counts")
    if kind == "cut" and suffix == ".txt":
        assert code == 0, err
        return
    assert_one_clear_line(code, err, shard)


@pytest.mark.parametrize("kind", [*DAMAGES, "wrong-columns"])
def test_a_damaged_delta_table(tmp_path, capsys, kind):
    pairs = tmp_path / "pairs.parquet"
    pd.DataFrame({"pair_id": ["b:0"], "benchmark": ["b"], "template": ["{pronoun} went home"],
                  "sentence_female": ["she went home"], "sentence_male": ["he went home"], "seed_word": ["home"],
                  "max_pmi": [np.nan], "max_pmi_word": [None], "source": ["x"]}).to_parquet(pairs)  # fmt: skip
    delta = tmp_path / "delta.csv"
    pd.DataFrame({"word": ["home"], "delta": [0.5], "count": [3]}).to_csv(delta, index=False)
    if kind == "wrong-columns":
        pd.DataFrame({"word": ["home"], "x": [0.5]}).to_csv(delta, index=False)
    else:
        damage(delta, kind)
    code, err = run_cli(capsys, "benchmarks", "maxpmi", pairs, "--delta", delta, "-o", tmp_path / "o.parquet")
    assert_one_clear_line(code, err, delta)  # cut: the header itself is cut ("needs a count column")


@pytest.mark.parametrize(
    "target, kind",
    [("config.json", "random"), ("config.json", "empty"), ("model.safetensors", "cut"),
     ("model.safetensors", "random"), ("model.safetensors", "empty"), ("model.safetensors", "missing")],
)  # fmt: skip
def test_a_damaged_model_folder(tmp_path, capsys, target, kind):
    model = save_tiny_gpt2(tmp_path / "model")
    damage(model / target, kind)
    out = tmp_path / "o.parquet"
    code, err = run_cli(capsys, *score_args(model, texts_table(tmp_path / "t.parquet"), out, "--no-cache"))
    assert_one_clear_line(code, err, model, "cannot load model")
    assert not out.exists() and not out.with_name("o.chunks").exists()


# ---- derived data -------------------------------------------------------------------------------------------------


def wrong_shape_sqlite(path: Path, table: str) -> None:
    """A sound SQLite file whose ``table`` has other columns (another program's, or an older version's)."""
    with closing(sqlite3.connect(path)) as conn:
        conn.execute(f"CREATE TABLE {table} (a TEXT, b TEXT)")
        conn.execute(f"INSERT INTO {table} VALUES ('x', 'y')")
        conn.commit()


def damage_sqlite(path: Path, kind: str, table: str) -> None:
    if kind == "wrong-shape":
        path.unlink()
        wrong_shape_sqlite(path, table)
    else:
        damage(path, kind)


def set_aside_copies(path: Path) -> list[Path]:
    """The damaged copies of ``path`` set aside (SQLite's -wal and -shm files, moved with theirs, left out)."""
    return sorted(
        p for p in path.parent.glob(path.name + ".damaged-*") if not p.name.endswith(("-wal", "-shm"))
    )


@pytest.mark.parametrize("kind", ["empty", "cut", "random", "wrong-shape"])
def test_a_damaged_score_cache_is_set_aside(model_dir, isolated, capsys, caplog, kind):
    """The issue's second case: `unstereo score ... --cache bad.sqlite` with a cache of random bytes ended in
    `sqlite3.DatabaseError: file is not a database`. The cut copy is the first half of a cache of 3 scores (SQLite's
    pages: the header and the first table pages survive, the rest is gone)."""
    table = texts_table(isolated / "t.parquet")
    cache = isolated / "cache.sqlite"
    clean = isolated / "clean.parquet"
    assert run_cli(capsys, *score_args(model_dir, table, clean, "--cache", cache))[0] == 0
    assert not Path(
        f"{cache}-wal"
    ).exists()  # closed: the WAL is in the file, and cutting the file cuts the data
    damage_sqlite(cache, kind, "scores")
    before = cache.read_bytes()
    out = isolated / "o.parquet"
    code, err = run_cli(capsys, *score_args(model_dir, table, out, "--cache", cache))
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(clean))
    aside = set_aside_copies(cache)
    if kind == "empty":  # an empty file is a new SQLite database: nothing to set aside
        assert aside == []
        return
    assert len(aside) == 1 and aside[0].read_bytes() == before  # kept as it was
    assert "set aside" in caplog.text and str(cache) in caplog.text
    with closing(sqlite3.connect(cache)) as conn:  # the new cache holds the three scores
        assert conn.execute("SELECT COUNT(*) FROM scores").fetchone()[0] == 3


def test_a_folder_given_as_a_cache_is_an_error_not_set_aside(tmp_path):
    from unstereo.errors import InputError
    from unstereo.scoring.cache import ScoreCache

    (tmp_path / "c").mkdir()
    with pytest.raises(InputError, match="is a folder"):
        ScoreCache(tmp_path / "c")
    assert (tmp_path / "c").is_dir() and set_aside_copies(tmp_path / "c") == []


@pytest.mark.parametrize("kind", ["cut", "random", "wrong-shape"])
def test_a_damaged_llm_cache_is_set_aside(model_dir, tmp_path, capsys, caplog, kind):
    """The issue's third case: `unstereo llm continue ... --cache bad.sqlite` with random bytes."""
    prompts = tmp_path / "prompts.csv"
    pd.DataFrame({"prompt_id": ["p1", "p2"], "prompt": ["she went to", "he said"]}).to_csv(
        prompts, index=False
    )
    cache = tmp_path / "llm.sqlite"
    args = ["llm", "continue", model_dir, prompts, "--device", "cpu", "--max-new-tokens", "4", "--seed", "3"]
    clean = tmp_path / "clean.parquet"
    assert run_cli(capsys, *args, "-o", clean, "--cache", cache)[0] == 0
    assert not Path(f"{cache}-wal").exists()
    damage_sqlite(cache, kind, "completions")
    out = tmp_path / "o.parquet"
    code, err = run_cli(capsys, *args, "-o", out, "--cache", cache)
    assert code == 0, err
    pd.testing.assert_frame_equal(pd.read_parquet(out), pd.read_parquet(clean))
    assert len(set_aside_copies(cache)) == 1 and "set aside" in caplog.text


@pytest.mark.parametrize("kind", ["empty", "cut", "random", "list", "wrong-type"])
def test_a_damaged_probe_verdict_is_set_aside(isolated, caplog, kind):
    from unstereo.engine.kernels import probe_memo

    probe_memo.remember("scorer", "k", {"path": "tree", "segment": 32})
    path = probe_memo._path("scorer", "k")
    if kind == "list":
        path.write_text("[1, 2]")
    elif kind == "wrong-type":
        path.write_text(json.dumps({"path": "tree", "segment": "32"}))
    else:
        damage(path, kind)
    assert probe_memo.recall("scorer", "k", {"path": str, "segment": int}) is None  # probed again
    assert len(set_aside_copies(path)) == 1 and not path.exists() and "set aside" in caplog.text
    probe_memo.remember("scorer", "k", {"path": "tree", "segment": 32})
    assert probe_memo.recall("scorer", "k", {"path": str, "segment": int}) == {"path": "tree", "segment": 32}


@pytest.mark.parametrize("target", ["RUN.json", "0001.parquet"])
@pytest.mark.parametrize("kind", ["empty", "cut", "random"])
def test_a_damaged_chunk_folder_is_set_aside(tmp_path, caplog, target, kind):
    """A killed run's chunk folder (chunks of one row; killed after its last chunk, before the final table) with
    its marker or one chunk damaged: the folder (marker) or the chunk is set aside and the table is the same as a
    clean run's, the other chunks reused where the marker is sound."""
    from unstereo.chunked_map import chunk_dir_for, chunked_map

    table = pd.DataFrame({"id": ["a", "b", "c"], "x": [1, 2, 3]})
    calls = []

    def fn(chunk):
        calls.append(list(chunk["id"]))
        return chunk.assign(y=chunk["x"] * 10)

    def killed(k, n):
        if k == n - 1:
            raise KeyboardInterrupt

    out = tmp_path / "t.parquet"
    run = {"what": "an interrupted run"}
    with pytest.raises(KeyboardInterrupt):
        chunked_map(table, fn, out, fingerprint=run, chunk_size=1, key="id", after_chunk=killed)
    chunks = chunk_dir_for(out)
    damage(chunks / target, kind)
    calls.clear()
    got = chunked_map(table, fn, out, fingerprint=run, chunk_size=1, key="id")
    pd.testing.assert_frame_equal(got, table.assign(y=[10, 20, 30]))
    pd.testing.assert_frame_equal(pd.read_parquet(out), got)
    assert "set aside" in caplog.text
    if target == "RUN.json":  # the whole folder aside (its chunks cannot be trusted), every chunk again
        assert calls == [["a"], ["b"], ["c"]]
        aside = set_aside_copies(chunks)
        assert len(aside) == 1 and (aside[0] / "0000.parquet").exists()
    else:  # that chunk aside, out of the folder (removed once the table is written); only it again
        assert calls == [["b"]]
        assert len(list(tmp_path.glob("t.chunks-0001.parquet.damaged-*"))) == 1
    assert not chunks.exists()


def test_set_aside_never_overwrites(tmp_path):
    from unstereo.io import set_aside

    a = tmp_path / "c.sqlite"
    for n in range(3):
        a.write_text(str(n))
        set_aside(a, "test")
    aside = sorted(tmp_path.glob("c.sqlite.damaged-*"))
    assert sorted(p.read_text() for p in aside) == ["0", "1", "2"] and not a.exists()
    # already moved by another process: nothing to do, nothing raised
    assert set_aside(tmp_path / "gone", "test").name.startswith("gone.damaged-")
    assert len(os.listdir(tmp_path)) == 3


# ---- a failure inside a job names its files --------------------------------------------------------------------------


def test_a_failed_command_names_its_files(model_dir, tmp_path, capsys):
    """After the error line, one line lists the command's arguments that are existing files (its inputs): the log of
    a job among 200 says which files it read, whatever failed."""
    table = tmp_path / "texts.parquet"
    write_table(pd.DataFrame({"prompt_id": ["a"], "prompt": ["x"]}), table)
    code, err = run_cli(capsys, *score_args(model_dir, table, tmp_path / "o.parquet", "--no-cache"))
    assert code == 1 and err.splitlines()[-1] == f"unstereo: the failed command's files: {model_dir}, {table}"


def test_a_defect_keeps_its_traceback_and_names_the_files(tmp_path, capsys, monkeypatch):
    """An error no check foresaw (a defect): its traceback, then the files, exit status 1."""
    import unstereo.config.cli as config_cli

    config = tmp_path / "c.yaml"
    config.write_text("seed: 0\n")
    monkeypatch.setattr(config_cli, "load_config", lambda *a, **k: 1 / 0)
    code, err = run_cli(capsys, "config", "validate", config)
    assert code == 1 and "Traceback" in err and "ZeroDivisionError" in err
    assert err.splitlines()[-1] == f"unstereo: the failed command's files: {config}"


def test_snakemake_names_the_inputs_of_a_failed_job(tmp_path):
    """Snakemake's error summary lists the failed job's inputs and its log, and the log ends with the file at fault
    and the files the command read."""
    import subprocess
    import sys

    bad = tmp_path / "bad.yaml"
    bad.write_bytes(np.random.default_rng(55).bytes(64))
    (tmp_path / "Snakefile").write_text(
        "rule check:\n"
        "    input: 'bad.yaml'\n"
        "    output: 'checked.txt'\n"
        "    log: 'logs/check.log'\n"
        "    shell: 'unstereo config validate {input} > {log} 2>&1 && touch {output}'\n"
    )
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}"}
    res = subprocess.run([str(bindir / "snakemake"), "--cores", "1", "-d", str(tmp_path), "-s",
                          str(tmp_path / "Snakefile")], capture_output=True, text=True, env=env, timeout=300)  # fmt: skip
    assert res.returncode != 0
    summary = res.stdout + res.stderr
    assert "Error in rule check" in summary and "input: bad.yaml" in summary and "logs/check.log" in summary
    log = (tmp_path / "logs" / "check.log").read_text()
    assert "Traceback" not in log and "bad.yaml: not a text file" in log
    assert log.splitlines()[-1] == "unstereo: the failed command's files: bad.yaml"


def test_an_output_that_cannot_be_written_is_one_line(model_dir, tmp_path, capsys):
    """An OSError about a file (here the output's folder is a file) is reported like an input error: the file and
    the reason, no traceback."""
    (tmp_path / "folder").write_text("a file where a folder should be")
    out = tmp_path / "folder" / "o.parquet"
    code, err = run_cli(
        capsys, *score_args(model_dir, texts_table(tmp_path / "t.parquet"), out, "--no-cache")
    )
    assert code == 1 and "Traceback" not in err, err
    assert f"unstereo: error: {tmp_path / 'folder'}" in err


def test_snakemake_names_the_config_file_and_key(tmp_path):
    """A config key of the wrong type given to the workflow: Snakemake stops before any job, naming the file and
    the key."""
    import subprocess
    import sys

    config = tmp_path / "bad.yaml"
    config.write_text("corpus:\n  window: ten\n")
    repo = Path(__file__).resolve().parents[1]
    res = subprocess.run([str(Path(sys.executable).parent / "snakemake"), "-n", "--quiet", "rules", "--configfile",
                          str(config), "-d", str(tmp_path)], cwd=repo, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode != 0
    assert f"{config}: config key 'corpus.window': 'ten' is not of type 'integer'" in res.stdout + res.stderr


@pytest.mark.parametrize("kind", ["missing", "empty", "random"])
@pytest.mark.parametrize("reader", ["bias specification", "prompt file"])
def test_a_damaged_specification_or_prompt_file(tmp_path, reader, kind):
    from unstereo.biastest.spec import load_spec_file
    from unstereo.errors import InputError
    from unstereo.unstereoeval.prompts import _load_file

    path = tmp_path / "f.yaml"
    path.write_text("prompts:\n  - {id: a, text: 'x {word}', fields: [word]}\n")
    damage(path, kind)
    with pytest.raises(InputError) as err:
        (load_spec_file if reader == "bias specification" else _load_file)(path)
    assert str(err.value).startswith(f"{path}: ")  # names the file
