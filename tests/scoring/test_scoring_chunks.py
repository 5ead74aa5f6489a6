"""Resumable chunked scoring, the sentences that are scored (reference_quirks), the output table and the CLI."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from _float_tolerance import f32_sum_tol
from _scoring_models import Bigram, bigram_tokenizer, tiny_bert, tiny_gpt2, word_tokenizer
from click.testing import CliRunner

from unstereo.chunked_map import chunk_dir_for
from unstereo.errors import InputError
from unstereo.scoring import CausalScorer, score_pairs
from unstereo.scoring.chunks import sentences_to_score
from unstereo.tables import PAIRS, SCORES, read_table, validate, write_table
from unstereo.templates import fill_template

RUN = {
    "model_id": "bigram",
    "model_revision": None,
    "gguf_file": None,
    "scorer": "causal",
    "dtype": "float32",
}


def bigram_pairs(n: int) -> pd.DataFrame:
    """n pairs of a/b 'sentences' (the bigram vocabulary) with distinct lengths and contents."""
    rows = []
    for i in range(n):
        f = " ".join("ab"[(i >> k) & 1] for k in range(1 + i % 4))
        m = " ".join("ba"[(i >> k) & 1] for k in range(1 + (i + 1) % 5))
        rows.append(
            dict(
                pair_id=f"T:{i}",
                benchmark="T",
                template=f,
                sentence_female=f,
                sentence_male=m,
                seed_word=None,
                max_pmi=None,
                max_pmi_word=None,
                source="test",
            )
        )
    return validate(pd.DataFrame(rows), PAIRS)


class Counting:
    """Scorer factory that counts models built, chunks scored and forward passes; can die after k chunks."""

    def __init__(self, die_after: int | None = None):
        self.die_after = die_after
        self.models: list[Bigram] = []
        self.chunks = 0

    def __call__(self):
        model = Bigram()
        self.models.append(model)
        scorer = CausalScorer(model, bigram_tokenizer(), batch_size=4)
        inner = scorer.score

        def score(sentences):
            if self.die_after is not None and self.chunks >= self.die_after:
                raise KeyboardInterrupt("simulated kill")
            self.chunks += 1
            return inner(sentences)

        scorer.score = score
        return scorer

    @property
    def forward_passes(self) -> int:
        return sum(m.calls for m in self.models)


def test_scores_table_and_hand_values(tmp_path):
    # pair 0: female "a" = ln p(a|<s>) = ln(2/9); male "b b" = ln p(b|<s>) + ln p(b|b) = ln(3/9 * 1/8) = ln(1/24)
    pairs = bigram_pairs(7)
    out = tmp_path / "scores" / "bigram" / "T.parquet"
    df = score_pairs(pairs, Counting(), out, model_name="bigram", run=RUN, chunk_size=3)
    validate(df, SCORES)
    got = read_table(out, SCORES)
    assert list(got["pair_id"]) == list(pairs["pair_id"])
    # float32 sums of 1 and 2 hand-table log-probs (tests/_float_tolerance.py)
    assert got.loc[0, "logp_female"] == pytest.approx(math.log(2 / 9), abs=f32_sum_tol(math.log(2 / 9), 1))
    assert got.loc[0, "logp_male"] == pytest.approx(math.log(1 / 24), abs=f32_sum_tol(math.log(1 / 24), 2))
    assert list(got["ntok_female"]) == [len(s.split()) for s in pairs["sentence_female"]]
    for col in [
        "model",
        "benchmark",
        "model_id",
        "model_revision",
        "dtype",
        "batch_size",
        "device",
        "bos_policy",
        "torch_version",
        "transformers_version",
        "unstereo_version",
        "reference_quirks",
        "chunk_size",
    ]:
        assert col in got.columns, col
    assert set(got["model"]) == {"bigram"} and set(got["bos_policy"]) == {"bos:<s>"}
    assert not chunk_dir_for(out).exists()  # chunks are removed once the table is written


def test_resume_after_kill_does_not_rescore_finished_chunks(tmp_path):
    pairs = bigram_pairs(10)  # chunk size 3 -> 4 chunks: 3, 3, 3, 1 pairs
    out = tmp_path / "T.parquet"
    want = score_pairs(
        pairs, Counting(), tmp_path / "ref.parquet", model_name="bigram", run=RUN, chunk_size=3
    )

    killed = Counting(die_after=2)
    with pytest.raises(KeyboardInterrupt):
        score_pairs(pairs, killed, out, model_name="bigram", run=RUN, chunk_size=3)
    assert not out.exists()
    assert sorted(p.name for p in chunk_dir_for(out).glob("*.parquet")) == ["0000.parquet", "0001.parquet"]

    resumed = Counting()
    got = score_pairs(pairs, resumed, out, model_name="bigram", run=RUN, chunk_size=3)
    assert resumed.chunks == 2  # only chunks 2 and 3
    # chunk 2: 6 sentences, batches of 4 -> 2 passes; chunk 3: 2 sentences -> 1 pass
    assert resumed.forward_passes == 3
    pd.testing.assert_frame_equal(got.drop(columns=["batch_size"]), want.drop(columns=["batch_size"]))


def test_finished_chunks_need_no_model(tmp_path, monkeypatch):
    # Killed after the last chunk but before the final table: the rerun does not even load the model.
    from unstereo import chunked_map as chunks  # where the final table is written

    pairs = bigram_pairs(4)
    out = tmp_path / "T.parquet"
    real_write = chunks.write_table

    def die_on_final(df, path, schema=None):
        if schema is SCORES:
            raise KeyboardInterrupt("killed before the final write")
        return real_write(df, path, schema)

    monkeypatch.setattr(chunks, "write_table", die_on_final)
    first = Counting()
    with pytest.raises(KeyboardInterrupt):
        score_pairs(pairs, first, out, model_name="bigram", run=RUN, chunk_size=2)
    assert first.chunks == 2 and not out.exists()
    monkeypatch.setattr(chunks, "write_table", real_write)
    again = Counting(die_after=0)  # would raise if asked to score anything
    score_pairs(pairs, again, out, model_name="bigram", run=RUN, chunk_size=2)
    assert again.models == [] and out.exists()


@pytest.mark.parametrize(
    "change",
    [
        {"run": {**RUN, "dtype": "bfloat16"}},
        {"chunk_size": 3},
        {"reference_quirks": True},
        {"pairs": "other sentence"},
    ],
)
def test_chunks_of_another_run_are_discarded(tmp_path, change):
    pairs = bigram_pairs(6)
    out = tmp_path / "T.parquet"
    with pytest.raises(KeyboardInterrupt):
        score_pairs(pairs, Counting(die_after=2), out, model_name="bigram", run=RUN, chunk_size=2)
    kw = {"run": RUN, "chunk_size": 2, "reference_quirks": False}
    kw.update({k: v for k, v in change.items() if k != "pairs"})
    if "pairs" in change:
        pairs.loc[0, "sentence_female"] = "b b b"
    again = Counting()
    score_pairs(pairs, again, out, model_name="bigram", **kw)
    assert again.chunks == math.ceil(6 / kw["chunk_size"])  # nothing reused


def test_sentences_to_score_reference_quirks():
    # Default: the table's sentences as they are. Quirks: re-filled from the template with .capitalize() and '"'
    # removed: '{pronoun} told "Mary" about {pronoun1} Book.' -> 'She told mary about her book.'
    t = '{pronoun} told "Mary" about {pronoun1} Book.'
    pairs = pd.DataFrame(
        [
            dict(
                pair_id="x",
                benchmark="T",
                template=t,
                sentence_female=fill_template(t, "female"),
                sentence_male=fill_template(t, "male"),
                seed_word=None,
                max_pmi=None,
                max_pmi_word=None,
                source="t",
            )
        ]
    )
    assert sentences_to_score(pairs) == (
        ['She told "Mary" about her Book.'],
        ['He told "Mary" about his Book.'],
    )
    assert sentences_to_score(pairs, reference_quirks=True) == (
        ["She told mary about her book."],
        ["He told mary about his book."],
    )


def test_empty_sentence_is_an_input_error(tmp_path):
    pairs = bigram_pairs(3)
    pairs.loc[1, "sentence_male"] = "  "
    with pytest.raises(InputError, match=r"row 1 \(pair_id 'T:1'\)"):
        score_pairs(pairs, Counting(), tmp_path / "x.parquet", model_name="m", run=RUN)


# ------------------------------------------------------------------------------------------------------- CLI


def test_cli_end_to_end_on_saved_tiny_models(tmp_path):
    from unstereo.cli import cli

    tok = word_tokenizer()
    gpt2_dir = tmp_path / "gpt2"
    tiny_gpt2(len(tok)).save_pretrained(gpt2_dir)
    tok.save_pretrained(gpt2_dir)
    bert_dir = tmp_path / "bert"
    bert, btok = tiny_bert(tmp_path)
    bert.save_pretrained(bert_dir)
    btok.save_pretrained(bert_dir)

    sents = [
        ("She went to the store.", "He went to the store."),
        ("I gave her a book.", "I gave him a book."),
    ]
    pairs = pd.DataFrame(
        [
            dict(
                pair_id=f"P:{i}",
                benchmark="P",
                template=m,
                sentence_female=f,
                sentence_male=m,
                seed_word=None,
                max_pmi=None,
                max_pmi_word=None,
                source="t",
            )
            for i, (f, m) in enumerate(sents)
        ]
    )
    write_table(pairs, tmp_path / "pairs.parquet", PAIRS)
    runner = CliRunner()
    res = runner.invoke(
        cli,
        [
            "score",
            str(gpt2_dir),
            str(tmp_path / "pairs.parquet"),
            "-o",
            str(tmp_path / "s.parquet"),
            "--name",
            "tiny",
            "--batch-size",
            "3",
            "--device",
            "cpu",
            "--chunk-size",
            "1",
            "--threads",
            "1",
        ],
    )
    assert res.exit_code == 0, res.output
    df = read_table(tmp_path / "s.parquet", SCORES)
    assert list(df["ntok_female"]) == [6, 6] and set(df["model"]) == {"tiny"}
    assert set(df["batch_size_requested"]) == {"3"} and set(df["device"]) == {"cpu"}
    assert set(df["dtype"]) == {"float32"} and set(df["bos_policy"]) == {"bos:<s>"}

    res = runner.invoke(
        cli,
        [
            "score",
            str(bert_dir),
            str(tmp_path / "pairs.parquet"),
            "-o",
            str(tmp_path / "m.parquet"),
            "--masked",
        ],
    )
    assert res.exit_code == 0, res.output
    df = read_table(tmp_path / "m.parquet", SCORES)
    assert list(df["ntok_male"]) == [6, 6] and set(df["scorer"]) == {"masked-pll"}

    res = runner.invoke(
        cli,
        ["score", str(gpt2_dir), str(tmp_path / "pairs.parquet"), "-o", "x.parquet", "--batch-size", "zero"],
    )
    assert res.exit_code != 0 and "--batch-size: config key 'score.batch_size'" in res.output


def test_empty_pair_table_gives_empty_scores(tmp_path):
    pairs = bigram_pairs(2).iloc[:0]
    factory = Counting()
    df = score_pairs(pairs, factory, tmp_path / "e.parquet", model_name="m", run=RUN)
    assert len(df) == 0 and factory.models == []
    assert len(read_table(tmp_path / "e.parquet", SCORES)) == 0
