"""Scores of a biastest pair table under one model, through the project's text scorer (one path, resumable).

Causal LM: each sentence is scored by :func:`unstereo.scoring.texts.score_texts` (ln p with BOS prepended, the
number of scored tokens); ``score = logp / ntok`` (minus the mean token NLL, the paper's loss) or ``logp``
(``causal_score: sum``). Masked LM: the words where the two sentences differ (the group term, and any pronoun the
pair changed with it) are marked and scored at their masks (:mod:`unstereo.scoring.masked_term`). Higher = more
probable in both cases. The text scores stay beside the output (``<out>.texts.parquet`` and its chunks), so a rerun or
a killed job picks up where it stopped.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import InputError
from ..tables import validate, write_table
from .schemas import PAIRS, SCORES

_TOKEN = re.compile(r"\w+|[^\w\s]")
CAUSAL_SCORES = ("mean", "sum")
MODEL_OPTIONS = ("gguf_file", "revision", "batch_size", "max_batch_size", "dtype", "device", "bos_policy")


def diff_spans(a: str, b: str) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """Character spans of the words where ``a`` and ``b`` differ, in each (word-level diff)."""
    ta, tb = list(_TOKEN.finditer(a)), list(_TOKEN.finditer(b))
    sm = difflib.SequenceMatcher(a=[m.group() for m in ta], b=[m.group() for m in tb], autojunk=False)
    sa, sb = [], []
    for op, i1, i2, j1, j2 in sm.get_opcodes():
        if op == "equal":
            continue
        if i2 > i1:
            sa.append((ta[i1].start(), ta[i2 - 1].end()))
        if j2 > j1:
            sb.append((tb[j1].start(), tb[j2 - 1].end()))
    return sa, sb


def pair_texts(pairs: pd.DataFrame, masked: bool = False) -> pd.DataFrame:
    """The TEXTS table of the pairs: ``{pair_id}|a`` and ``{pair_id}|b``; for a masked LM with the differing words
    marked. Pairs whose sentences are equal (or differ only by deletion, for a masked LM) are an InputError."""
    from ..scoring.masked_term import mark

    ids, texts = [], []
    for pid, a, b in zip(pairs["pair_id"], pairs["sentence_a"], pairs["sentence_b"], strict=True):
        if a == b:
            raise InputError(f"pair {pid!r}: both sentences are {a!r}")
        if masked:
            sa, sb = diff_spans(a, b)
            if not sa or not sb:
                raise InputError(f"pair {pid!r}: one sentence only adds words to the other: no term to mask")
            a, b = mark(a, sa), mark(b, sb)
        ids += [f"{pid}|a", f"{pid}|b"]
        texts += [a, b]
    return pd.DataFrame({"id": ids, "text": texts})


def to_pair_scores(
    text_scores: pd.DataFrame, pair_ids: list[str], causal_score: str, masked: bool
) -> pd.DataFrame:
    """Text scores -> one SCORES row per pair (score_a, score_b, and logp/ntok of each sentence)."""
    by_id = text_scores.set_index("id")
    out = pd.DataFrame({"pair_id": pair_ids})
    for side in ("a", "b"):
        rows = by_id.loc[[f"{p}|{side}" for p in pair_ids]]
        out[f"logp_{side}"] = rows["logp"].to_numpy()
        out[f"ntok_{side}"] = rows["ntok"].to_numpy().astype("int64")
    for side in ("a", "b"):
        if masked or causal_score == "sum":
            out[f"score_{side}"] = out[f"logp_{side}"]
        else:
            out[f"score_{side}"] = out[f"logp_{side}"] / out[f"ntok_{side}"].clip(lower=1)
    out["score_kind"] = "masked-term" if masked else f"causal-{causal_score}"
    out = out[["pair_id", "score_a", "score_b", "logp_a", "logp_b", "ntok_a", "ntok_b", "score_kind"]]
    for col in ("model", "model_id", "scorer", "dtype", "bos_policy"):
        if col in text_scores.columns:
            out[col] = by_id.loc[[f"{p}|a" for p in pair_ids], col].to_numpy()
    return out


def score_pair_table(
    pairs: pd.DataFrame,
    model: Any,
    out: str | Path,
    *,
    name: str,
    masked: bool = False,
    causal_score: str = "mean",
    chunk_size: int = 500,
    make_scorer: Any = None,
    run: dict[str, Any] | None = None,
    **model_options: Any,
) -> pd.DataFrame:
    """Score every pair of ``pairs`` under ``model`` (a model spec) and write the SCORES table ``out``.

    ``model_options`` go to :func:`unstereo.scoring.run.scorer_factory` (causal) or
    :func:`unstereo.scoring.masked_term.masked_term_factory` (masked). ``make_scorer`` and ``run`` replace the
    factory (tests: a model built in memory).
    """
    from ..scoring.texts import score_texts

    if causal_score not in CAUSAL_SCORES:
        raise ValueError(f"causal_score must be one of {CAUSAL_SCORES}, got {causal_score!r}")
    pairs = validate(pairs.reset_index(drop=True), PAIRS)
    if make_scorer is None:
        if masked:
            from ..scoring.masked_term import masked_term_factory

            run, make_scorer = masked_term_factory(model, **model_options)
        else:
            from ..scoring.run import scorer_factory

            run, make_scorer = scorer_factory(model, **model_options)
    out = Path(out)
    texts = pair_texts(pairs, masked)
    text_scores = score_texts(
        texts, make_scorer, out.with_name(out.stem + ".texts.parquet"), run=dict(run or {}),
        chunk_size=chunk_size, model_name=name,
    )  # fmt: skip
    scores = to_pair_scores(text_scores, [str(p) for p in pairs["pair_id"]], causal_score, masked)
    write_table(scores, out, SCORES)
    return scores


def score_pair_tables(
    tables: list[pd.DataFrame], model: Any, outs: list[str | Path], *, masked: bool = False, **kw: Any
) -> list[pd.DataFrame]:
    """:func:`score_pair_table` for several pair tables under one model, loaded once (when some chunk of some table
    is left to score)."""
    if "make_scorer" in kw:
        run, make = kw.pop("run", {}), kw.pop("make_scorer")
    elif masked:
        from ..scoring.masked_term import masked_term_factory

        run, make = masked_term_factory(model, **{k: kw.pop(k) for k in MODEL_OPTIONS if k in kw})
    else:
        from ..scoring.run import scorer_factory

        run, make = scorer_factory(model, **{k: kw.pop(k) for k in MODEL_OPTIONS if k in kw})
    loaded: list[Any] = []

    def once() -> Any:
        if not loaded:
            loaded.append(make())
        return loaded[0]

    return [score_pair_table(t, model, o, masked=masked, make_scorer=once, run=run, **kw)
            for t, o in zip(tables, outs, strict=True)]  # fmt: skip
