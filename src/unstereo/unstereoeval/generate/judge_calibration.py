"""Calibration of a sentence filter on a labelled set (the judge of sense's set:
:mod:`unstereo.unstereoeval.generate.judge_set`).

A filter gives each sentence a score and keeps it when score >= threshold. Two readings of one decision:

- "natural" as the positive class (acceptance): precision = kept natural / kept; recall = kept natural / natural.
- "unnatural" as the positive class (detection): precision = rejected unnatural / rejected; recall = rejected
  unnatural / unnatural.

F1 = 2 P R / (P + R) of each. The threshold (:func:`choose_threshold`) maximises balanced accuracy, the mean of
the two recalls (so the natural/unnatural ratio of the set does not move it), over the midpoints between
consecutive distinct scores of the calibration part (and one point below / above all); ties go to the lowest
threshold (the one that keeps most sentences).

Scores: the judge's P(Yes) (:class:`unstereo.unstereoeval.generate.judge.SenseJudge`), cached per sentence in a JSON-lines
file so that a run in chunks resumes (:class:`PYesCache`), and the log-likelihood filter's
``(ln p - start_logprob) / tokens`` (:func:`unstereo.unstereoeval.generate.naturalness.token_logprob`).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.errors import InputError

PARTS = ("calibration", "heldout")


def class_metrics(labels: Sequence[str], keep: Sequence[bool]) -> dict[str, float]:
    """Precision, recall and F1 of "natural" acceptance (positive: kept) and of "unnatural" detection (positive:
    rejected), with the counts; NaN where a ratio has no denominator. ``labels`` are "natural"/"unnatural"."""
    if len(labels) != len(keep):
        raise ValueError(f"{len(labels)} labels but {len(keep)} decisions")
    nat_kept = sum(1 for y, k in zip(labels, keep, strict=True) if y == "natural" and k)
    nat_rej = sum(1 for y, k in zip(labels, keep, strict=True) if y == "natural" and not k)
    unn_kept = sum(1 for y, k in zip(labels, keep, strict=True) if y == "unnatural" and k)
    unn_rej = sum(1 for y, k in zip(labels, keep, strict=True) if y == "unnatural" and not k)
    if nat_kept + nat_rej + unn_kept + unn_rej != len(labels):
        raise ValueError(f"labels must be 'natural' or 'unnatural', got {sorted(set(labels))}")

    def ratio(a: int, b: int) -> float:
        return a / b if b else math.nan

    def f1(p: float, r: float) -> float:
        return 2 * p * r / (p + r) if p + r > 0 else math.nan

    out: dict[str, float] = {"n": len(labels), "n_natural": nat_kept + nat_rej, "n_unnatural": unn_kept + unn_rej,
           "natural_kept": nat_kept, "unnatural_rejected": unn_rej}  # fmt: skip
    for cls, tp, fp, fn in (
        ("natural", nat_kept, unn_kept, nat_rej),
        ("unnatural", unn_rej, nat_rej, unn_kept),
    ):
        p, r = ratio(tp, tp + fp), ratio(tp, tp + fn)
        out |= {f"{cls}_precision": p, f"{cls}_recall": r, f"{cls}_f1": f1(p, r)}
    out["balanced_accuracy"] = (out["natural_recall"] + out["unnatural_recall"]) / 2
    return out


def choose_threshold(scores: Sequence[float], labels: Sequence[str]) -> float:
    """The threshold of best balanced accuracy on (``scores``, ``labels``); see the module docstring."""
    values = sorted({float(s) for s in scores})
    if not values:
        raise ValueError("no scores to choose a threshold from")
    candidates = [values[0] - 1.0] + [(a + b) / 2 for a, b in itertools.pairwise(values)] + [values[-1] + 1.0]
    best, best_t = -1.0, candidates[0]
    for t in candidates:
        ba = class_metrics(labels, [s >= t for s in scores])["balanced_accuracy"]
        if ba > best + 1e-12:
            best, best_t = ba, t
    return best_t


def choose_question(tried: Sequence[dict[str, Any]], min_gain: float = 0.01) -> dict[str, Any]:
    """The question to keep among ``tried`` (dicts with ``calibration_balanced_accuracy``; the first is the built-in
    one): the best alternative if it beats the first by at least ``min_gain``, else the first (a gain of a sentence
    or two of the calibration part is noise, and the built-in question is the one already in use)."""
    first = tried[0]
    best = max(tried, key=lambda r: r["calibration_balanced_accuracy"])
    gain = best["calibration_balanced_accuracy"] - first["calibration_balanced_accuracy"]
    return best if gain >= min_gain else first


def evaluate(
    df: pd.DataFrame, score: str, threshold: float, method: str, threshold_from: str
) -> list[dict[str, Any]]:
    """One row per part of ``df`` (columns label, part and ``score``): method, threshold, where it came from, part
    and :func:`class_metrics` of score >= threshold."""
    rows = []
    for part in PARTS:
        sub = df[df["part"] == part]
        m = class_metrics(list(sub["label"]), [bool(s >= threshold) for s in sub[score]])
        rows.append(
            {"method": method, "threshold": threshold, "threshold_from": threshold_from, "part": part} | m
        )
    return rows


def kept_by_source(
    df: pd.DataFrame, filters: Sequence[tuple[str, str, float]], part: str = "heldout"
) -> pd.DataFrame:
    """Share of sentences kept per (label, source) of the ``part`` rows of ``df``, one column per filter
    ``(name, score column, threshold)``, with the count ``n``."""
    sub = df[df["part"] == part]
    out = sub.groupby(["label", "source"]).size().rename("n").to_frame()
    for name, score, threshold in filters:
        out[name] = (sub[score] >= threshold).groupby([sub["label"], sub["source"]]).mean()
    return out.reset_index()


# ------------------------------------------------------------------------------------------------ the P(Yes) cache
class PYesCache:
    """P(Yes) per (judge key, sentence) in a JSON-lines file, appended as batches finish."""

    def __init__(self, path: str | Path):
        self.path = Path(path)
        self.values: dict[tuple[str, str], float] = {}
        if self.path.exists():
            for i, line in enumerate(self.path.read_text(encoding="utf-8").splitlines()):
                if line.strip():
                    try:
                        rec = json.loads(line)
                        self.values[(rec["key"], rec["sentence"])] = float(rec["p_yes"])
                    except (ValueError, KeyError) as exc:
                        raise InputError(f"bad cache line: {exc}", path=self.path, line=i + 1) from exc

    @staticmethod
    def key(model: str, question: str, system: str | None) -> str:
        """A short hash of what the judge's scores depend on besides the sentence."""
        return hashlib.sha256(json.dumps([model, question, system]).encode()).hexdigest()[:16]

    def get(self, key: str, sentence: str) -> float | None:
        return self.values.get((key, sentence))

    def add(self, key: str, sentences: Sequence[str], p_yes: Sequence[float]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self.path.open("a", encoding="utf-8") as f:
            for s, p in zip(sentences, p_yes, strict=True):
                self.values[(key, s)] = float(p)
                f.write(json.dumps({"key": key, "sentence": s, "p_yes": float(p)}) + "\n")


def cached_p_yes(
    sentences: Sequence[str],
    key: str,
    cache: PYesCache,
    score: Callable[[list[str]], list[float]],
    chunk: int = 32,
    limit: int | None = None,
) -> list[float | None]:
    """P(Yes) of each sentence, from ``cache`` or from ``score`` (a batch of sentences -> P(Yes)), ``chunk``
    sentences a call, each chunk saved before the next; at most ``limit`` new sentences (None where not scored)."""
    todo = [s for s in dict.fromkeys(sentences) if cache.get(key, s) is None]
    if limit is not None:
        todo = todo[:limit]
    for start in range(0, len(todo), chunk):
        batch = todo[start : start + chunk]
        cache.add(key, batch, score(batch))
    return [cache.get(key, s) for s in sentences]


def results_markdown(rows: Sequence[dict[str, Any]], part: str = "heldout") -> str:
    """A markdown table of the ``part`` rows: method, threshold, n, and P/R/F1 of each class."""

    def f(x: float) -> str:
        return "-" if x != x else f"{x:.2f}"

    lines = [
        "| method | threshold (from) | n (nat/unnat) | natural P | natural R | natural F1 | unnatural P | "
        "unnatural R | unnatural F1 | bal. acc. |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        if r["part"] != part:
            continue
        lines.append(
            f"| {r['method']} | {r['threshold']:.3g} ({r['threshold_from']}) | {r['n']} ({r['n_natural']}/"
            f"{r['n_unnatural']}) | {f(r['natural_precision'])} | {f(r['natural_recall'])} | {f(r['natural_f1'])} | "
            f"{f(r['unnatural_precision'])} | {f(r['unnatural_recall'])} | {f(r['unnatural_f1'])} | "
            f"{f(r['balanced_accuracy'])} |"
        )
    return "\n".join(lines)
