"""Readers: every benchmark source becomes the project's pair table (:data:`unstereo.tables.PAIRS`).

Kinds (``build_pairs(kind, paths, ...)``), with the pair ids they give (fixed project-wide):

| kind | source | pair_id |
|---|---|---|
| ``winobias`` | the 8 original WinoBias files ``{pro,anti}_stereotyped_type{1,2}.txt.{dev,test}`` (a folder or the files), or the released ``coref__Winobias__templates.{dev,test}.csv`` | ``Winobias:{split}:{i}``, i = row of the split sorted by sentence (= row of the released file) |
| ``winogender`` | ``all_sentences.tsv`` of Winogender, or the released ``coref__Winogender__templates.csv`` | ``Winogender:{example_id}`` |
| ``use-raw`` | released ``data/datasets/raw/USE-{5,10,20}.csv`` (``natural_only``: keep ``is_natural`` rows) | ``USE-5:{i}``, i = 0-based row of the raw file (= row of ``results/5words/*.csv``) |
| ``use-released`` | released ``data/datasets/preprocessed/*-no-maxpmi-constraint.csv.gz`` (all six) | as above; USE rows are mapped to raw rows (the ``orig_index`` column counts rows AFTER the naturalness filter) |
| ``templates`` | user CSV / TSV / JSONL / parquet with a ``template`` column (optional ``id`` or ``pair_id``, ``seed_word`` or ``word``) | ``{name}:{id}`` (``pair_id`` verbatim; no id column: ``{name}:{row}``, 0-based) |
| ``pairs`` | an existing PAIRS table (e.g. ``generate/{benchmark}/pairs.parquet``) | kept |

Winobias from the original files (SPEC 1.3; the reference notebook ``0.Preprocess-baselines``): strip the leading id,
remove the brackets, drop sentences whose bracketed pronoun is female, turn he/his/him/himself into placeholders,
sort each split by sentence. With ``reference_quirks`` the reference's bracket removal is reproduced: it only
removes the brackets of the first two bracketed spans (entity and first pronoun), so 41 released templates keep a
``[{pronoun1}]``-like span; by default every bracket is removed. Winogender: one row per example id, the male one;
with ``reference_quirks`` the released file's conversion artifact is reproduced as well (a sentence with an
apostrophe loses it and gains a trailing ``"``: 4 cashier sentences, "couldn't" -> "couldnt ... dollars.\"").
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from ..errors import InputError
from ..log import get_logger
from ..tables import PAIRS
from ..templates import templatize_male
from .badrows import BadRows
from .pairs import TemplateRow, empty_id, to_pairs
from .textio import csv_records, decoded_lines, jsonl_records

log = get_logger("benchmarks")

KINDS = ("winobias", "winogender", "use-raw", "use-released", "templates", "pairs")
SPLITS = ("dev", "test")

FEMALE_PRONOUNS = frozenset({"she", "her", "hers", "herself"})
MALE_PRONOUNS = frozenset({"he", "his", "him", "himself"})

# ------------------------------------------------------------------------------------------------ helpers


def _bool(value: Any) -> bool | None:
    if isinstance(value, bool | np.bool_):
        return bool(value)
    text = str(value).strip().lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    return None


def _as_paths(paths: str | Path | Iterable[str | Path]) -> list[Path]:
    if isinstance(paths, str | Path):
        return [Path(paths)]
    return [Path(p) for p in paths]


def _need_columns(path: Path, header: Sequence[str], needed: Sequence[str]) -> None:
    missing = [c for c in needed if c not in header]
    if missing:
        raise InputError(f"missing column(s) {missing}; has {list(header)}", path=path, line=1)


def _table_records(path: Path, bad: BadRows) -> tuple[list[str], list[tuple[int, dict[str, Any]]]]:
    """Header and ``(line, record)`` of a CSV/TSV(.gz), JSONL(.gz) or parquet file (parquet: line = 1-based row)."""
    name = path.name
    if name.endswith((".jsonl", ".jsonl.gz", ".json")):
        records = jsonl_records(path, bad)
        header = list(dict.fromkeys(k for _, r in records for k in r))
        return header, records
    if name.endswith(".parquet"):
        if not path.is_file():
            raise InputError("file not found", path=path)
        try:
            df = pd.read_parquet(path)
        except Exception as exc:
            raise InputError(f"cannot read parquet: {exc}", path=path) from exc
        records = [(i + 1, rec) for i, rec in enumerate(df.to_dict("records"))]
        return list(df.columns), records
    if name.endswith((".csv", ".csv.gz", ".tsv", ".tsv.gz")):
        return csv_records(path, bad)
    raise InputError("unsupported file type (use .csv, .tsv, .jsonl or .parquet; optionally .gz)", path=path)


def _text(value: Any) -> str | None:
    """A cell as text (None when missing or blank)."""
    if value is None or (isinstance(value, float) and np.isnan(value)):
        return None
    text = str(value)
    return text if text.strip() else None


# ----------------------------------------------------------------------------------------------- Winobias

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
    fmt, by_split = _winobias_files(_as_paths(paths), splits)
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
    return _finish(rows, name, bad, reference_quirks)


def _released_winobias_rows(files: list[Path], name: str, split: str, bad: BadRows) -> list[TemplateRow]:
    rows = []
    for path in files:
        header, records = csv_records(path, bad)
        _need_columns(path, header, ["template"])
        for i, (line, rec) in enumerate(records):
            rows.append(
                TemplateRow(
                    pair_id=f"{name}:{split}:{i}",
                    template=rec["template"],
                    seed_word=_text(rec.get("word")),
                    path=str(path),
                    line=line,
                    extra={
                        "split": split,
                        "sentence": rec.get("sentence"),
                        "target_word": rec.get("target_word"),
                        "filename": rec.get("filename"),
                        "stereotype": _bool(rec.get("stereotype")),
                        "is_challenging": _bool(rec.get("is_challenging")),
                    },
                )
            )
    return rows


# ---------------------------------------------------------------------------------------------- Winogender

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
    for path in _as_paths(paths):
        header, records = csv_records(path, bad)
        if "template" in header:  # the released template file
            _need_columns(path, header, ["example_id", "template"])
            for line, rec in records:
                example = rec["example_id"]
                rows.append(
                    TemplateRow(
                        pair_id=f"{name}:{example}" if not empty_id(example) else "",
                        template=rec["template"],
                        seed_word=_text(rec.get("word")),
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
        _need_columns(path, header, ["sentid", "sentence"])
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
    return _finish(rows, name, bad, reference_quirks)


# --------------------------------------------------------------------------------------------- USE released

_USE_EXTRA_BOOL = ("is_natural", "is_revised", "has_word", "has_placeholder")


def read_use_raw(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    natural_only: bool = True,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """A released raw USE file (``data/datasets/raw/USE-5.csv``): pair id ``{name}:{row}`` (0-based row of the
    file); with ``natural_only`` only ``is_natural`` rows (the released benchmark; 4405/4740/4839 rows)."""
    bad = bad or BadRows(on_bad_row)
    paths = _as_paths(paths)
    name = name or paths[0].name.split(".")[0]
    rows: list[TemplateRow] = []
    for path in paths:
        header, records = csv_records(path, bad)
        _need_columns(path, header, ["template"] + (["is_natural"] if natural_only else []))
        skipped = 0
        for i, (line, rec) in enumerate(records):
            natural = _bool(rec.get("is_natural"))
            if natural_only and natural is not True:
                if natural is None:
                    bad.report(path, line, f"malformed is_natural value {rec.get('is_natural')!r}")
                skipped += 1
                continue
            extra = {c: _bool(rec[c]) for c in _USE_EXTRA_BOOL if c in rec}
            extra["target_word"] = _text(rec.get("target_word"))
            extra["sentence"] = _text(rec.get("sentence"))
            if "" in rec:  # the unnamed index column of the released file (has gaps in USE-10/20)
                extra["raw_label"] = rec[""]
            rows.append(
                TemplateRow(f"{name}:{i}", rec["template"], _text(rec.get("word")), str(path), line, extra)
            )
        if natural_only:
            log.info(
                "%s: kept %d natural row(s), left out %d unnatural one(s)",
                path,
                len(records) - skipped,
                skipped,
            )
    return _finish(rows, name, bad, reference_quirks)


def _raw_positions(
    pre_path: Path, raw: Path | None, dataset: str, bad: BadRows
) -> tuple[Path, list[int], list[str]]:
    """Row positions (and templates) of the natural rows of the raw USE file that belongs to a preprocessed one."""
    raw = raw or pre_path.parent.parent / "raw" / f"{dataset}.csv"
    if not raw.is_file():
        raise InputError(
            f"pair ids of {dataset} are rows of the raw file, which was not found at {raw}: pass raw=... "
            "(CLI --raw); the preprocessed orig_index counts rows after the naturalness filter",
            path=pre_path,
        )
    header, records = csv_records(raw, bad)
    _need_columns(raw, header, ["template", "is_natural"])
    positions = [i for i, (_, rec) in enumerate(records) if _bool(rec["is_natural"]) is True]
    templates = [records[i][1]["template"] for i in positions]
    return raw, positions, templates


def read_use_released(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    raw: str | Path | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """Released preprocessed files (``*-no-maxpmi-constraint.csv.gz``, USE-5/10/20, Winobias-dev/test, Winogender).

    The benchmark name comes from the ``dataset`` column (``Winobias-dev`` -> ``Winobias``) unless ``name`` is
    given. The released ``max_gender_pmi`` is kept as column ``released_max_pmi``. USE pair ids are rows of the raw
    file (``raw``, default ``../raw/{dataset}.csv`` beside the preprocessed folder).
    """
    bad = bad or BadRows(on_bad_row)
    rows: list[TemplateRow] = []
    benchmark = name
    for path in _as_paths(paths):
        header, records = csv_records(path, bad)
        _need_columns(path, header, ["template", "dataset", "orig_index"])
        datasets = {rec["dataset"] for _, rec in records}
        if len(datasets) > 1:
            raise InputError(f"several datasets in one file: {sorted(datasets)}", path=path)
        dataset = datasets.pop() if datasets else path.name.split("-no-maxpmi")[0]
        base, _, split = dataset.rpartition("-")
        if split not in SPLITS:
            base, split = dataset, None
        bench = name or base
        if benchmark not in (None, bench):
            raise InputError(f"files of different benchmarks ({benchmark}, {bench}) in one build", path=path)
        benchmark = bench
        positions = templates = None
        if base.startswith("USE"):
            raw_path, positions, templates = _raw_positions(path, Path(raw) if raw else None, dataset, bad)
            if len(positions) != len(records):
                raise InputError(
                    f"{len(records)} rows but the raw file {raw_path} has {len(positions)} natural rows",
                    path=path,
                )
        for j, (line, rec) in enumerate(records):
            if positions is not None:
                if templates[j] != rec["template"]:
                    raise InputError(
                        f"template differs from natural row {positions[j]} of the raw file",
                        path=path,
                        line=line,
                    )
                pair_id = f"{bench}:{positions[j]}"
            elif "example_id" in rec:
                pair_id = f"{bench}:{rec['example_id']}" if not empty_id(rec["example_id"]) else ""
            else:
                pair_id = f"{bench}:{split}:{rec['orig_index']}" if split else f"{bench}:{rec['orig_index']}"
            extra: dict[str, Any] = {
                "orig_index": rec["orig_index"],
                "sentence": _text(rec.get("sentence")),
                "target_word": _text(rec.get("target_word")),
            }
            if split:
                extra["split"] = split
            if "example_id" in rec:
                extra["example_id"] = rec["example_id"]
            value = rec.get("max_gender_pmi")
            extra["released_max_pmi"] = float(value) if _text(value) else np.nan
            rows.append(TemplateRow(pair_id, rec["template"], _text(rec.get("word")), str(path), line, extra))
    return _finish(rows, benchmark or "benchmark", bad, reference_quirks)


# ------------------------------------------------------------------------------------------- user templates


def read_templates(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """User templates (CSV/TSV/JSONL/parquet) with a ``template`` column and placeholders ``{pronoun}``,
    ``{pronoun1}``, ``{pronoun2}`` (``{pronoun2}self``). Optional columns: ``pair_id`` (kept) or ``id``
    (pair id ``{name}:{id}``; without either, ``{name}:{row}``), ``seed_word`` or ``word``; other columns are kept."""
    bad = bad or BadRows(on_bad_row)
    paths = _as_paths(paths)
    name = name or paths[0].name.split(".")[0]
    rows: list[TemplateRow] = []
    for path in paths:
        header, records = _table_records(path, bad)
        _need_columns(path, header, ["template"])
        seed_col = "seed_word" if "seed_word" in header else ("word" if "word" in header else None)
        for i, (line, rec) in enumerate(records):
            if "pair_id" in header:
                pid = rec.get("pair_id")
                pair_id = "" if empty_id(pid) else str(pid).strip()
            elif "id" in header:
                pid = rec.get("id")
                pair_id = "" if empty_id(pid) else f"{name}:{str(pid).strip()}"
            else:
                pair_id = f"{name}:{i}"
            template = rec.get("template")
            extra = {
                k: v for k, v in rec.items() if k not in PAIRS.names and k not in ("id", seed_col) and k != ""
            }
            rows.append(
                TemplateRow(
                    pair_id,
                    template if isinstance(template, str) else "",
                    _text(rec.get(seed_col)) if seed_col else None,
                    str(path),
                    line,
                    extra,
                )
            )
    return _finish(rows, name, bad, reference_quirks)


def read_pairs(
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
    bad: BadRows | None = None,
) -> pd.DataFrame:
    """An existing PAIRS table (parquet/CSV/JSONL), e.g. from the generate stage. Rows are checked like templates;
    the sentences, MaxPMI, source and benchmark it has are kept (filled where missing); ``name`` renames the
    benchmark and the prefix of its pair ids (``USE-5:3`` -> ``NAME:3``; default: the table's own ``benchmark``
    column, else the file stem)."""
    bad = bad or BadRows(on_bad_row)
    rows = []
    kept = ("sentence_female", "sentence_male", "max_pmi", "max_pmi_word", "source")
    for path in _as_paths(paths):
        header, records = _table_records(path, bad)
        _need_columns(path, header, ["pair_id", "template"])
        for line, rec in records:
            pid = rec.get("pair_id")
            template = rec.get("template")
            given = {k: rec.get(k) for k in kept if k in rec}
            if not name:
                given["benchmark"] = _text(rec.get("benchmark")) or path.name.split(".")[0]
            pid = "" if empty_id(pid) else str(pid)
            if name and pid:
                # Renamed benchmark: its ids carry the new name, so that one pair table can be used under two
                # names (e.g. with two delta tables) and the metrics still see unique pair ids.
                pid = f"{name}:{pid.split(':', 1)[1]}" if ":" in pid else f"{name}:{pid}"
            rows.append(
                TemplateRow(
                    pid,
                    template if isinstance(template, str) else "",
                    _text(rec.get("seed_word")),
                    str(path),
                    line,
                    {k: v for k, v in rec.items() if k not in PAIRS.names},
                    given,
                )
            )
    return _finish(rows, name or "pairs", bad, reference_quirks)


# ------------------------------------------------------------------------------------------------- dispatch


def _finish(rows: list[TemplateRow], name: str, bad: BadRows, reference_quirks: bool) -> pd.DataFrame:
    df = to_pairs(rows, name, bad, reference_quirks)
    bad.log_summary(name)
    log.info("%s: %d pair(s)", name, len(df))
    return df


def build_pairs(
    kind: str,
    paths: str | Path | Iterable[str | Path],
    name: str | None = None,
    *,
    splits: Sequence[str] = SPLITS,
    natural_only: bool = True,
    raw: str | Path | None = None,
    reference_quirks: bool = False,
    on_bad_row: str = "error",
) -> pd.DataFrame:
    """Read a benchmark source of ``kind`` (one of :data:`KINDS`) into a PAIRS table (``max_pmi`` empty).

    ``splits`` applies to winobias, ``natural_only`` to use-raw, ``raw`` to use-released; ``reference_quirks``
    switches on the reference code's filling (and its Winobias/Winogender artifacts); ``on_bad_row`` is "error" (an
    InputError naming file and line) or "drop" (dropped, logged and counted).
    """
    bad = BadRows(on_bad_row)
    common = {"reference_quirks": reference_quirks, "bad": bad}
    if kind == "winobias":
        return read_winobias(paths, name or "Winobias", splits=splits, **common)
    if kind == "winogender":
        return read_winogender(paths, name or "Winogender", **common)
    if kind == "use-raw":
        return read_use_raw(paths, name, natural_only=natural_only, **common)
    if kind == "use-released":
        return read_use_released(paths, name, raw=raw, **common)
    if kind == "templates":
        return read_templates(paths, name, **common)
    if kind == "pairs":
        return read_pairs(paths, name, **common)
    raise InputError(f"unknown benchmark kind {kind!r}; use one of {list(KINDS)}")
