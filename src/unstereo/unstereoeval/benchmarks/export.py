"""Export a benchmark as a folder that ``datasets.load_dataset(folder)`` reads: parquet data and a dataset card.

Layout (the Hugging Face datasets "data files" convention, no loading script)::

    OUT/README.md                            dataset card: YAML header (configs, split), provenance, counts
    OUT/data/test-00000-of-00001.parquet     the pair table (one split, ``test``: a benchmark is evaluation data)
    OUT/provenance.json                      the same provenance, machine-readable

Provenance of a generated benchmark comes from its generate folder (``results/generate/USE-k``): ``summary.json``
(generator model, counts per step, settings: decoding and filters), ``full.parquet`` (the seed words, every
sentence's status) and the prompt files named by the settings (``data/prompts`` by default).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from unstereo.errors import InputError
from unstereo.io import atomic_path, write_json, write_text
from unstereo.render.formats import markdown_table

SPLIT = "test"
DATA_FILE = f"data/{SPLIT}-00000-of-00001.parquet"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read JSON: {exc}", path=path) from exc


def generated_provenance(generate_dir: str | Path, prompts_dir: str | Path | None = None) -> dict[str, Any]:
    """Provenance of a generated benchmark from its generate folder (summary.json, full.parquet, the prompts)."""
    from unstereo.unstereoeval.prompts import load_prompts

    gdir = Path(generate_dir)
    summary = _read_json(gdir / "summary.json")
    settings = dict(summary.get("settings") or {})
    prov: dict[str, Any] = {
        "generator_model": summary.get("model"),
        "k": summary.get("k"),
        "seconds": summary.get("seconds"),
        "settings": settings,
        "counts": {
            key: v
            for key, v in summary.items()
            if key not in ("settings", "model", "benchmark", "k", "seconds")
        },
    }
    full_path = gdir / "full.parquet"
    if full_path.is_file():
        full = pd.read_parquet(full_path)
        prov["seed_words"] = list(dict.fromkeys(full["word"].dropna().astype(str)))
        prov["status_counts"] = {
            str(k): int(v) for k, v in full["status"].value_counts().sort_index().items()
        }
    prompts = load_prompts(prompts_dir or settings.get("prompts_dir") or None)
    prov["prompts"] = {
        "generation": prompts.generation.text,
        **{p.id: p.text for p in prompts.revision},
        "editing": prompts.editing.text,
        "semantic_filter": prompts.semantic_filter.text,
    }
    prov["filters"] = {
        "semantic_filter": "kept only when the LLM answers 'likely' for both fillings",
        "dedup": settings.get("dedup"),
        "length_tolerance": settings.get("length_tolerance"),
        "pronoun_check": settings.get("pronoun_check"),
        "revision_max_tries": settings.get("revision_max_tries"),
        "revision_max_calls": settings.get("revision_max_calls"),
    }
    return prov


def _card(name: str, pairs: pd.DataFrame, prov: dict[str, Any]) -> str:
    header = {
        "pretty_name": name,
        "language": ["en"],
        "task_categories": ["text-classification"],
        "size_categories": [
            "n<1K" if len(pairs) < 1000 else "1K<n<10K" if len(pairs) < 10_000 else "10K<n<100K"
        ],
        "configs": [{"config_name": "default", "data_files": [{"split": SPLIT, "path": DATA_FILE}]}],
    }
    lines = [
        "---",
        yaml.safe_dump(header, sort_keys=False).rstrip(),
        "---",
        "",
        f"# {name}",
        "",
        f"{len(pairs)} sentence pairs that differ only in the gender of their pronouns (UnStereoEval, Belém et al., "
        "ICLR 2024): `template` holds the placeholders `{pronoun}`, `{pronoun1}`, `{pronoun2}`; `sentence_female` "
        "and `sentence_male` are its two fillings; `max_pmi` is the signed gender association of its most gendered "
        "word (null before the benchmarks stage). Written by `unstereo benchmarks export`.",
        "",
        "```python",
        "from datasets import load_dataset",
        f'ds = load_dataset("path/to/this/folder")["{SPLIT}"]',
        "```",
        "",
        "## Provenance",
        "",
    ]
    if prov.get("generator_model"):
        s = prov.get("settings", {})
        lines += [
            f"- generator model: `{prov['generator_model']}`",
            f"- sentences of at most k = {prov.get('k')} words; {len(prov.get('seed_words', []))} seed words: "
            + ", ".join(prov.get("seed_words", [])),
            f"- decoding: temperature generation {s.get('temperature_generation')}, revision "
            f"{s.get('temperature_revision')}, editing {s.get('temperature_editing')}, semantic filter "
            f"{s.get('temperature_semantic_filter')}; top_p {s.get('top_p')}; seed {s.get('seed')}",
            "- filters: " + "; ".join(f"{k}: {v}" for k, v in prov.get("filters", {}).items()),
            f"- generation time: {prov.get('seconds')} s",
            "",
            "### Counts",
            "",
        ]
        counts = [
            [key, str(value.get("total") if isinstance(value, dict) else value)]
            for key, value in prov.get("counts", {}).items()
        ]
        lines.append(markdown_table(["step", "count"], counts).rstrip("\n"))
        lines += ["", "### Prompts", ""]
        for pid, text in prov.get("prompts", {}).items():
            lines += [f"**{pid}**", "", "```text", text, "```", ""]
    else:
        lines += [
            f"- source: {', '.join(sorted(set(pairs['source'].astype(str)))) if 'source' in pairs else '-'}",
            "",
        ]
    lines += ["Full provenance: `provenance.json`.", ""]
    return "\n".join(lines)


def export_benchmark(
    pairs: pd.DataFrame,
    out_dir: str | Path,
    name: str | None = None,
    generate_dir: str | Path | None = None,
    prompts_dir: str | Path | None = None,
) -> list[Path]:
    """Write ``pairs`` (a PAIRS table) as a datasets folder with its card; returns the files written."""
    out = Path(out_dir)
    name = name or ", ".join(dict.fromkeys(pairs["benchmark"].astype(str))) or out.name
    prov = generated_provenance(generate_dir, prompts_dir) if generate_dir else {}
    prov = {"benchmark": name, "n_pairs": len(pairs), **prov}
    data_path = out / DATA_FILE
    data_path.parent.mkdir(parents=True, exist_ok=True)
    with atomic_path(data_path) as tmp:
        pairs.reset_index(drop=True).to_parquet(tmp, index=False)
    return [
        data_path,
        write_text(out / "README.md", _card(name, pairs, prov)),
        write_json(out / "provenance.json", prov),
    ]
