"""The corpus package's modules import each other without a cycle (merge.py and runs.py once did, both ways), and
each one imports on its own."""

from __future__ import annotations

import ast
import graphlib
import importlib
import subprocess
import sys
from pathlib import Path

import pytest

import unstereo.unstereoeval.corpus

CORPUS = Path(unstereo.unstereoeval.corpus.__file__).parent
MODULES = sorted(p.stem for p in CORPUS.glob("*.py") if p.stem != "__init__")


def corpus_imports(source: str) -> set[str]:
    """The corpus modules ``source`` (a module of unstereo.unstereoeval.corpus) imports, at module level or inside a function:
    ``from .x import y``, ``from . import x``, ``from unstereo.unstereoeval.corpus.x import y``, ``import unstereo.unstereoeval.corpus.x``."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                names = [node.module] if node.module else [a.name for a in node.names]
            elif node.level == 0 and (node.module or "").startswith("unstereo.unstereoeval.corpus"):
                rest = node.module.removeprefix("unstereo.unstereoeval.corpus").lstrip(".")
                names = [rest] if rest else [a.name for a in node.names]
            else:
                continue
        elif isinstance(node, ast.Import):
            names = [
                a.name.removeprefix("unstereo.unstereoeval.corpus.")
                for a in node.names
                if a.name.startswith("unstereo.unstereoeval.corpus.")
            ]
        else:
            continue
        found.update(n.split(".")[0] for n in names)
    return found


def corpus_graph() -> dict[str, set[str]]:
    """Corpus module -> the corpus modules it imports."""
    return {
        m: corpus_imports((CORPUS / f"{m}.py").read_text(encoding="utf-8")) & set(MODULES) for m in MODULES
    }


def test_corpus_imports_by_hand():
    source = (
        "from . import tokenize as tk\n"
        "from .parts import UNI\n"
        "from ..errors import InputError\n"  # another stage: not a corpus module
        "import numpy as np\n"
        "def f():\n"
        "    from .runs import merge_runs\n"  # inside a function counts too
        "    from unstereo.unstereoeval.corpus.merge import x\n"
        "    import unstereo.unstereoeval.corpus.shards\n"
    )
    assert corpus_imports(source) == {"tokenize", "parts", "runs", "merge", "shards"}


def test_cycle_is_found():
    """The check itself: merge <-> runs, as it was, is a cycle."""
    with pytest.raises(graphlib.CycleError):
        tuple(graphlib.TopologicalSorter({"merge": {"runs"}, "runs": {"merge", "parts"}}).static_order())


def test_no_import_cycle_between_corpus_modules():
    graph = corpus_graph()
    assert {"merge", "runs", "parts", "count"} <= graph.keys()
    assert "parts" in graph["merge"] and "parts" in graph["runs"] and "runs" in graph["merge"]
    try:
        order = tuple(graphlib.TopologicalSorter(graph).static_order())
    except graphlib.CycleError as exc:
        pytest.fail(f"corpus modules import each other in a cycle: {' -> '.join(exc.args[1])}")
    assert set(order) == set(MODULES)


@pytest.mark.parametrize("module", MODULES)
def test_each_corpus_module_imports(module):
    assert importlib.import_module(f"unstereo.unstereoeval.corpus.{module}").__doc__


def test_corpus_modules_import_and_count_without_numba(tmp_path):
    """The core install has no numba: every corpus module still imports (the kernels stay plain functions) and a
    count and a partitioned merge run on the numpy path (in a fresh interpreter where numba cannot be imported)."""
    (tmp_path / "a.jsonl").write_text('{"text": "She saw him. He saw her."}\n{"text": "she"}\n')
    script = f"""
import importlib, sys
class NoNumba:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in ("numba", "llvmlite"):
            raise ImportError("numba is not installed")
sys.meta_path.insert(0, NoNumba())
for m in {MODULES!r}:
    importlib.import_module("unstereo.unstereoeval.corpus." + m)
from unstereo.unstereoeval.corpus import jit
from unstereo.unstereoeval.corpus.count import count_files
from unstereo.unstereoeval.corpus.merge import merge_count_dirs, read_counts
d = {str(tmp_path)!r}
meta = count_files([d + "/a.jsonl"], d + "/c", ["he", "she"], ["saw"], window=2)
merge_count_dirs([d + "/c", d + "/c"], d + "/m", partitions=3)
uni, co, _ = read_counts(d + "/m")
print(jit.AVAILABLE, meta["accelerator"], sorted(zip(uni["word"], uni["count"])))
"""
    out = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=300
    ).stdout
    # tokens without the stop word "saw": she him he her / she; the merge sums the directory with itself (its
    # parts are each sorted, not the whole table: hence sorted here)
    assert out.split("\n")[-2] == "False numpy [('he', 2), ('her', 2), ('him', 2), ('she', 4)]"
