"""Files the package ships (config schemas, model registry, gendered pairs, prompts), found wherever it is installed.

The repository keeps one copy of each, inside the package: the shared config schemas in ``src/unstereo/config/schemas``
(each method's own schema, rules, conda env and report captions live in its package folder, see
:mod:`unstereo.method_registry`), the data in ``src/unstereo/data``; ``workflow/schemas`` and
``data/{models.csv,gendered_pairs.csv,prompts,prompts-offline}`` are links to them. Config keys that name one of these
files by its repository path (the schema defaults, e.g. ``report.registry: data/models.csv``) resolve to the packaged
copy through :func:`packaged`, so a non-editable install needs no checkout (pyproject.toml's package-data ships them).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

_ROOT = Path(str(files("unstereo")))

#: The shared config schemas (``config.schema.yaml``, ``common``, ``model``) that the methods' own ``$ref``.
SCHEMA_DIR = _ROOT / "config" / "schemas"
DATA_DIR = _ROOT / "data"

# repository path (as config files and schema defaults write it) -> packaged copy
REPO_PATHS: dict[str, Path] = {
    "workflow/schemas": SCHEMA_DIR,
    "data/models.csv": DATA_DIR / "models.csv",
    "data/gendered_pairs.csv": DATA_DIR / "gendered_pairs.csv",
    "data/prompts": DATA_DIR / "prompts",
    "data/prompts-offline": DATA_DIR / "prompts-offline",
}


def packaged(path: str | Path) -> Path:
    """``path`` itself, unless it is missing and is the repository path of a packaged file: then the packaged copy.

    (A checkout links those paths to the packaged copies; an installed package run elsewhere has no such files.)
    """
    path = Path(path)
    if path.exists():
        return path
    return REPO_PATHS.get(path.as_posix().removeprefix("./").rstrip("/"), path)


def repo_path(path: str | Path, basedir: str | Path) -> str:
    """A config path as the workflow reads it: relative to the working directory if it exists there, else to the
    workflow's directory (so `snakemake --directory elsewhere` still finds data/paper/*), else the packaged copy
    (data/models.csv, data/gendered_pairs.csv, data/prompts)."""
    p = Path(path)
    if p.is_absolute() or p.exists():
        return str(p)
    if (Path(basedir) / p).exists():
        return str(Path(basedir) / p)
    return str(packaged(p))
