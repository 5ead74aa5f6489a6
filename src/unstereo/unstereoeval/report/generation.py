"""The report's generation section: what every filter of the generate stage removed, and the kept pairs.

:func:`filter_table` lays out the counts of each benchmark's ``summary.json`` (one column per USE-k, one row per
step, in pipeline order); :func:`generation_html` adds, per benchmark, the kept pairs as a reader checks them (both
sentences, the seed word, the worse per-token log-likelihood, the judge's worse P(Yes)) and the rejected sentences with their reasons.
"""

from __future__ import annotations

import html
import json
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.render.formats import html_table, to_html
from unstereo.render.table import Table
from unstereo.templates import fill_template
from unstereo.unstereoeval.generate.minimal import RULES

# (row label, how to read it from a summary.json), in the order of the pipeline
STEPS: list[tuple[str, Any]] = [
    ("sentences generated", lambda s: s["sentences_generated"]["total"]),
    ("generation failed (no list)", lambda s: s["generation_failed"]["total"]),
    ("revision failed (word or pronoun missing)", lambda s: s["revision_failed"]["total"]),
    ("length outside k +- tolerance", lambda s: s["length_failed"]),
    ("editing failed (no male version)", lambda s: s["editing_failed"]),
    ("no pronoun placeholder", lambda s: s["no_placeholder"]),
    *[
        (f"not a minimal pair: {rule}", lambda s, r=rule: s.get("minimal_pair_rejected", {}).get(r, 0))
        for rule in RULES
        if rule != "no placeholder"
    ],
    ("duplicate template", lambda s: s["duplicates"]),
    ("chat reply", lambda s: s.get("chat_reply", 0)),
    ("degenerate (repeated word)", lambda s: s.get("degenerate", 0)),
    ("log-likelihood below threshold", lambda s: s.get("low_log_likelihood", 0)),
    ("semantic filter (the generator's verdict)", lambda s: s.get("semantic_filter_rejected", 0)),
    ("judge of sense (P(Yes) below threshold)", lambda s: s.get("judge_rejected", 0)),
    ("kept beyond the target (min_pairs)", lambda s: s.get("target_surplus", 0)),
    ("pairs kept", lambda s: s["kept"]["total"]),
]


def read_generate_dir(path: str | Path) -> tuple[dict[str, Any], pd.DataFrame | None]:
    """(summary.json, full.parquet or None) of a generate stage's benchmark folder."""
    path = Path(path)
    summary = json.loads((path / "summary.json").read_text(encoding="utf-8"))
    full = pd.read_parquet(path / "full.parquet") if (path / "full.parquet").is_file() else None
    return summary, full


def filter_table(summaries: dict[str, dict[str, Any]]) -> Table:
    """Counts per generation step (rows) and benchmark (columns) from their ``summary.json`` contents."""
    cells = [(label, bench, float(get(s)), 0) for bench, s in summaries.items() for label, get in STEPS]
    return Table(
        key="generation_filters",
        caption="Generated USE-k benchmarks: sentences removed by each step (in pipeline order) and pairs kept",
        cells=pd.DataFrame(cells, columns=["row", "column", "value", "decimals"]),
        rows=[label for label, _ in STEPS],
        columns=list(summaries),
        row_label="Step",
    )


def _settings_line(s: dict[str, Any]) -> str:
    st = s.get("settings", {})
    thr = st.get("min_token_logprob")
    loglik = (
        f"log-likelihood filter: (ln p - {st.get('start_logprob', 0):g}) / tokens >= {thr:g} under "
        f"{s.get('naturalness_model')}"
        if thr is not None
        else "log-likelihood filter: off"
    )
    jt = st.get("judge_threshold")
    judge = (
        f"judge of sense: P(Yes) >= {jt:g} for both sentences under {s.get('judge_model')}"
        if jt is not None
        else "judge of sense: off"
    )
    rounds = (
        f"{s.get('rounds', 1)} round(s) to a target of {s['min_pairs']} pairs "
        f"({'reached' if s.get('target_reached') else 'not reached'}; kept per round {s.get('kept_per_round')}); "
        if s.get("min_pairs") is not None
        else ""
    )
    return (
        f"{s['benchmark']}: {s['seed_words']} seed words, {rounds}generator {s.get('model')}, prompts "
        f"{st.get('prompts_dir') or 'data/prompts'}; chat-reply check {'on' if st.get('chat_reply_filter', True) else 'off'}; "
        f"{loglik}; paper's semantic filter {'on' if st.get('llm_semantic_filter', True) else 'off'}; {judge}; "
        f"pipeline time of this run {s.get('seconds')} s (LLM answers from the cache cost none)"
    )


def _worse(r: Any, male: str, female: str, fmt: str) -> str:
    """The lower of a row's two values (columns ``male``, ``female``; absent in older tables), formatted; "" if none."""
    vals: list[Any] = [getattr(r, c, None) for c in (male, female)]
    vals = [v for v in vals if v is not None and not pd.isna(v)]
    return format(min(vals), fmt) if vals else ""


def _pairs_table(full: pd.DataFrame) -> str:
    kept = full[full["status"] == "kept"]
    rows = []
    for n, r in enumerate(kept.itertuples(index=False), 1):
        cells = [str(n), fill_template(r.template, "male"), fill_template(r.template, "female"), r.word,
                 _worse(r, "logprob_male", "logprob_female", ".2f"),
                 _worse(r, "judge_p_yes_male", "judge_p_yes_female", ".2f")]  # fmt: skip
        rows.append(cells)
    return html_table(
        ["#", "male", "female", "seed word", "worse (ln p - start) / token", "judge: worse P(Yes)"], rows
    )


def _rejected_list(full: pd.DataFrame) -> str:
    out = full[(full["status"] != "kept") & full["sentence"].notna()]
    items = [
        f"<li>{html.escape(str(r.sentence))} <small>({html.escape(str(r.reason))})</small></li>"
        for r in out.itertuples(index=False)
    ]
    return f"<details><summary>{len(items)} rejected sentences and why</summary><ul>{''.join(items)}</ul></details>"


def generation_html(dirs: dict[str, tuple[dict[str, Any], pd.DataFrame | None]]) -> str:
    """One page: the filter counts of every benchmark, then per benchmark its settings, kept pairs and rejections."""
    parts = [
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>Generated USE-k benchmarks</title>",
        "<style>body{font-family:sans-serif;margin:1.5em;max-width:1100px} table{border-collapse:collapse;"
        "margin:0.5em 0 1.5em} td,th{border:1px solid #ccc;padding:2px 8px;text-align:left} "
        "td:nth-child(n+2){font-variant-numeric:tabular-nums} caption{font-weight:bold;text-align:left}</style>",
        "</head><body><h1>Generated USE-k benchmarks</h1>",
        "<p>Every kept pair is a minimal pair (the two sentences differ only in he/she, him/her, his/her, "
        "himself/herself; no pronoun of the other gender, no 'his/her' or 'he or she', no gendered word) and passed "
        "the naturalness filters; definitions in docs/methods.md, 'Generation filters (USE-k)'.</p>",
        to_html(filter_table({b: s for b, (s, _) in dirs.items()})),
    ]
    for bench, (summary, full) in dirs.items():
        parts.append(f"<h2>{html.escape(bench)}: {summary['kept']['total']} pairs kept</h2>")
        parts.append(f"<p>{html.escape(_settings_line(summary))}</p>")
        if full is not None:
            parts += [_pairs_table(full), _rejected_list(full)]
    parts.append("</body></html>")
    return "\n".join(parts) + "\n"
