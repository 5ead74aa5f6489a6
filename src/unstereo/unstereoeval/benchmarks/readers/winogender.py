"""Winogender: ``all_sentences.tsv`` or the released template CSV (see the package doc)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from pathlib import Path

import pandas as pd

from unstereo.templates import templatize_male
from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.pairs import TemplateRow, empty_id
from unstereo.unstereoeval.benchmarks.readers.common import as_paths, cell_text, finish, need_columns
from unstereo.unstereoeval.benchmarks.textio import csv_records

_WG_SENTID_RE = re.compile(
    r"^(?P<example>(?P<occ>[^.]+)\.(?P<part>[^.]+)\.(?P<answer>[01]))\.(?P<g>male|female|neutral)\.txt$"
)


def _winogender_word(example_id: str) -> str:
    """The participant (or "someone") when the pronoun refers to it (answer 1), else the occupation."""
    occupation, participant, answer = example_id.split(".")
    return (participant if answer == "1" else occupation).lower()


def read_winogender(
    paths: str | Path | Iterable[str | Path],
    name: str = "Winogender",
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """Winogender as a PAIRS table: ``all_sentences.tsv`` (one male row per example id, templatized) or the
    released ``coref__Winogender__templates.csv`` (templates kept)."""
    bad = bad or BadRows(on_bad_row)
    rows: list[TemplateRow] = []
    for path in as_paths(paths):
        header, records = csv_records(path, bad)
        if "template" in header:  # the released template file
            need_columns(path, header, ["example_id", "template"])
            for line, rec in records:
                example = rec["example_id"]
                rows.append(
                    TemplateRow(
                        pair_id=f"{name}:{example}" if not empty_id(example) else "",
                        template=rec["template"],
                        seed_word=cell_text(rec.get("word")),
                        path=str(path),
                        line=line,
                        extra={
                            "example_id": example,
                            "sentid": rec.get("sentid"),
                            "sentence": rec.get("sentence"),
                        },
                    )
                )
            continue
        need_columns(path, header, ["sentid", "sentence"])
        chosen: dict[str, tuple[int, dict]] = {}
        first_line: dict[str, int] = {}
        sentids: dict[str, int] = {}
        for line, rec in records:
            sentid = rec["sentid"].strip()
            if not sentid:
                bad.report(path, line, "empty id: empty sentid")
                continue
            if sentid in sentids:
                bad.report(path, line, f"duplicated id: sentid {sentid!r} (first at line {sentids[sentid]})")
                continue
            sentids[sentid] = line
            m = _WG_SENTID_RE.match(sentid)
            if not m:
                bad.report(
                    path,
                    line,
                    f"malformed sentid {sentid!r}: expected occupation.participant.answer.gender.txt",
                )
                continue
            example = m["example"]
            first_line.setdefault(example, line)
            # Clean: the male row. Reference: the first row of each example id (which is the male one there).
            if reference_quirks:
                chosen.setdefault(example, (line, rec))
            elif m["g"] == "male":
                chosen[example] = (line, rec)
        for example, line in first_line.items():
            if example not in chosen:
                bad.report(path, line, f"example {example!r} has no male sentence")
                continue
            row_line, rec = chosen[example]
            sentence = rec["sentence"]
            if reference_quirks and "'" in sentence:
                # The released file came through a conversion that dropped apostrophes and appended a '"'.
                sentence = sentence.replace("'", "") + '"'
            rows.append(
                TemplateRow(
                    pair_id=f"{name}:{example}",
                    template=templatize_male(sentence),
                    seed_word=_winogender_word(example),
                    path=str(path),
                    line=row_line,
                    extra={"example_id": example, "sentid": rec["sentid"], "sentence": sentence},
                )
            )
    return finish(rows, name, bad, reference_quirks)
