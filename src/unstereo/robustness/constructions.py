"""Alternate constructions of a template ("Tail wagging", docs/methods.md#dataset-construction-robustness):
named, composable functions over role templates.

A :class:`RoleTemplate` is a template whose two entities are marked: ``$SUBJECT`` and ``$OBJECT`` stand for the
words in ``subject`` / ``object`` (Winogender: the occupation and the participant, as in the release's file names
``subject_*`` / ``object_*``; other benchmarks: the first noun phrase, or a sentence-initial pronoun, and the next
``the/a/an`` noun phrase after it, see :func:`mark_roles`). Pronoun placeholders (``{pronoun}``, ``{pronoun1}``,
``{pronoun2}``) pass through every construction untouched, so a constructed template is filled female and male as
any other (:meth:`RoleTemplate.render` then :func:`unstereo.templates.fill_template`).

Each construction maps a RoleTemplate to a RoleTemplate and leaves it unchanged where it does not apply:

- :func:`add_clause` (the paper's 5 :data:`CLAUSES`) after the subject or the object;
- :func:`add_adjective` (the paper's 33 :data:`ADJECTIVES`) ``before`` the noun (with a/an agreement; "someone" and a
  bare pronoun are left alone) or as a ``clause`` ("who was ADJ") after it: with the two roles, 4 placements;
- :func:`substitute`: synonym substitution from a word/phrase map (:func:`load_synonyms`: the packaged map or a
  CSV; :func:`wordnet_synonyms` generates one from WordNet);
- :func:`negate`: the first verb after the subject negated ("told" -> "did not tell", "was" -> "was not").

``spaced=True`` writes the release's " , " around inserted clauses and no a/an agreement (``article=False``) is how
the released Winogender files were built (:mod:`.release`); the defaults write ordinary punctuation and articles.
"""

from __future__ import annotations

import csv
import re
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, replace
from functools import lru_cache
from pathlib import Path

from unstereo.errors import InputError
from unstereo.package_data import DATA_DIR

SUBJECT, OBJECT = "$SUBJECT", "$OBJECT"
ROLES = ("subject", "object")
MARKER = {"subject": SUBJECT, "object": OBJECT}

#: The paper's clauses (appendix D), keyed as in the release's file names.
CLAUSES: dict[str, str] = {
    "afternoon": "who came in the afternoon",
    "back": "who just came back",
    "beach": "who just returned from the beach",
    "restaurant": "who just returned from the restaurant",
    "to_restaurant": "who went to the restaurant",
}
#: The paper's 33 adjectives (appendix C), spelled correctly (the release writes "ingelligent", "unprofesional").
ADJECTIVES: tuple[str, ...] = tuple(
    "aggressive arrogant beautiful brilliant clean clever cruel deceitful devious dirty dumb evil generous gentle "
    "greedy hateful honest humorless ignorant intelligent intolerant neat professional rude smart strong stupid "
    "terrible ugly unclean unprofessional weak wise".split()
)
PLACEMENTS = ("before", "clause")
#: Words that take a/an by sound rather than spelling.
_AN_EXCEPTIONS = {"honest": "an", "honour": "an", "hour": "an", "heir": "an", "unique": "a", "useful": "a"}
_AUXILIARIES = {
    "is", "are", "was", "were", "am", "has", "have", "had", "can", "could", "will", "would", "shall", "should",
    "may", "might", "must", "does", "do", "did",
}  # fmt: skip
_STOP = {
    "the", "a", "an", "and", "or", "but", "that", "which", "who", "to", "of", "in", "on", "at", "with", "for",
    "from", "by", "about", "as", "into", "after", "before", "because", "while", "when", "so", "then", "not",
    "this", "these", "those", "there", "it", "its", "someone", "up", "down", "out", "over", "always", "perhaps",
    "sometimes", "towards", "across", "afterwards", "thus", "less", "unless", "yes", "us", "his", "hers", "was",
} | _AUXILIARIES  # fmt: skip
_PLACEHOLDER = r"\{pronoun[12]?\}(?:self)?"
_CLAUSE_BREAK = re.compile(r"[\"“”.!?:;]")
_WORD = re.compile(rf"{_PLACEHOLDER}|\$SUBJECT|\$OBJECT|[A-Za-z][A-Za-z'-]*")


@dataclass(frozen=True)
class RoleTemplate:
    """A template with ``$SUBJECT`` / ``$OBJECT`` markers standing for ``subject`` / ``object`` (None: the role
    was not found; "someone": Winogender's participant-free variant, written without article)."""

    text: str
    subject: str | None = None
    object: str | None = None

    def word(self, role: str) -> str | None:
        return self.subject if role == "subject" else self.object

    def has(self, role: str) -> bool:
        return self.word(role) is not None and MARKER[role] in self.text

    def render(self) -> str:
        """The template with the role words put back (placeholders kept): "the $OBJECT" with object "someone" is
        "someone", capitalised at the start of a sentence."""
        text = self.text
        for role in ROLES:
            word = self.word(role)
            if word is None:
                continue
            if word == "someone":
                text = re.sub(
                    rf"\b([Tt]he|[Aa]n?) \{MARKER[role]}",
                    lambda m: "Someone" if m[1][0].isupper() else "someone",
                    text,
                )
            text = text.replace(MARKER[role], word)
        return text[:1].upper() + text[1:]


#: A construction: a role template in, a role template out (unchanged where it does not apply).
Construction = Callable[[RoleTemplate], RoleTemplate]


def _article(word: str) -> str:
    low = word.lower()
    if low in _AN_EXCEPTIONS:
        return _AN_EXCEPTIONS[low]
    return "an" if low[:1] in "aeiou" else "a"


def _with_case(new: str, old: str) -> str:
    return new[:1].upper() + new[1:] if old[:1].isupper() else new


def add_clause(rt: RoleTemplate, clause: str, role: str, spaced: bool = False) -> RoleTemplate:
    """``clause`` (e.g. "who just came back") after the ``role`` entity, set off by commas; before sentence
    punctuation the closing comma is dropped. ``spaced``: the release's " , clause , "."""
    _check_role(role)
    if not rt.has(role):
        return rt
    marker = MARKER[role]
    i = rt.text.index(marker) + len(marker)
    rest = rt.text[i:]
    if spaced:
        return replace(rt, text=f"{rt.text[:i]} , {clause} ,{rest}")
    if rest[:1] in {".", ",", ";", ":", "!", "?"} or not rest.strip():
        return replace(rt, text=f"{rt.text[:i]}, {clause}{rest}")
    return replace(rt, text=f"{rt.text[:i]}, {clause},{rest}")


def add_adjective(
    rt: RoleTemplate,
    adjective: str,
    role: str,
    placement: str = "before",
    spaced: bool = False,
    article: bool = True,
) -> RoleTemplate:
    """``adjective`` on the ``role`` entity: ``before`` its noun ("the smart doctor", "a" / "an" agreeing with
    the adjective unless ``article`` is False; "someone" is left alone) or as a ``clause`` ("the doctor, who was
    smart,")."""
    _check_role(role)
    if placement not in PLACEMENTS:
        raise ValueError(f"placement must be one of {PLACEMENTS}, got {placement!r}")
    if placement == "clause":
        return add_clause(rt, f"who was {adjective}", role, spaced=spaced)
    word = rt.word(role)
    if not rt.has(role) or word == "someone" or str(word).startswith("{"):
        return rt  # no adjective before "someone" or a pronoun
    marker = re.escape(MARKER[role])

    def before(m: re.Match[str]) -> str:
        det = m[1]
        if article and det.lower() in {"a", "an"}:
            det = _with_case(_article(adjective), det)
        return f"{det} {adjective} {MARKER[role]}"

    text, n = re.subn(rf"\b([Tt]he|[Aa]n?) {marker}", before, rt.text, count=1)
    if n == 0:  # no article (a bare noun): the adjective goes right before it
        text = rt.text.replace(MARKER[role], f"{adjective} {MARKER[role]}", 1)
    return replace(rt, text=text)


def substitute(rt: RoleTemplate, synonyms: Mapping[str, str]) -> RoleTemplate:
    """Every whole word or phrase of ``synonyms`` (lower-case keys) replaced by its synonym, longest first, keeping
    a capital first letter; markers and placeholders are never touched."""
    if not synonyms:
        return rt
    keys = sorted(synonyms, key=lambda k: (-len(k), k))
    pattern = re.compile(
        r"(?<![\w$'{-])(" + "|".join(re.escape(k) for k in keys) + r")(?![\w'}-])", re.IGNORECASE
    )
    return replace(rt, text=pattern.sub(lambda m: _with_case(synonyms[m[1].lower()], m[1]), rt.text))


def _verb_start(text: str) -> int:
    """Where to look for the main verb: after the first role marker, sentence-initial placeholder or noun
    phrase (the subject)."""
    for m in _WORD.finditer(text):
        w = m[0]
        if w in (SUBJECT, OBJECT) or w.startswith("{pronoun"):
            return m.end()
        if w.lower() not in {"the", "a", "an"}:
            return m.end()
    return 0


def negate(rt: RoleTemplate, irregular: Mapping[str, str] | None = None) -> RoleTemplate:
    """The first verb after the subject negated: an auxiliary or modal gets "not" ("was not", "could not"); a past
    form becomes "did not" + base form ("told" -> "did not tell"; irregular forms from :func:`load_irregular`), a
    third-person present "does not" + base. Unchanged when no verb is found."""
    irregular = load_irregular() if irregular is None else irregular
    start = _verb_start(rt.text)
    for m in _WORD.finditer(rt.text, start):
        w = m[0]
        low = w.lower()
        if w.startswith(("$", "{")):
            continue
        following = rt.text[m.end() :].split(maxsplit=1)
        nxt = following[0].lower().strip('.,;:!?"') if following else ""
        if low in {"has", "had", "have"} and not _participle(nxt, irregular):
            new = f"{_with_case('does' if low == 'has' else 'did' if low == 'had' else 'do', w)} not have"
        elif low in _AUXILIARIES:
            new = f"{w} not"
        elif low in irregular:
            new = f"{_with_case('did', w)} not {irregular[low]}"
        elif low.endswith("ed") and len(low) > 3:
            new = f"{_with_case('did', w)} not {_regular_base(low)}"
        elif low.endswith("s") and not low.endswith("ss") and len(low) > 3 and low not in _STOP:
            new = f"{_with_case('does', w)} not {_present_base(low)}"
        else:
            continue
        return replace(rt, text=rt.text[: m.start()] + new + rt.text[m.end() :])
    return rt


def _participle(word: str, irregular: Mapping[str, str]) -> bool:
    """Whether ``word`` reads as a past participle (after has/had: an auxiliary, "had left")."""
    return word == "been" or word in irregular or word.endswith(("ed", "en", "wn"))


def _regular_base(past: str) -> str:
    stem = past[:-2]
    base = _wordnet_base([stem, stem + "e", stem[:-1], stem[:-1] + "y"])
    if base:
        return base
    if stem.endswith("i"):  # carried -> carry
        return stem[:-1] + "y"
    if len(stem) > 2 and stem[-1] == stem[-2] and stem[-1] not in "lsz":  # stopped -> stop
        return stem[:-1]
    if stem.endswith(("at", "ag", "iz", "ur", "ot", "iv", "ov", "ak", "ar", "us", "ut", "id", "ir", "et")):
        return (
            stem + "e"
        )  # created, changed, realized, cured, noted, arrived, moved, baked, scared, used, ...
    return stem


def _present_base(form: str) -> str:
    base = _wordnet_base([form[:-1], form[:-2], form[:-3] + "y"])
    if base:
        return base
    if form.endswith("ies"):
        return form[:-3] + "y"
    if form.endswith(("ches", "shes", "sses", "xes", "zes", "oes")):
        return form[:-2]
    return form[:-1]


@lru_cache(maxsize=1)
def _verb_lemmas() -> frozenset[str]:
    """WordNet's verb lemmas (``index.verb`` of the ``wordnet`` resource under the external directory; empty where
    it is missing: the suffix rules alone then give the base form)."""
    from unstereo.models.spec import external_dir_default

    path = external_dir_default() / "wordnet" / "corpora" / "wordnet" / "index.verb"
    if not path.is_file():
        return frozenset()
    with path.open(encoding="utf-8") as f:
        return frozenset(line.split(" ", 1)[0] for line in f if line[:1].isalpha())


def _wordnet_base(candidates: list[str]) -> str | None:
    """The first of ``candidates`` that WordNet knows as a verb."""
    lemmas = _verb_lemmas()
    return next((c for c in candidates if c in lemmas), None)


def _check_role(role: str) -> None:
    if role not in ROLES:
        raise ValueError(f"role must be one of {ROLES}, got {role!r}")


# ---------------------------------------------------------------------------------------------- marking roles
def mark_roles(template: str, subject: str | None = None, object: str | None = None) -> RoleTemplate:
    """A RoleTemplate of ``template``: the first whole-word occurrence of ``subject`` / ``object`` (when given,
    e.g. Winogender's occupation and participant; "someone" is written without article) becomes its marker.
    When neither is given, the subject is the first noun phrase (``The/A/An`` + words up to a function word, a
    verb form or punctuation) or a sentence-initial ``{pronoun}``, and the object the next ``the/a/an`` noun
    phrase after it; the marker stands for the phrase's words after the article."""
    if subject is not None or object is not None:
        text = template
        for role, word in (("subject", subject), ("object", object)):
            if word is None:
                continue
            pattern = re.compile(rf"(?<![\w$]){re.escape(word)}(?!\w)", re.IGNORECASE)
            m = pattern.search(text)
            if m is None:
                raise InputError(f"template {template!r}: {role} {word!r} not found")
            text = text[: m.start()] + MARKER[role] + text[m.end() :]
        return RoleTemplate(text, subject, object)
    return _mark_phrases(template)


def _phrase_end(words: list[re.Match[str]], i: int, irregular: Mapping[str, str]) -> int:
    """Index of the last word of the noun phrase whose first word (after the article) is ``words[i]``."""
    end = i
    for j in range(i + 1, min(i + 4, len(words))):
        between = words[j - 1].string[words[j - 1].end() : words[j].start()]
        w = words[j][0].lower()
        verb_like = len(w) > 4 and w.endswith(("ed", "s"))
        if between.strip() or w in _STOP or w.startswith(("{", "$")) or w in irregular or verb_like:
            break
        end = j
    return end


def _mark_phrases(template: str) -> RoleTemplate:
    irregular = load_irregular()
    words = list(_WORD.finditer(template))
    found: list[tuple[int, int, str]] = []  # (start, end, words) of subject then object
    i = 0
    if words and words[0][0] == "{pronoun}" and not template[: words[0].start()].strip():
        found.append((words[0].start(), words[0].end(), "{pronoun}"))
        i = 1
    while i < len(words) - 1 and len(found) < 2:
        if found and _CLAUSE_BREAK.search(template, found[0][1], words[i].start()):
            break  # the object is looked for in the subject's sentence, before any quotation
        if words[i][0].lower() in {"the", "a", "an"} and not words[i + 1][0].startswith(("{", "$")):
            head = words[i + 1][0].lower()
            if head not in _STOP:
                end = _phrase_end(words, i + 1, irregular)
                start, stop = words[i + 1].start(), words[end].end()
                found.append((start, stop, template[start:stop]))
                i = end + 1
                continue
        i += 1
    text = template
    roles: dict[str, str | None] = {"subject": None, "object": None}
    for role, (start, stop, phrase) in reversed(list(zip(ROLES, found, strict=False))):
        text = text[:start] + MARKER[role] + text[stop:]
        roles[role] = phrase
    return RoleTemplate(text, roles["subject"], roles["object"])


# ---------------------------------------------------------------------------------------------- word lists
def _read_map(path: Path, columns: tuple[str, str]) -> dict[str, str]:
    with path.open(newline="", encoding="utf-8") as f:
        reader = csv.DictReader(f)
        if reader.fieldnames is None or not set(columns) <= set(reader.fieldnames):
            raise InputError(f"expected columns {', '.join(columns)}", path=path)
        out: dict[str, str] = {}
        for line, row in enumerate(reader, start=2):
            key, value = (str(row[c] or "").strip() for c in columns)
            if not key or not value:
                raise InputError(f"line {line}: empty {columns[0]} or {columns[1]}", path=path)
            out[key.lower()] = value
        return out


@lru_cache(maxsize=1)
def load_irregular() -> dict[str, str]:
    """Irregular past form -> base form (``data/robustness/irregular_verbs.csv``)."""
    return _read_map(DATA_DIR / "robustness" / "irregular_verbs.csv", ("past", "base"))


def load_synonyms(path: str | Path | None = None) -> dict[str, str]:
    """A synonym map (CSV ``word,synonym``); None = the packaged ``data/robustness/synonyms.csv``."""
    return _read_map(Path(path) if path else DATA_DIR / "robustness" / "synonyms.csv", ("word", "synonym"))


def wordnet_synonyms(
    words: Iterable[str], wordnet_dir: str | Path, skip: Iterable[str] = ()
) -> dict[str, str]:
    """A synonym map generated from WordNet (the ``wordnet`` resource): for each word of ``words`` (lower-cased,
    minus ``skip``), the most frequent other single-word lemma of its most frequent synset, where there is one."""
    from unstereo.unstereoeval.api import load_wordnet

    load_wordnet(wordnet_dir)  # puts the directory on NLTK's path, or raises a ResourceError
    from nltk.corpus import wordnet as wn

    skipped = {s.lower() for s in skip}
    out: dict[str, str] = {}
    for word in sorted({w.lower() for w in words} - skipped - _STOP):
        for synset in wn.synsets(word)[:1]:
            lemmas = sorted(synset.lemmas(), key=lambda lemma: -lemma.count())
            other = [
                lemma.name() for lemma in lemmas if lemma.name().lower() != word and "_" not in lemma.name()
            ]
            if other:
                out[word] = other[0]
    return out
