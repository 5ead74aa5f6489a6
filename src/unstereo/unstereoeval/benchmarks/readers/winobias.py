"""WinoBias: the 8 original files or the released template CSVs (see the package doc)."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.errors import InputError
from unstereo.templates import templatize_male
from unstereo.unstereoeval.benchmarks.badrows import BadRows
from unstereo.unstereoeval.benchmarks.pairs import TemplateRow
from unstereo.unstereoeval.benchmarks.readers.common import (
    SPLITS,
    as_bool,
    as_paths,
    cell_text,
    finish,
    need_columns,
)
from unstereo.unstereoeval.benchmarks.textio import csv_records, decoded_lines

FEMALE_PRONOUNS = frozenset({"she", "her", "hers", "herself"})
MALE_PRONOUNS = frozenset({"he", "his", "him", "himself"})

_WB_FILE_RE = re.compile(r"^(?P<stereo>pro|anti)_stereotyped_type(?P<type>[12])\.txt\.(?P<split>dev|test)$")
_WB_RELEASED_RE = re.compile(r"^coref__Winobias__templates\.(?P<split>dev|test)\.csv(\.gz)?$")
_WB_LINE_RE = re.compile(r"^(?P<id>\d+) (?P<text>.*)$")
_WB_SPAN_RE = re.compile(r"\[([^\[\]]*)\]")
# The reference notebook's pattern: the first bracketed span is the entity, the next one the pronoun.
_WB_REFERENCE_RE = re.compile(r"(?P<entity>\[.+?\]).+?(?P<pronoun>\[.+?\])")


def _winobias_files(paths: list[Path], splits: Sequence[str]) -> tuple[str, dict[str, list[Path]]]:
    """("original" | "released", {split: files}) for a folder or a list of files."""
    files: list[Path] = []
    for p in paths:
        if p.is_dir():
            files += sorted(q for q in p.iterdir() if _WB_FILE_RE.match(q.name))
            if not any(_WB_FILE_RE.match(q.name) for q in p.iterdir()):
                files += sorted(q for q in p.iterdir() if _WB_RELEASED_RE.match(q.name))
        elif p.exists():
            files.append(p)
        else:
            raise InputError("file not found", path=p)
    original = [f for f in files if _WB_FILE_RE.match(f.name)]
    released = [f for f in files if _WB_RELEASED_RE.match(f.name)]
    other = [f for f in files if f not in original and f not in released]
    if other:
        raise InputError(
            "not a WinoBias file: expected {pro,anti}_stereotyped_type{1,2}.txt.{dev,test} or "
            "coref__Winobias__templates.{dev,test}.csv",
            path=other[0],
        )
    if original and released:
        raise InputError(f"mix of original and released WinoBias files in {[str(p) for p in paths]}")
    fmt, chosen, pattern = (
        ("original", original, _WB_FILE_RE) if original else ("released", released, _WB_RELEASED_RE)
    )
    by_split = {s: sorted(f for f in chosen if pattern.match(f.name)["split"] == s) for s in splits}
    for split, found in by_split.items():
        if not found:
            raise InputError(f"no WinoBias files for split {split!r} in {[str(p) for p in paths]}")
        if fmt == "original" and len(found) != 4:
            raise InputError(
                f"split {split!r} needs the 4 files {{pro,anti}}_stereotyped_type{{1,2}}.txt.{split}, "
                f"found {[f.name for f in found]}"
            )
    return fmt, by_split


def _winobias_line(
    path: Path, number: int, text: str, bad: BadRows, reference_quirks: bool
) -> dict[str, Any] | None:
    """Parse one line of an original WinoBias file; None when it is dropped (female) or bad."""
    m = _WB_LINE_RE.match(text.strip())
    if not m:
        bad.report(path, number, "empty id: line does not start with '<id> '")
        return None
    sentence = m["text"]
    spans = _WB_SPAN_RE.findall(sentence)
    # The reference's sentence: only the first two bracketed strings (entity, pronoun) lose their brackets; the
    # others stay (e.g. "[his]"). It is the sort key in both modes, so pair ids are rows of the released file.
    ref = _WB_REFERENCE_RE.search(sentence)
    ref_sentence = None
    if ref:
        entity_span, pronoun_span = ref["entity"], ref["pronoun"]
        ref_sentence = sentence.replace(entity_span, entity_span[1:-1]).replace(
            pronoun_span, pronoun_span[1:-1]
        )
    if reference_quirks:
        if not ref:
            bad.report(path, number, "malformed WinoBias line: needs a bracketed entity and pronoun")
            return None
        sentence = ref_sentence
        entity, pronouns = entity_span[1:-1], [pronoun_span[1:-1]]
    else:
        pronouns = [s for s in spans if s.lower() in FEMALE_PRONOUNS | MALE_PRONOUNS]
        entities = [s for s in spans if s.lower() not in FEMALE_PRONOUNS | MALE_PRONOUNS]
        if len(entities) != 1 or not pronouns:
            bad.report(
                path,
                number,
                f"malformed WinoBias line: needs one bracketed entity and a pronoun, got {spans}",
            )
            return None
        entity = entities[0]
        sentence = _WB_SPAN_RE.sub(r"\1", sentence)
    genders = {"female" if p.lower() in FEMALE_PRONOUNS else "male" for p in pronouns}
    if not reference_quirks and len(genders) > 1:
        bad.report(path, number, f"mixed pronouns: bracketed pronouns {pronouns} of both genders")
        return None
    if pronouns[0].lower() in FEMALE_PRONOUNS:
        return None  # female sentence: its male counterpart is in the other (pro/anti) file
    if not entity.strip():
        bad.report(path, number, "malformed WinoBias line: empty entity")
        return None
    fm = _WB_FILE_RE.match(path.name)
    return {
        "sentence": sentence,
        "sort_key": ref_sentence if ref_sentence is not None else sentence,
        "word": entity.split()[-1].lower(),
        "target_word": pronouns[0],
        "filename": path.name,
        "stereotype": fm["stereo"] == "pro",
        "is_challenging": fm["type"] == "1",
        "orig_id": int(m["id"]),
        "path": path,
        "line": number,
    }


def read_winobias(
    paths: str | Path | Iterable[str | Path],
    name: str = "Winobias",
    splits: Sequence[str] = SPLITS,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """WinoBias as a PAIRS table (see the module doc); ``splits`` among dev, test."""
    bad = bad or BadRows(on_bad_row)
    unknown = [s for s in splits if s not in SPLITS]
    if unknown:
        raise InputError(f"unknown WinoBias split(s) {unknown}; use {list(SPLITS)}")
    fmt, by_split = _winobias_files(as_paths(paths), splits)
    rows: list[TemplateRow] = []
    for split in splits:
        if fmt == "released":
            rows += _released_winobias_rows(by_split[split], name, split, bad)
            continue
        parsed = []
        for path in by_split[split]:
            ids: dict[int, int] = {}
            for number, text in decoded_lines(path, bad):
                if not text.strip():
                    continue
                rec = _winobias_line(path, number, text, bad, reference_quirks)
                if rec is None:
                    continue
                if rec["orig_id"] in ids:
                    bad.report(
                        path, number, f"duplicated id: {rec['orig_id']} (first at line {ids[rec['orig_id']]})"
                    )
                    continue
                ids[rec["orig_id"]] = number
                parsed.append(rec)
        parsed.sort(key=lambda r: r["sort_key"])  # stable: ties keep file order
        for i, rec in enumerate(parsed):
            template = templatize_male(rec["sentence"])
            rows.append(
                TemplateRow(
                    pair_id=f"{name}:{split}:{i}",
                    template=template,
                    seed_word=rec["word"],
                    path=str(rec["path"]),
                    line=rec["line"],
                    extra={
                        "split": split,
                        "sentence": rec["sentence"],
                        "target_word": rec["target_word"],
                        "filename": rec["filename"],
                        "stereotype": rec["stereotype"],
                        "is_challenging": rec["is_challenging"],
                    },
                )
            )
    return finish(rows, name, bad, reference_quirks)


def _released_winobias_rows(files: list[Path], name: str, split: str, bad: BadRows) -> list[TemplateRow]:
    rows = []
    for path in files:
        header, records = csv_records(path, bad)
        need_columns(path, header, ["template"])
        for i, (line, rec) in enumerate(records):
            rows.append(
                TemplateRow(
                    pair_id=f"{name}:{split}:{i}",
                    template=rec["template"],
                    seed_word=cell_text(rec.get("word")),
                    path=str(path),
                    line=line,
                    extra={
                        "split": split,
                        "sentence": rec.get("sentence"),
                        "target_word": rec.get("target_word"),
                        "filename": rec.get("filename"),
                        "stereotype": as_bool(rec.get("stereotype")),
                        "is_challenging": as_bool(rec.get("is_challenging")),
                    },
                )
            )
    return rows
