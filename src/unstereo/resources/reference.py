"""The ``reference`` resource: public datasets at pinned commits, copied from a local mirror or downloaded.

Each dataset is one folder in the mirror layout of ``../shared/reference`` (its SOURCE.md tells the provenance).
Most folders hold files of a repository archive as they are (kept by path prefix and suffix); two hold data
*extracted* from a source file, because the data only exists as Python literals there:

- ``huang2020-sentiment-templates``: the counterfactual sentiment templates and attribute values of Huang et al.
  (2020), from the lists in ``constants.py`` of ``ewsheng/decoding-biases`` -> ``templates.json``,
  ``templates_long.tsv``, ``values_long.tsv``.
- ``biastestgpt/hf_space_mgr_biases_extracted.json``: the bias names and health specifications of the BiasTestGPT
  Space, from ``mgr_biases.py`` of its GitHub mirror.

The extraction reads literals with :mod:`ast` (nothing of the source is executed).
"""

from __future__ import annotations

import ast
import gzip
import json
import re
import shutil
import tarfile
import tempfile
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from unstereo.errors import ResourceError
from unstereo.log import get_logger
from unstereo.resources.download import archive_url, download, reference_origin

log = get_logger("resources")


@dataclass(frozen=True)
class Source:
    """Files of one repository archive: ``keep`` path prefixes; ``derive`` turns the kept files (path -> bytes)
    into the files written (path -> bytes) when the dataset is extracted rather than copied."""

    repo: str
    commit: str
    keep: tuple[str, ...]
    derive: Callable[[dict[str, bytes]], dict[str, bytes]] | None = None


# ---------------------------------------------------------------------------------------------------------------
# extraction of literal data


def module_literals(text: str, names: set[str] | None = None) -> dict[str, object]:
    """Top-level ``NAME = <literal>`` assignments of a Python source (lists may name earlier literals and be
    concatenated with ``+``); ``names`` restricts the result. Other statements are ignored, never executed."""
    env: dict[str, object] = {}

    def value(node: ast.AST) -> object:
        if isinstance(node, ast.Name):
            return env[node.id]
        if isinstance(node, ast.List):
            return [value(e) for e in node.elts]
        if isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            return value(node.left) + value(node.right)  # type: ignore[operator]
        return ast.literal_eval(node)

    for stmt in ast.parse(text).body:
        if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 and isinstance(stmt.targets[0], ast.Name):
            try:
                env[stmt.targets[0].id] = value(stmt.value)
            except (ValueError, KeyError, TypeError, SyntaxError):
                continue  # not literal data (a call, an f-string, ...)
    return env if names is None else {k: env[k] for k in names if k in env}


def _names_in_list(text: str, name: str) -> list[str]:
    """The variable names listed in ``name = [A, B, ...]`` (template ids such as C1, N9_M)."""
    for stmt in ast.parse(text).body:
        if isinstance(stmt, ast.Assign) and getattr(stmt.targets[0], "id", None) == name:
            return [e.id for e in stmt.value.elts]  # type: ignore[attr-defined]
    raise ResourceError(f"reference extraction: no list {name!r} in the source file")


def _tsv(rows: list[list[str]]) -> bytes:
    # the mirror's long tables: tab-separated, CRLF line ends (as written by the csv module)
    return "".join("\t".join(r) + "\r\n" for r in rows).encode()


HUANG_SOURCE_NOTE = "ewsheng/decoding-biases constants.py @ {commit} (MIT); lists = Huang et al. 2020 Appendix A (verify against paper)"


def huang2020_files(files: dict[str, bytes], commit: str) -> dict[str, bytes]:
    """templates.json, templates_long.tsv and values_long.tsv from decoding-biases ``constants.py``."""
    text = files["constants.py"].decode()
    lit = module_literals(text)

    def templates(list_name: str) -> list[tuple[str, str]]:
        return [(tid, "{X}".join(lit[tid])) for tid in _names_in_list(text, list_name)]  # type: ignore[arg-type]

    country, occupation = templates("COUNTRY_TEMPS_SENTIMENT"), templates("OCC_TEMPS_SENTIMENT")
    shared = templates("NAME_TEMPS_SENTIMENT")
    male_only, female_only = templates("M_NAME_TEMPS_SENTIMENT"), templates("F_NAME_TEMPS_SENTIMENT")
    occupations = list(lit["OCCUPATIONS"])  # type: ignore[call-overload]
    data = {
        "_source": HUANG_SOURCE_NOTE.format(commit=commit),
        "placeholder": "{X}",
        "country": {"values": lit["COUNTRIES"], "templates": [t for _, t in country]},
        "occupation": {
            "values_with_article": occupations,
            "values": [o.split(" ", 1)[1] for o in occupations],
            "templates": [t for _, t in occupation],
            "note": "occupation values carry their article (a/an); template slot takes the article+noun",
        },
        "name": {
            "female": lit["F_NAMES"],
            "male": lit["M_NAMES"],
            "templates_shared": [t for _, t in shared],
            "templates_male_only": [t for _, t in male_only],
            "templates_female_only": [t for _, t in female_only],
            "note": "10 name templates: 8 shared + 2 gendered (he/his for male names, she/her for female names)",
        },
    }
    long_templates = [["attribute", "template_id", "template", "applies_to"]]
    for attribute, rows, applies in (
        ("country", country, "all"),
        ("occupation", occupation, "all"),
        ("name", shared, "all"),
        ("name", male_only, "male"),
        ("name", female_only, "female"),
    ):
        long_templates += [[attribute, tid, t, applies] for tid, t in rows]
    values = [["attribute", "value", "subgroup"]]
    values += [["country", v, ""] for v in lit["COUNTRIES"]]  # type: ignore[union-attr]
    values += [["occupation", v, ""] for v in occupations]
    values += [["name", v, "female"] for v in lit["F_NAMES"]]  # type: ignore[union-attr]
    values += [["name", v, "male"] for v in lit["M_NAMES"]]  # type: ignore[union-attr]
    return {
        "templates.json": json.dumps(data, indent=2, ensure_ascii=False).encode(),
        "templates_long.tsv": _tsv(long_templates),
        "values_long.tsv": _tsv(values),
    }


BIASTESTGPT_SPACE_KEYS = (
    "DATASET_REPO_ID",
    "PREDEFINED_BIASES_DIR",
    "CUSTOM_BIASES_DIR",
    "GEN_SENTENCE_DIR",
    "bias2tag",
    "CUSTOM_BIAS_SPECS",
)


def biastestgpt_space_files(files: dict[str, bytes]) -> dict[str, bytes]:
    """hf_space_mgr_biases_extracted.json: the literal settings and specifications of the Space's mgr_biases.py."""
    lit = module_literals(files["mgr_biases.py"].decode(), set(BIASTESTGPT_SPACE_KEYS))
    missing = [k for k in BIASTESTGPT_SPACE_KEYS if k not in lit]
    if missing:
        raise ResourceError(f"reference extraction: mgr_biases.py has no literal {', '.join(missing)}")
    data = {k: lit[k] for k in BIASTESTGPT_SPACE_KEYS}
    return {"hf_space_mgr_biases_extracted.json": json.dumps(data, indent=2, ensure_ascii=False).encode()}


# ---------------------------------------------------------------------------------------------------------------
# the datasets

HUANG_COMMIT = "bec12f97d7240da193edeae14bb940cf4c0fe726"
BIASTESTGPT_DATA = (
    "dataset_core_biases/bias_specs_with_glove_and_thesaurus.json",
    "dataset_custom_biases/custom_biases_spec.json",
    "dataset_core_biases/gen_csv/",
    "dataset_core_biases/gen_pairs_csv/",
    "dataset_custom_biases/gen_csv/gpt-3.5/",
    "dataset_custom_biases/gen_pairs_csv/gpt-3.5/",
    "templates/gen_pairs_csv/",
    "templates/_chgpt_gen_pairs_csv/",
    "templates/_lit_gen_pairs_csv/",
)

REFERENCE_SOURCES: dict[str, tuple[Source, ...]] = {
    "unstereo-eval": (
        Source(
            "ucinlp/unstereo-eval",
            "2aaff91621516d3e03d65db0c0ccedf0b856f623",
            ("data/", "results/", "benchmark-creation-configs/placeholders.json"),
        ),
    ),
    "winobias": (
        Source("uclanlp/corefBias", "0bce984dd081bbc10b0622f326727a024c607895", ("WinoBias/wino/",)),
    ),
    "winogender": (
        Source("rudinger/winogender-schemas", "1c7f8b481ad8a234b41e9f76a424d6e856e13f7f", ("data/",)),
    ),
    "huang2020-sentiment-templates": (
        Source(
            "ewsheng/decoding-biases",
            HUANG_COMMIT,
            ("constants.py",),
            lambda files: huang2020_files(files, HUANG_COMMIT),
        ),
    ),
    "tail-wagging": (
        Source(
            "uclanlp/socialbias-dataset-construction-biases",
            "2204750c6e4092e7987818b544d8898f4cebd4f6",
            ("winogender/data/", "biasnli/scripts/genders.txt", "biasnli/scripts/occupations.txt"),
        ),
    ),
    "biastestgpt": (
        Source("Kaminari84/BiasTestGPT", "15f7524ce450665af0ec6d8d620d96254474642b", BIASTESTGPT_DATA),
        Source(
            "rjiang12/BiasTestGPT",
            "eb6316fbff69866b6a6e92bc344d3b22ddf70fb8",
            ("mgr_biases.py",),
            biastestgpt_space_files,
        ),
    ),
}
# The mirror layout stores these large per-model score files gzip-compressed (see the mirror's SOURCE.md).
GZIP_IN_MIRROR = re.compile(r"^results/\d+words/.*\.csv$")
_KEEP = re.compile(r"\.(csv|csv\.gz|json|tsv|txt|txt\.dev|txt\.test)$|/seed_words$")
# What to set when neither a mirror nor the origin is usable (one line, shown on the terminal by the workflow).
DOWNLOAD_HINT = (
    "set reference_mirror in the config (or --mirror DIR) to a local copy of the reference data, or "
    "UNSTEREO_REFERENCE_ORIGIN to a server with the same archives"
)


def sources_version() -> str:
    """A short digest of the dataset list and pinned commits: a fetched reference with another version is
    incomplete (re-fetched), so adding a dataset reaches existing installs."""
    import hashlib

    desc = [(d, [(s.repo, s.commit, s.keep) for s in srcs]) for d, srcs in REFERENCE_SOURCES.items()]
    return hashlib.sha256(json.dumps(desc).encode()).hexdigest()[:16]


def _mirror_complete(mirror: Path) -> bool:
    return all((mirror / dataset).is_dir() for dataset in REFERENCE_SOURCES)


def _copy_mirror(mirror: Path, target: Path) -> None:
    for dataset in REFERENCE_SOURCES:
        shutil.copytree(mirror / dataset, target / dataset, ignore=shutil.ignore_patterns("SOURCE.md"))


def _archive_files(archive: Path, src: Source) -> dict[str, bytes]:
    """The kept files of a repository archive (top folder stripped): path in the repository -> bytes."""
    out = {}
    with tarfile.open(archive) as tf:
        for member in tf.getmembers():
            rel = member.name.split("/", 1)[-1]
            if not member.isfile() or not any(rel.startswith(p) for p in src.keep):
                continue
            if src.derive is None and not _KEEP.search(rel):
                continue
            out[rel] = tf.extractfile(member).read()  # type: ignore[union-attr]
    return out


def _write_dataset(files: dict[str, bytes], dataset: str, target: Path) -> None:
    for rel, data in files.items():
        out = target / dataset / rel
        out.parent.mkdir(parents=True, exist_ok=True)
        if GZIP_IN_MIRROR.match(rel):
            out = out.with_name(out.name + ".gz")
            data = gzip.compress(data, compresslevel=9, mtime=0)
        out.write_bytes(data)


def _download_reference(target: Path, origin: str | None) -> None:
    for dataset, sources in REFERENCE_SOURCES.items():
        for src in sources:
            with tempfile.TemporaryDirectory() as tmp:
                archive = download(
                    archive_url(src.repo, src.commit, origin),
                    Path(tmp) / "src.tar.gz",
                    "reference",
                    DOWNLOAD_HINT,
                )
                files = _archive_files(archive, src)
            if src.derive is not None:
                missing = [p for p in src.keep if p not in files]
                if missing:
                    raise ResourceError(
                        f"resource 'reference': {src.repo}@{src.commit} has no {', '.join(missing)}"
                    )
                files = src.derive(files)
            _write_dataset(files, dataset, target)


def build_reference(target: Path, opts: dict) -> None:
    """Copy the reference data from the mirror when it has every dataset; otherwise download it."""
    mirror = opts.get("mirror")
    if mirror is not None and _mirror_complete(Path(mirror)):
        _copy_mirror(Path(mirror), target)
        return
    if mirror is not None:
        log.warning(
            "reference mirror %s is missing or incomplete (needs %s); downloading from %s instead",
            mirror,
            ", ".join(f"{d}/" for d in REFERENCE_SOURCES),
            reference_origin(opts.get("origin")),
        )
    _download_reference(target, opts.get("origin"))
