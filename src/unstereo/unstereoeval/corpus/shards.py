"""Shards of the corpus stage: config ``corpus.inputs`` -> {shard name: file}, used by
src/unstereo/unstereoeval/corpus/rules.smk.

An input is a path, or ``resource:NAME/FILE`` for a file of an offline resource (e.g. the demo corpus), which
makes the rule depend on that resource's manifest. The shard name is the file name without its corpus extension
(``00.jsonl.zst`` -> ``00``); names must be unique.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from unstereo.errors import ConfigError

EXTENSIONS = (".jsonl.zst", ".json.zst", ".jsonl", ".txt")


@dataclass(frozen=True)
class Shard:
    name: str
    path: str
    resource: str | None  # resource the file belongs to, if any


def shard_name(path: str) -> str:
    name = Path(path).name
    for ext in EXTENSIONS:
        if name.endswith(ext):
            name = name[: -len(ext)]
            break
    else:
        raise ConfigError(f"{path!r} is not a .jsonl, .jsonl.zst or .txt file", key="corpus.inputs")
    return re.sub(r"[^A-Za-z0-9_.-]", "_", name)


def shards(inputs: list[str], external_dir: str) -> dict[str, Shard]:
    """Shard table of the config's inputs (order kept)."""
    out: dict[str, Shard] = {}
    for item in inputs:
        resource = None
        path = item
        if item.startswith("resource:"):
            rest = item[len("resource:") :]
            resource, _, rel = rest.partition("/")
            if not resource or not rel:
                raise ConfigError(f"{item!r}: write resource:NAME/FILE", key="corpus.inputs")
            path = f"{external_dir}/{resource}/{rel}"
        name = shard_name(path)
        if name in out:
            raise ConfigError(
                f"two inputs give the shard name {name!r}; rename one file", key="corpus.inputs"
            )
        out[name] = Shard(name, path, resource)
    if not out:
        raise ConfigError("no inputs", key="corpus.inputs")
    return out


def shard_inputs(shard: Shard, external_dir: str) -> dict[str, str]:
    """Rule inputs of a count job: the file; for a resource file, only the resource manifest (the file is nobody's
    output before the fetch, and an input set that changed once it exists would make Snakemake rerun the job)."""
    from unstereo.resources.core import MANIFEST

    if shard.resource is None:
        return {"shard": shard.path}
    return {"manifest": f"{external_dir}/{shard.resource}/{MANIFEST}"}


def shard_size_mb(shard: Shard) -> float:
    """Size of the shard's file in MB (0 before a resource is fetched), for the job's memory and time."""
    path = Path(shard.path)
    return path.stat().st_size / 1e6 if path.exists() else 0.0


def count_mem_mb(size_mb: float, spill_types: int, spill_rows: int) -> int:
    """Memory (MB) a count job requests for a shard of ``size_mb`` on disk: 1,500 + 2 per MB, capped at 5,500 or,
    when the spill limits are raised, at what a run held to them can use (600 MB plus 150 bytes a word and 60 a
    co-occurrence row; measured on a 5 GB synthetic file: 1,768 MB peak at the default 2M / 20M limits, 2,064 MB
    with 3M / 40M and no spill), so that raising the limits does not get the job killed for its memory."""
    cap = max(5_500, 600 + (150 * int(spill_types) + 60 * int(spill_rows)) // 1_000_000)
    return int(min(cap, 1_500 + 2 * int(size_mb)))


def merge_mem_mb(rows_per_partition: int) -> int:
    """Memory (MB) the merge requests: bounded by the rows it sums at once (a partition), not by the corpus: 1,000
    plus 400 per million rows (measured on 4 synthetic 1.25 GB shards' runs at 5M rows: ~850 MB peak)."""
    return 1_000 + 400 * max(1, int(rows_per_partition)) // 1_000_000
