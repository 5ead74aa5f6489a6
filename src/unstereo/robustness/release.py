"""The released Winogender constructions of "Tail wagging" (``reference/tail-wagging/winogender/data/``): rebuilt from
the original Winogender templates by the project's construction functions, compared row for row, and loadable as
fixed alternatives.

The original ``templates.tsv`` (``occupation, participant, answer, sentence`` with ``$OCCUPATION``,
``$PARTICIPANT``, ``$NOM_PRONOUN``, ``$POSS_PRONOUN``, ``$ACC_PRONOUN``) gives two role templates per row: with the
participant and with "someone" (as Winogender's ``all_sentences.tsv``), each filled male, female and neutral; a
file row is ``sentid<TAB>sentence`` with ``sentid = [adjective.]occupation.participant.answer.gender.txt``.

The release was built with " , " around inserted clauses (kept: ``spaced=True``) and without a/an agreement
("a aggressive student"); its adjective list has two typos ("ingelligent", "unprofesional"). The project writes
"an aggressive student" and the correct spellings, and :func:`rebuild` explains each difference it finds by one of
:data:`EXPLANATIONS`; a difference no explanation covers is reported as ``unexplained``.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from unstereo.errors import InputError
from unstereo.robustness.constructions import (
    ADJECTIVES,
    CLAUSES,
    RoleTemplate,
    add_adjective,
    add_clause,
    substitute,
)
from unstereo.templates import FILLINGS, templatize_male

GENDERS = ("male", "female", "neutral")
_NEUTRAL = {"{pronoun}": "they", "{pronoun1}": "their", "{pronoun2}": "them"}
_WG_TO_PROJECT = {"$NOM_PRONOUN": "{pronoun}", "$POSS_PRONOUN": "{pronoun1}", "$ACC_PRONOUN": "{pronoun2}"}
#: The release's spelling of adjectives the paper (and the project) spell correctly.
RELEASE_SPELLING = {"intelligent": "ingelligent", "unprofessional": "unprofesional"}
EXPLANATIONS = {
    "a/an": "the release writes 'a' before a vowel-initial adjective ('a aggressive student'); the project agrees",
    "typo, a/an": "both of the two below",
    "typo": "the release's adjective typo (ingelligent, unprofesional) in the sentence; the project spells it right",
    "quotes": "the release wraps a sentence in the double quotes its templates file puts around a field with a comma",
    "not a word map": "the release's edit of this template is no word-for-word substitution (a word inserted, or one "
    "of two occurrences of a word replaced): the map read off its diff cannot express it",
}


@dataclass(frozen=True)
class WinogenderTemplate:
    """One row of the original ``templates.tsv``."""

    occupation: str
    participant: str
    answer: str
    text: str  # with $OCCUPATION / $PARTICIPANT and the project's pronoun placeholders

    def roles(self, someone: bool) -> RoleTemplate:
        text = self.text.replace("$OCCUPATION", "$SUBJECT").replace("$PARTICIPANT", "$OBJECT")
        return RoleTemplate(text, self.occupation, "someone" if someone else self.participant)

    def sentid(self, someone: bool, gender: str, prefix: str = "") -> str:
        part = "someone" if someone else self.participant
        return f"{prefix}{self.occupation}.{part}.{self.answer}.{gender}.txt"


def read_templates(path: str | Path) -> list[WinogenderTemplate]:
    """The original Winogender ``templates.tsv`` (header ``occupation(0), other-participant(1), answer, sentence``)."""
    path = Path(path)
    out = []
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f, delimiter="\t"))
    if not rows or len(rows[0]) < 4:
        raise InputError("expected a header of 4 tab-separated columns", path=path)
    for line, row in enumerate(rows[1:], start=2):
        if not row:
            continue
        if len(row) != 4:
            raise InputError(f"line {line}: expected 4 tab-separated columns, got {len(row)}", path=path)
        occupation, participant, answer, text = (c.strip() for c in row)
        for wg, project in _WG_TO_PROJECT.items():
            text = text.replace(wg, project)
        out.append(WinogenderTemplate(occupation, participant, answer, text))
    return out


def fill(rt: RoleTemplate, gender: str) -> str:
    """The sentence of ``rt`` for ``gender`` (male, female or neutral: they/their/them, "they was" -> "they were"
    as Winogender writes it)."""
    words = _NEUTRAL if gender == "neutral" else FILLINGS[gender]
    text = re.sub(r"\{pronoun[12]?\}", lambda m: words[m[0]], rt.render())
    if gender == "neutral":
        text = re.sub(r"\b([Tt]hey) was\b", r"\1 were", text)
    return text[:1].upper() + text[1:]


def read_release_file(path: str | Path) -> pd.DataFrame:
    """A released construction file as a table ``sentid, sentence`` (file order)."""
    path = Path(path)
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False, quoting=csv.QUOTE_NONE)
    if list(df.columns[:2]) != ["sentid", "sentence"]:
        raise InputError("expected the columns sentid, sentence", path=path)
    return df[["sentid", "sentence"]]


# ------------------------------------------------------------------------------ the release's files as constructions
Variant = tuple[str, Callable[[RoleTemplate], RoleTemplate]]  # (sentid prefix, construction)


def release_variants(name: str, synonyms_for: Callable[[WinogenderTemplate], dict[str, str]] | None = None):
    """The construction behind release file ``name`` (without ``.tsv``): a function of a template returning its
    variants ``(sentid prefix, role template -> role template)``."""
    if name == "winogender":
        return lambda t: [("", lambda rt: rt)]
    m = re.fullmatch(r"(subject|object)_clause_(\w+)", name)
    if m and m[2] in CLAUSES:
        role, clause = m[1], CLAUSES[m[2]]
        return lambda t: [("", lambda rt: add_clause(rt, clause, role, spaced=True))]
    placements = {
        "adj_subject": ("subject", "before"),
        "adj_object": ("object", "before"),
        "subject_adj": ("subject", "clause"),
        "object_adj": ("object", "clause"),
    }
    if name in placements:
        role, placement = placements[name]
        return lambda t: [
            (f"{RELEASE_SPELLING.get(a, a)}.", _adjective(a, role, placement)) for a in ADJECTIVES
        ]
    if name == "synonymized" and synonyms_for is not None:
        return lambda t: [("", _synonymized(synonyms_for(t)))]
    raise KeyError(name)


def _synonymized(synonyms: dict[str, str]) -> Callable[[RoleTemplate], RoleTemplate]:
    return lambda rt: substitute(rt, synonyms)


def _adjective(adjective: str, role: str, placement: str) -> Callable[[RoleTemplate], RoleTemplate]:
    return lambda rt: add_adjective(rt, adjective, role, placement, spaced=True)


def build_file(templates: list[WinogenderTemplate], variants) -> pd.DataFrame:
    """``sentid, sentence`` rows of a construction over ``templates``, in the release's order (template, then
    adjective, participant before "someone", male/female/neutral)."""
    rows = []
    for t in templates:
        for prefix, construct in variants(t):
            for someone in (False, True):
                rt = construct(t.roles(someone))
                rows += [(t.sentid(someone, g, prefix), fill(rt, g)) for g in GENDERS]
    return pd.DataFrame(rows, columns=["sentid", "sentence"])


def template_synonyms(original: WinogenderTemplate, synonymized: WinogenderTemplate) -> dict[str, str]:
    """The word substitutions that turn ``original`` into ``synonymized`` (maximal differing word runs)."""
    import difflib

    a, b = original.text.split(), synonymized.text.split()
    out = {}
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if tag == "replace":
            old, new = " ".join(a[i1:i2]).strip(".,"), " ".join(b[j1:j2]).strip(".,")
            if old and new:
                out[old.lower()] = new
    return out


# ---------------------------------------------------------------------------------------------- comparison
@dataclass
class FileMatch:
    """Row-for-row comparison of one rebuilt file with the release."""

    name: str
    rows: int
    matched: int
    explained: dict[str, int] = field(default_factory=dict)
    unexplained: list[tuple[str, str, str]] = field(default_factory=list)  # (sentid, ours, release)

    @property
    def rate(self) -> float:
        return self.matched / self.rows if self.rows else 1.0

    def as_row(self) -> dict:
        return {
            "file": f"{self.name}.tsv",
            "rows": self.rows,
            "identical": self.matched,
            "match_rate": round(self.rate, 6),
            **{f"explained:{k}": v for k, v in sorted(self.explained.items())},
            "unexplained": len(self.unexplained),
        }


_AN_ADJECTIVE = re.compile(rf"\b([Aa])n (?=(?:{'|'.join([*ADJECTIVES, *RELEASE_SPELLING.values()])})\b)")


def _explain(ours: str, theirs: str) -> str | None:
    if theirs == f'"{ours}"':
        return "quotes"
    fixed = ours
    for right, typo in RELEASE_SPELLING.items():
        fixed = re.sub(rf"\b{right}\b", typo, fixed)
    if fixed == theirs:
        return "typo"
    if _AN_ADJECTIVE.sub(r"\1 ", fixed) == theirs:
        return "a/an" if fixed == ours else "typo, a/an"
    return None


def compare(
    name: str, ours: pd.DataFrame, release: pd.DataFrame, not_a_word_map: frozenset[str] = frozenset()
) -> FileMatch:
    """Compare rebuilt rows with the release's, row for row (same sentid in the same row); differences are
    explained by :data:`EXPLANATIONS` (``not_a_word_map``: example ids ``occupation.answer`` of templates whose
    release edit is no word map)."""
    if len(ours) != len(release):
        raise InputError(f"{name}: {len(ours)} rows rebuilt, {len(release)} released")
    result = FileMatch(name, len(ours), 0)
    for sid, s, rsid, rs in zip(
        ours["sentid"], ours["sentence"], release["sentid"], release["sentence"], strict=True
    ):
        if sid != rsid:
            result.unexplained.append((sid, f"(sentid) {sid}", f"(sentid) {rsid}"))
        elif s == rs:
            result.matched += 1
        else:
            why = _explain(s, rs)
            if why is None and f"{sid.split('.')[-5]}.{sid.split('.')[-3]}" in not_a_word_map:
                why = "not a word map"
            if why is None:
                result.unexplained.append((sid, s, rs))
            else:
                result.explained[why] = result.explained.get(why, 0) + 1
    return result


RELEASE_FILES = (
    "winogender",
    *(f"{role}_clause_{c}" for role in ("subject", "object") for c in CLAUSES),
    "adj_subject",
    "adj_object",
    "subject_adj",
    "object_adj",
    "synonymized",
)


def rebuild(data_dir: str | Path, names: tuple[str, ...] = RELEASE_FILES) -> list[FileMatch]:
    """Rebuild the release's files ``names`` in ``data_dir`` (``reference/tail-wagging/winogender/data``) from its
    ``templates.tsv`` and compare them with the released ones, row for row."""
    data_dir = Path(data_dir)
    templates = read_templates(data_dir / "templates.tsv")
    results = []
    for name in names:
        synonyms_for, inexpressible = None, frozenset[str]()
        if name == "synonymized":
            synonymized = read_templates(data_dir / "synonymized_templates.tsv")
            pairs = list(zip(templates, synonymized, strict=True))
            by_template = {t: template_synonyms(t, s) for t, s in pairs}
            synonyms_for = by_template.__getitem__
            inexpressible = frozenset(
                f"{t.occupation}.{t.answer}"
                for t, s in pairs
                if substitute(t.roles(False), by_template[t]).render() != s.roles(False).render()
            )
        ours = build_file(templates, release_variants(name, synonyms_for))
        results.append(compare(name, ours, read_release_file(data_dir / f"{name}.tsv"), inexpressible))
    return results


def load_release(
    path: str | Path, benchmark: str = "Winogender", construction: str | None = None
) -> pd.DataFrame:
    """A released construction file as a PAIRS table (its male rows templatized, as the project reads Winogender's
    ``all_sentences.tsv``): ``pair_id = {benchmark}:{occupation.participant.answer}@{construction}[:{adjective}]``."""
    from unstereo.tables import PAIRS, validate
    from unstereo.templates import fill_template

    path = Path(path)
    construction = construction or path.stem
    df = read_release_file(path)
    rows = []
    for sid, sentence in zip(df["sentid"], df["sentence"], strict=True):
        parts = sid.split(".")
        if len(parts) not in (5, 6) or parts[-1] != "txt":
            raise InputError(f"malformed sentid {sid!r}", path=path)
        if parts[-2] != "male":
            continue
        adjective = parts[0] if len(parts) == 6 else None
        occ, part, answer = parts[-5:-2]
        template = templatize_male(sentence)
        name = f"{construction}:{adjective}" if adjective else construction
        rows.append(
            {
                "pair_id": f"{benchmark}:{occ}.{part}.{answer}@{name}",
                "benchmark": benchmark,
                "template": template,
                "sentence_female": fill_template(template, "female"),
                "sentence_male": fill_template(template, "male"),
                "seed_word": (part if answer == "1" else occ).lower(),
                "max_pmi": None,
                "max_pmi_word": None,
                "source": f"{path.name}",
            }
        )
    return validate(pd.DataFrame(rows), PAIRS, source=path)
