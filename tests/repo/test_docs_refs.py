"""References in the repository's text lead somewhere: the code cites docs/methods.md by anchor, never the private
spec, and names only repository files that exist.

Three checks. Two over the repository's text files (src/, rules/, Snakefile, workflow/, config/, tests/, docs/, data/ and
README.md; fetched resources under data/external are not the project's text):

- no reference to the spec by section number ("SPEC" followed by a digit, or by "quirk"): the document is not in
  the repository, so such a pointer leads nowhere;
- every pointer ``methods.md#anchor`` (plain ``docs/methods.md#...`` in code, a relative Markdown link in .md files,
  ``(#anchor)`` inside docs/methods.md) names a heading of docs/methods.md, by GitHub's anchor rules: lowercase,
  punctuation dropped, spaces to '-', a repeated heading suffixed -1, -2, ...

And one over the library's docstrings and comments (every text file under src/): a repository path it names
(``rules/...``, ``config/...``, ``docs/...``, ``benchmarks/...``, ``scripts/...``, ``src/...``, ``workflow/...``,
``tests/...``) exists, so a moved file fails here instead of leaving a pointer to nowhere. A pattern (``*``,
``{wildcard}``, ``<x>``) is not a path and is skipped.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

SCANNED = ("src", "rules", "Snakefile", "workflow", "config", "tests", "docs", "data", "README.md")
SKIPPED_DIRS = {"__pycache__", ".snakemake", "external"}  # data/external: fetched resources
TEXT_SUFFIXES = {".py", ".smk", ".yaml", ".yml", ".md", ".rst", ".txt", ".csv", ".tsv", ".json", ".toml", ".sh",
                 ".cfg", ".html"}  # fmt: skip
THIS = Path(__file__).resolve()

# Built from pieces so that this file does not hold what it forbids.
SPEC_REF = re.compile("SPEC" + r"\s+(?:§\s*)?(?:\d|quirk)")
POINTER = re.compile(r"methods\.md#([\w-]+)")
LOCAL_LINK = re.compile(r"\]\(#([\w-]+)\)")
# A repository path: a top-level folder of the repository (not the end of a longer path such as
# unstereo/config/...), then path characters, ending on a word character or '/' (a sentence's full stop is not part).
REPO_PATH = re.compile(
    r"(?<![\w./{}<>*-])((?:rules|config|docs|benchmarks|scripts|src|workflow|tests)/[\w./{}<>*-]*[\w/])"
)
PATTERN_CHARS = set("*{}<>")


def github_anchor(heading: str) -> str:
    """The anchor GitHub gives a heading's text."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def heading_anchors(markdown: str) -> set[str]:
    """Every anchor the headings of a Markdown text define (fenced code skipped; repeats get -1, -2, ...)."""
    anchors, seen, fence = set(), {}, False
    for line in markdown.splitlines():
        if line.lstrip().startswith(("```", "~~~")):
            fence = not fence
            continue
        m = re.match(r"#{1,6}\s+(.*?)\s*#*\s*$", line)
        if fence or not m:
            continue
        a = github_anchor(m.group(1))
        n = seen.get(a, 0)
        seen[a] = n + 1
        anchors.add(a if n == 0 else f"{a}-{n}")
    return anchors


def text_files(root: Path, scanned: tuple[str, ...] = SCANNED):
    """The scanned text files under ``root`` (symbolic links to folders are not followed)."""
    for name in scanned:
        top = root / name
        if top.is_file():
            yield top
            continue
        for folder, dirs, files in os.walk(top):
            # results folders are outputs; *.egg-info is pip's record of an editable install (its SOURCES.txt
            # lists the files of the tree it was made from, stale once a file moves)
            dirs[:] = [
                d
                for d in dirs
                if d not in SKIPPED_DIRS and not d.startswith("results") and not d.endswith(".egg-info")
            ]
            for f in files:
                path = Path(folder, f)
                if path.suffix in TEXT_SUFFIXES and path.resolve() != THIS:
                    yield path


def read(path: Path) -> str:
    return path.read_bytes().decode("utf-8", errors="replace")


def spec_references(root: Path) -> list[str]:
    """``file:line: text`` of every reference to the spec by number under ``root``."""
    out = []
    for path in text_files(root):
        for n, line in enumerate(read(path).splitlines(), 1):
            if SPEC_REF.search(line):
                out.append(f"{path.relative_to(root)}:{n}: {line.strip()}")
    return out


def dangling_pointers(root: Path) -> list[str]:
    """``file:line: #anchor`` of every pointer into docs/methods.md that names no heading of it."""
    methods = root / "docs" / "methods.md"
    anchors = heading_anchors(read(methods))
    out = []
    for path in text_files(root):
        for n, line in enumerate(read(path).splitlines(), 1):
            found = POINTER.findall(line)
            if path == methods:
                found += LOCAL_LINK.findall(line)
            out += [f"{path.relative_to(root)}:{n}: #{a}" for a in found if a not in anchors]
    return out


def missing_paths(root: Path, scanned: tuple[str, ...] = ("src",)) -> list[str]:
    """``file:line: path`` of every repository path named under ``scanned`` (docstrings, comments, rules files)
    that does not exist under ``root``."""
    out = []
    for path in text_files(root, scanned):
        for n, line in enumerate(read(path).splitlines(), 1):
            for named in REPO_PATH.findall(line):
                if not PATTERN_CHARS & set(named) and not (root / named).exists():
                    out.append(f"{path.relative_to(root)}:{n}: {named}")
    return out


# ------------------------------------------------------------------------------------------------ the repository
def test_no_reference_to_the_spec_by_number(repo_dir):
    found = spec_references(repo_dir)
    assert not found, "cite docs/methods.md#<section> instead:\n" + "\n".join(found)


def test_every_pointer_into_methods_md_names_a_heading(repo_dir):
    found = dangling_pointers(repo_dir)
    assert not found, "no such heading in docs/methods.md:\n" + "\n".join(found)


def test_every_repository_path_named_in_the_library_exists(repo_dir):
    found = missing_paths(repo_dir)
    assert not found, "no such file or folder in the repository (moved?):\n" + "\n".join(found)


# ------------------------------------------------------------------------------------------- the checks themselves
def test_github_anchor_rules():
    assert github_anchor("Scoring and metrics") == "scoring-and-metrics"
    assert github_anchor("Quirk 1: capitalize()") == "quirk-1-capitalize"  # ':' and '()' dropped
    assert github_anchor("Generation filters (USE-k)") == "generation-filters-use-k"  # '-' kept
    assert (
        github_anchor("BiasTestGPT texts (reference_quirks)") == "biastestgpt-texts-reference_quirks"
    )  # '_' kept
    md = "# T\n## A b\n```\n## Not a heading\n```\n## A b\n### A b\n"
    assert heading_anchors(md) == {"t", "a-b", "a-b-1", "a-b-2"}


def _tree(tmp_path: Path, code: str) -> Path:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "methods.md").write_text("# Methods\n\nSee [below](#fairpair).\n\n## FairPair\n")
    (tmp_path / "src").mkdir()
    (tmp_path / "src" / "m.py").write_text(code)
    return tmp_path


def test_the_checks_find_what_they_should(tmp_path):
    cite = "SPEC" + " 2"
    root = _tree(
        tmp_path, f'"""FairPair ({cite}; docs/methods.md#fairpair), see docs/methods.md#fair-pair."""\n'
    )
    assert spec_references(root) == [f'src/m.py:1: """FairPair ({cite}; docs/methods.md#fairpair), see '
                                     'docs/methods.md#fair-pair."""']  # fmt: skip
    assert dangling_pointers(root) == ["src/m.py:1: #fair-pair"]
    (root / "docs" / "methods.md").write_text("# Methods\n\nSee [below](#fairpai).\n")
    assert dangling_pointers(root) == [
        "src/m.py:1: #fairpair",
        "src/m.py:1: #fair-pair",
        "docs/methods.md:3: #fairpai",
    ]


def test_the_path_check_finds_a_moved_file(tmp_path):
    """Named in a docstring and a comment: one path that exists, one that moved, one that is a pattern, one that is
    the tail of a package path (unstereo/config/...: not a repository path), one at a sentence's end."""
    root = _tree(tmp_path, '"""Helpers for ``rules/toy.smk``; see docs/methods.md#fairpair."""\n'
                           "# the schema: config/toy.schema.yaml, rules/*.smk, unstereo/config/x.yaml, src/m.py.\n")  # fmt: skip
    assert missing_paths(root) == ["src/m.py:1: rules/toy.smk", "src/m.py:2: config/toy.schema.yaml"]
    (root / "rules").mkdir()
    (root / "rules" / "toy.smk").write_text("")
    (root / "config").mkdir()
    (root / "config" / "toy.schema.yaml").write_text("")
    assert missing_paths(root) == []
