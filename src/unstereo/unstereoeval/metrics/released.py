"""Ingest the released per-model score files of UnStereoEval into the project's SCORES table.

Layout (``reference/unstereo-eval/results/``): ``{5words,10words,20words}/revised_templates__scores__<tag>.csv[.gz]``
(all rows of ``data/datasets/raw/USE-*.csv``, before the naturalness filter), ``Winobias/coref__Winobias__templates.
{dev,test}__scores__<tag>.csv`` and ``Winogender/coref__Winogender__templates__scores__<tag>.csv``. Columns used:
``F_logprob, M_logprob, F_num_tokens, M_num_tokens, F_template, M_template, model`` (+ ``is_natural``, ``example_id``).

pair ids follow the project convention: ``USE-5:{row}`` (row position = index of the raw file), ``Winobias:dev:{row}``,
``Winobias:test:{row}``, ``Winogender:{example_id}``. The released log-probs were computed on the strings of
docs/methods.md#quirk-1-capitalize (kept as ``sentence_female`` / ``sentence_male``) in batches of 16
(docs/methods.md#quirk-3-batch-dependent-scores).
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.tables import SCORES, validate

log = get_logger("unstereoeval.metrics.released")

BENCHMARK_DIRS = {
    "USE-5": "5words",
    "USE-10": "10words",
    "USE-20": "20words",
    "Winobias": "Winobias",
    "Winogender": "Winogender",
}

_USED = ["F_logprob", "M_logprob", "F_num_tokens", "M_num_tokens", "F_template", "M_template", "model"]


def default_model_id(reference_name: str) -> str:
    """The released files write hub ids with ``/`` as ``__`` (``EleutherAI__gpt-j-6b`` -> ``EleutherAI/gpt-j-6b``)."""
    return reference_name.replace("__", "/")


def _files(results_dir: Path, benchmark: str) -> list[tuple[str | None, Path]]:
    """(split, path) of every per-model score file of ``benchmark``; split is dev/test for Winobias."""
    folder = results_dir / BENCHMARK_DIRS[benchmark]
    if not folder.is_dir():
        raise InputError(f"no folder {BENCHMARK_DIRS[benchmark]}/ with released scores", path=results_dir)
    found = []
    for path in sorted(folder.iterdir()):
        if not re.search(r"__scores__.+\.csv(\.gz)?$", path.name):
            continue
        split = None
        if benchmark == "Winobias":
            m = re.search(r"templates\.(dev|test)__scores__", path.name)
            if not m:
                raise InputError("Winobias score file name lacks .dev/.test", path=path)
            split = m.group(1)
        found.append((split, path))
    if not found:
        raise InputError(f"no released score files for {benchmark}", path=folder)
    return found


def read_released_file(
    path: Path, benchmark: str, split: str | None = None, name_map: dict[str, str] | None = None
) -> pd.DataFrame:
    """One released per-model file as SCORES rows (plus sentences, reference model name, source file)."""
    try:
        raw = pd.read_csv(path, keep_default_na=False, na_values=[""])
    except Exception as exc:  # pandas errors do not always name the file
        raise InputError(f"cannot read released scores: {exc}", path=path) from exc
    missing = [c for c in _USED if c not in raw.columns]
    if missing:
        raise InputError(f"released score file lacks column(s) {missing}", path=path)
    names = raw["model"].unique()
    if len(names) != 1:
        raise InputError(f"expected one model per file, found {list(names)}", path=path)
    ref_name = str(names[0])
    model = (name_map or {}).get(ref_name, default_model_id(ref_name))
    if benchmark == "Winogender":
        ids = "Winogender:" + raw["example_id"].astype(str)
    elif benchmark == "Winobias":
        ids = pd.Series([f"Winobias:{split}:{i}" for i in range(len(raw))])
    else:
        ids = pd.Series([f"{benchmark}:{i}" for i in range(len(raw))])
    bad = raw[["F_logprob", "M_logprob"]].isna().any(axis=1)
    if bad.any():
        row = int(bad.to_numpy().nonzero()[0][0])
        raise InputError("missing log-probability", path=path, line=row + 2)  # +1 header, +1 for 1-based
    out = pd.DataFrame(
        {
            "pair_id": ids.to_numpy(),
            "model": model,
            "logp_female": raw["F_logprob"].astype(float).to_numpy(),
            "logp_male": raw["M_logprob"].astype(float).to_numpy(),
            "ntok_female": raw["F_num_tokens"].astype("int64").to_numpy(),
            "ntok_male": raw["M_num_tokens"].astype("int64").to_numpy(),
            "sentence_female": raw["F_template"].astype(str).to_numpy(),
            "sentence_male": raw["M_template"].astype(str).to_numpy(),
            "template": raw["template"].astype(str).to_numpy() if "template" in raw.columns else None,
            "reference_model": ref_name,
            "source": f"released:{BENCHMARK_DIRS[benchmark]}/{path.name}",
        }
    )
    if "is_natural" in raw.columns:
        out["is_natural"] = raw["is_natural"].astype(bool).to_numpy()
    return out


def ingest_released(
    results_dir: str | Path, benchmark: str, name_map: dict[str, str] | None = None
) -> pd.DataFrame:
    """All released per-model scores of ``benchmark`` ("USE-5", ..., "Winogender") as one SCORES table.

    ``results_dir`` is ``.../unstereo-eval/results``; ``name_map`` maps the files' model names to model ids
    (default: ``__`` -> ``/``).
    """
    if benchmark not in BENCHMARK_DIRS:
        raise InputError(f"unknown released benchmark {benchmark!r}; known: {sorted(BENCHMARK_DIRS)}")
    results_dir = Path(results_dir)
    parts = [read_released_file(p, benchmark, split, name_map) for split, p in _files(results_dir, benchmark)]
    table = pd.concat(parts, ignore_index=True)
    log.info(
        "%s: %d score rows of %d models from %d files",
        benchmark,
        len(table),
        table["model"].nunique(),
        len(parts),
    )
    return validate(table, SCORES, source=results_dir / BENCHMARK_DIRS[benchmark])
