"""Scores of a biastest pair table under one model, through the project's text scorer (one path, resumable).

Causal LM: each sentence is scored by :func:`unstereo.scoring.texts.score_texts` (ln p with BOS prepended, the
number of scored tokens); ``score = logp / ntok`` (minus the mean token NLL, the paper's loss) or ``logp``
(``causal_score: sum``). Masked LM: one of the scores of :mod:`unstereo.scoring.masked_scorers` (``masked_scorer``;
default ``biastestgpt``, the authors' own: the group term's mean raw logit at one [MASK]). For it the group term is
marked in each sentence (:func:`term_spans`); CrowS-Pairs gets each sentence with its partner. Higher = more
probable in every case. The text scores stay beside the output (``<out>.texts.parquet`` and its chunks), so a rerun
or a killed job picks up where it stopped.
"""

from __future__ import annotations

import difflib
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pandas as pd

from unstereo.biastest.schemas import PAIRS, SCORES
from unstereo.errors import InputError
from unstereo.tables import validate, write_table

if TYPE_CHECKING:
    from unstereo.models.request import ModelRequest

_TOKEN = re.compile(r"\w+|[^\w\s]")
CAUSAL_SCORES = ("mean", "sum")


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


def term_spans(sentence: str, term: str | None, diff: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Where the group ``term`` stands in ``sentence``: its case-insensitive whole-word occurrences that overlap a
    word where the pair differs (``diff``, from :func:`diff_spans`); none such -> the differing words themselves.

    On the authors' texts (a template's ``[T]`` filled, :func:`unstereo.biastest.pairs.released_pairs` with
    ``reference_quirks``) these are exactly the ``[T]`` places (checked on every released gpt-3.5 pair); on the
    released full sentences a pronoun the pair also changed ("his" / "her") is a difference but not the term, and
    stays unmasked, as the authors' app masks only the term. Where the sentence lacks the term (the release pairs
    "Her algebra skills" with the term "hers") the differing word stands in for it."""
    if not term:
        return diff
    found = [
        (m.start(), m.end()) for m in re.finditer(rf"(?<!\w){re.escape(term)}(?!\w)", sentence, re.IGNORECASE)
    ]
    spans = [(a, b) for a, b in found if any(a < e and s < b for s, e in diff)]
    return spans or diff


def pair_texts(pairs: pd.DataFrame, masked: bool | str = False) -> pd.DataFrame:
    """The TEXTS table of the pairs: ``{pair_id}|a`` and ``{pair_id}|b``; ``masked``: a masked-LM scorer name
    (``True`` = ``biastestgpt``): for ``biastestgpt`` the group term marked (:func:`term_spans`), for
    ``crows-pairs`` each sentence with its partner. Pairs whose sentences are equal (or differ only by deletion, for
    ``biastestgpt``) are an InputError."""
    from unstereo.scoring.masked_crows import with_partner
    from unstereo.scoring.masked_term import mark

    scorer = masked_name(masked)
    ids, texts = [], []
    none = [None] * len(pairs)
    for pid, a, b, ga, gb in zip(pairs["pair_id"], pairs["sentence_a"], pairs["sentence_b"],
                                 pairs.get("group_term_a", none), pairs.get("group_term_b", none), strict=True):  # fmt: skip
        if a == b:
            raise InputError(f"pair {pid!r}: both sentences are {a!r}")
        if scorer == "biastestgpt":
            sa, sb = diff_spans(a, b)
            if not sa or not sb:
                raise InputError(f"pair {pid!r}: one sentence only adds words to the other: no term to mask")
            a, b = mark(a, term_spans(a, ga, sa)), mark(b, term_spans(b, gb, sb))
        elif scorer == "crows-pairs":
            a, b = with_partner(a, b), with_partner(b, a, first=False)  # a is the pair's first
        ids += [f"{pid}|a", f"{pid}|b"]
        texts += [a, b]
    return pd.DataFrame({"id": ids, "text": texts})


def masked_name(masked: bool | str | None) -> str | None:
    """The masked-LM scorer name of a ``masked`` argument: None (causal), ``True`` = ``biastestgpt``, or a name."""
    if not masked:
        return None
    from unstereo.scoring.masked_scorers import check_name

    return "biastestgpt" if masked is True else check_name(masked)


def to_pair_scores(
    text_scores: pd.DataFrame, pair_ids: list[str], causal_score: str, masked: bool | str
) -> pd.DataFrame:
    """Text scores -> one SCORES row per pair (score_a, score_b, and logp/ntok of each sentence; for a masked LM
    ``logp`` holds the scorer's value, e.g. BiasTestGPT's mean logit)."""
    from unstereo.scoring.masked_scorers import REDUCE

    scorer = masked_name(masked)
    by_id = text_scores.set_index("id")
    out = pd.DataFrame({"pair_id": pair_ids})
    for side in ("a", "b"):
        rows = by_id.loc[[f"{p}|{side}" for p in pair_ids]]
        out[f"logp_{side}"] = rows["logp"].to_numpy()
        out[f"ntok_{side}"] = rows["ntok"].to_numpy().astype("int64")
    mean = REDUCE[scorer] == "mean" if scorer else causal_score == "mean"
    for side in ("a", "b"):
        if mean:
            out[f"score_{side}"] = out[f"logp_{side}"] / out[f"ntok_{side}"].clip(lower=1)
        else:
            out[f"score_{side}"] = out[f"logp_{side}"]
    out["score_kind"] = f"masked-{scorer}" if scorer else f"causal-{causal_score}"
    out = out[["pair_id", "score_a", "score_b", "logp_a", "logp_b", "ntok_a", "ntok_b", "score_kind"]]
    for col in ("model", "model_id", "scorer", "dtype", "bos_policy"):
        if col in text_scores.columns:
            out[col] = by_id.loc[[f"{p}|a" for p in pair_ids], col].to_numpy()
    return out


def score_pair_table(
    pairs: pd.DataFrame,
    request: ModelRequest | None,
    out: str | Path,
    *,
    name: str,
    masked: bool | str = False,
    causal_score: str = "mean",
    chunk_size: int = 500,
    make_scorer: Any = None,
    run: dict[str, Any] | None = None,
) -> pd.DataFrame:
    """Score every pair of ``pairs`` under the model run ``request`` (a :class:`~unstereo.models.request.ModelRequest`;
    its scorer kind says causal or which masked-LM score) and write the SCORES table ``out``.

    ``make_scorer`` and ``run`` replace the registry's (tests: a model built in memory; ``request`` None and
    ``masked`` the masked-LM scorer name, ``True`` = ``biastestgpt``, see :func:`masked_name`).
    """
    from unstereo.scoring.texts import score_texts

    if causal_score not in CAUSAL_SCORES:
        raise ValueError(f"causal_score must be one of {CAUSAL_SCORES}, got {causal_score!r}")
    pairs = validate(pairs.reset_index(drop=True), PAIRS)
    if request is not None:
        masked = request.scorer if request.masked else False
    masked = masked_name(masked)
    if make_scorer is None:
        from unstereo.scoring.registry import scorer_for

        run, make_scorer = scorer_for(request)
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
    tables: list[pd.DataFrame], request: ModelRequest, outs: list[str | Path], **kw: Any
) -> list[pd.DataFrame]:
    """:func:`score_pair_table` for several pair tables under one model run, loaded once (when some chunk of some
    table is left to score)."""
    from unstereo.scoring.registry import scorer_for

    run, make = scorer_for(request)
    loaded: list[Any] = []

    def once() -> Any:
        if not loaded:
            loaded.append(make())
        return loaded[0]

    return [
        score_pair_table(t, request, o, make_scorer=once, run=run, **kw)
        for t, o in zip(tables, outs, strict=True)
    ]
