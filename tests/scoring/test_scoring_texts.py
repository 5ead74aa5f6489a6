"""Text-level scoring (id, text) -> (id, logp, ntok): hand values, distinct texts scored once, resume, pairs on it."""

from __future__ import annotations

import math

import pandas as pd
import pytest
from _float_tolerance import f32_sum_tol
from _scoring_models import Bigram, bigram_tokenizer, tiny_gpt2, word_tokenizer
from click.testing import CliRunner
from test_scoring_chunks import RUN, bigram_pairs

from unstereo.chunked_map import chunk_dir_for
from unstereo.errors import InputError
from unstereo.scoring import CausalScorer, score_pairs, score_texts
from unstereo.scoring.chunks import TEXT_ID, pair_texts, pairs_from_texts
from unstereo.scoring.texts import score_distinct
from unstereo.tables import SCORES, TEXT_SCORES, read_table, validate, write_table

LN = math.log


class Recording:
    """Scorer factory over the bigram model that records every list of texts the scorer is asked for."""

    def __init__(self, die_after: int | None = None):
        self.die_after = die_after
        self.made = 0
        self.asked: list[list[str]] = []

    def __call__(self):
        self.made += 1
        scorer = CausalScorer(Bigram(), bigram_tokenizer(), batch_size=4)
        inner = scorer.score

        def score(sentences):
            if self.die_after is not None and len(self.asked) >= self.die_after:
                raise KeyboardInterrupt("simulated kill")
            self.asked.append(list(sentences))
            return inner(sentences)

        scorer.score = score
        return scorer


def texts(*pairs: tuple[str, str]) -> pd.DataFrame:
    return pd.DataFrame(pairs, columns=["id", "text"])


def test_hand_values_and_table(tmp_path):
    # ln p("a") = ln p(a|<s>) = ln 2/9; "b b": 3/9 * 1/8 = 1/24; "a b": 2/9 * 2/7 = 4/63; "b a": 3/9 * 3/8 = 1/8
    out = tmp_path / "t.parquet"
    got = score_texts(
        texts(("x", "a"), ("y", "b b"), ("z", "a b"), ("w", "b a")),
        Recording(),
        out,
        run=RUN,
        chunk_size=3,
        model_name="bigram",
    )
    validate(got, TEXT_SCORES)
    assert list(got["id"]) == ["x", "y", "z", "w"] and list(got.columns[:4]) == [
        "id",
        "model",
        "logp",
        "ntok",
    ]
    assert got["logp"].tolist() == pytest.approx(
        [LN(2 / 9), LN(1 / 24), LN(4 / 63), LN(1 / 8)], abs=f32_sum_tol(4.0, 2)
    )  # float32 sums of <= 2 terms
    assert got["ntok"].tolist() == [1, 2, 2, 2] and got["ntok"].dtype == "int64"
    assert set(got["chunk_size"]) == {3} and set(got["model_id"]) == {"bigram"}
    assert set(got["bos_policy"]) == {"bos:<s>"} and "torch_version" in got.columns
    pd.testing.assert_frame_equal(read_table(out, TEXT_SCORES), got)
    assert not chunk_dir_for(out).exists()


def test_each_distinct_text_of_a_chunk_is_scored_once(tmp_path):
    factory = Recording()
    table = texts(("1", "a"), ("2", "b b"), ("3", "a"), ("4", "a"), ("5", "b b"), ("6", "a b"))
    got = score_texts(table, factory, tmp_path / "t.parquet", run=RUN, chunk_size=4)
    # chunk 1 (rows 1-4): a, b b, a, a -> asked for [a, b b]; chunk 2 (rows 5-6): b b, a b -> both
    assert factory.asked == [["a", "b b"], ["b b", "a b"]]
    assert got["logp"].tolist() == pytest.approx(
        [LN(2 / 9), LN(1 / 24), LN(2 / 9), LN(2 / 9), LN(1 / 24), LN(4 / 63)]
    )


def test_score_distinct_keeps_the_callers_order():
    class Echo:
        def score(self, sentences):
            self.seen = list(sentences)
            return [(float(len(s)), i) for i, s in enumerate(sentences)]

    echo = Echo()
    assert score_distinct(echo, ["bb", "a", "bb", "ccc", "a"]) == [
        (2.0, 0),
        (1.0, 1),
        (2.0, 0),
        (3.0, 2),
        (1.0, 1),
    ]
    assert echo.seen == ["bb", "a", "ccc"]


def test_resume_scores_only_unfinished_chunks_and_loads_no_model_when_done(tmp_path):
    table = texts(*[(f"t{i}", "a b"[: 1 + 2 * (i % 2)] + " a" * (i // 2)) for i in range(7)])
    out = tmp_path / "t.parquet"
    want = score_texts(table, Recording(), tmp_path / "ref.parquet", run=RUN, chunk_size=2)
    with pytest.raises(KeyboardInterrupt):
        score_texts(table, Recording(die_after=2), out, run=RUN, chunk_size=2)
    again = Recording()
    got = score_texts(table, again, out, run=RUN, chunk_size=2)
    assert again.asked == [list(table["text"][4:6]), list(table["text"][6:])]  # chunks 3 and 4 of 4
    pd.testing.assert_frame_equal(got.drop(columns="batch_size"), want.drop(columns="batch_size"))

    empty = Recording()
    score_texts(table.iloc[:0], empty, tmp_path / "e.parquet", run=RUN)
    assert empty.made == 0 and len(read_table(tmp_path / "e.parquet", TEXT_SCORES)) == 0


def test_bad_texts_are_input_errors(tmp_path):
    with pytest.raises(InputError, match=r"row 1 \(id 'y'\): empty text"):
        score_texts(texts(("x", "a"), ("y", " ")), Recording(), tmp_path / "t.parquet", run=RUN)
    with pytest.raises(InputError, match="duplicated"):
        score_texts(texts(("x", "a"), ("x", "b")), Recording(), tmp_path / "t.parquet", run=RUN)
    with pytest.raises(InputError, match="lacks column"):
        score_texts(pd.DataFrame({"id": ["x"]}), Recording(), tmp_path / "t.parquet", run=RUN)


def test_pairs_are_two_texts_each_in_chunk_blocks():
    got = pair_texts(["p", "q", "r"], ["F1", "F2", "F3"], ["M1", "M2", "M3"], chunk_size=2)
    assert list(got["id"]) == ["p|female", "q|female", "p|male", "q|male", "r|female", "r|male"]
    assert list(got["text"]) == ["F1", "F2", "M1", "M2", "F3", "M3"]
    assert TEXT_ID["male"].format(pair_id="USE-5:3") == "USE-5:3|male"

    scores = pd.DataFrame(
        {
            "id": got["id"],
            "logp": [-1.0, -2.0, -3.0, -4.0, -5.0, -6.0],
            "ntok": [1, 2, 3, 4, 5, 6],
            "device": ["d0", "d0", "d0", "d0", "d1", "d1"],
        }
    )
    back = pairs_from_texts(scores, ["p", "q", "r"])
    assert back.to_dict("list") == {
        "pair_id": ["p", "q", "r"],
        "logp_female": [-1.0, -2.0, -5.0],
        "logp_male": [-3.0, -4.0, -6.0],
        "ntok_female": [1, 2, 5],
        "ntok_male": [3, 4, 6],
        "device": ["d0", "d0", "d1"],
    }


def test_pair_scores_equal_text_scores_and_chunks_hold_texts(tmp_path):
    pairs = bigram_pairs(5)
    out = tmp_path / "P.parquet"
    factory = Recording(die_after=1)
    with pytest.raises(KeyboardInterrupt):
        score_pairs(pairs, factory, out, model_name="bigram", run=RUN, chunk_size=2)
    # one chunk = the female sentences of pairs 0-1, then their male ones, in one scorer call (distinct texts)
    assert factory.asked == [
        list(dict.fromkeys([*pairs["sentence_female"][:2], *pairs["sentence_male"][:2]]))
    ]
    chunk = pd.read_parquet(chunk_dir_for(out) / "0000.parquet")
    assert list(chunk["id"]) == ["T:0|female", "T:1|female", "T:0|male", "T:1|male"]

    got = score_pairs(pairs, Recording(), out, model_name="bigram", run=RUN, chunk_size=2)
    validate(got, SCORES)
    sentences = texts(*[(f"f{i}", s) for i, s in enumerate(pairs["sentence_female"])])
    sentences = pd.concat([sentences, texts(*[(f"m{i}", s) for i, s in enumerate(pairs["sentence_male"])])])
    single = score_texts(sentences, Recording(), tmp_path / "s.parquet", run=RUN).set_index("id")
    assert got["logp_female"].tolist() == pytest.approx(
        single.loc[[f"f{i}" for i in range(5)], "logp"].tolist()
    )
    assert got["ntok_male"].tolist() == single.loc[[f"m{i}" for i in range(5)], "ntok"].tolist()


def test_cli_texts(tmp_path):
    from unstereo.cli import cli

    tok = word_tokenizer()
    model_dir = tmp_path / "gpt2"
    tiny_gpt2(len(tok)).save_pretrained(model_dir)
    tok.save_pretrained(model_dir)
    table = texts(
        ("s1", "She went to the store."), ("s2", "I gave him a book."), ("s3", "She went to the store.")
    )
    write_table(table.assign(note="ignored"), tmp_path / "texts.parquet")
    runner = CliRunner()
    args = ["score", str(model_dir), str(tmp_path / "texts.parquet"), "--texts", "--device", "cpu"]
    res = runner.invoke(
        cli, [*args, "-o", str(tmp_path / "t.parquet"), "--name", "tiny", "--chunk-size", "2"]
    )
    assert res.exit_code == 0, res.output
    df = read_table(tmp_path / "t.parquet", TEXT_SCORES)
    assert list(df["id"]) == ["s1", "s2", "s3"] and set(df["model"]) == {"tiny"}
    assert list(df["ntok"]) == [6, 6, 6] and set(df["chunk_size"]) == {2} and set(df["scorer"]) == {"causal"}
    # same text, other chunk: float32 rounding of its 6 terms
    assert df["logp"].iloc[0] == pytest.approx(df["logp"].iloc[2], abs=f32_sum_tol(df["logp"].iloc[0], 6))
    assert (df["logp"] < 0).all()

    res = runner.invoke(cli, [*args, "-o", str(tmp_path / "u.parquet"), "--reference-quirks"])
    assert res.exit_code != 0 and "does not apply to --texts" in res.output
