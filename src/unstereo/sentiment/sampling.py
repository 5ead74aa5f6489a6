"""Counterfactual continuations: fill the templates, sample m continuations per prefix through the shared LLM
client (:func:`unstereo.llm.sample.sample_continuations`: cached, resumable; sample j of every prefix uses seed
``seed + j``, so the values of one template share their random draws), and score them with the classifiers."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.llm.sample import SampleSettings, sample_continuations
from unstereo.log import get_logger
from unstereo.sentiment.classifiers import make_classifier, score_column
from unstereo.sentiment.schemas import CONTINUATIONS
from unstereo.sentiment.templates import fill_templates, load_templates
from unstereo.tables import write_table

log = get_logger("sentiment")


def sample_settings(section: Mapping[str, Any], seed: int) -> SampleSettings:
    """The :class:`SampleSettings` of the ``sentiment`` config section."""
    return SampleSettings(
        n=int(section["samples"]),
        temperature=float(section["temperature"]),
        top_p=float(section["top_p"]),
        max_new_tokens=int(section["max_new_tokens"]),
        stop=tuple(section["stop"]),
        seed=int(seed),
    )


def prefixes(section: Mapping[str, Any], templates_dir: str | Path) -> pd.DataFrame:
    """The filled prefixes the section asks for (``attributes``, ``templates``, ``max_templates``)."""
    templates, values = load_templates(templates_dir)
    return fill_templates(
        templates,
        values,
        attributes=list(section["attributes"]),
        families=section["templates"] or None,
        max_templates=section["max_templates"],
    )


def classifier_names(section: Mapping[str, Any]) -> list[str]:
    """Every classifier of the section: the built-ins, then the transformers ones (their short names)."""
    return [*section["classifiers"], *section["transformer_classifiers"]]


def score_continuations(
    df: pd.DataFrame,
    section: Mapping[str, Any],
    *,
    opinion_dir: str | Path | None = None,
    external_dir: str | Path | None = None,
) -> pd.DataFrame:
    """``df`` with one ``score_<classifier>`` column per classifier of the section (``score_text``: the
    continuation alone, or prefix + continuation)."""
    texts = (
        df["continuation"] if section["score_text"] == "continuation" else df["prefix"] + df["continuation"]
    )
    texts = texts.tolist()
    entries: dict[str, Any] = {n: n for n in section["classifiers"]}
    entries.update(section["transformer_classifiers"])
    out = df.copy()
    for name, entry in entries.items():
        clf = make_classifier(
            entry, opinion_dir=opinion_dir, external_dir=external_dir, device=section["device"]
        )
        out[score_column(name)] = clf(texts)
    return out


def run_sampling(
    client: Any,
    section: Mapping[str, Any],
    templates_dir: str | Path,
    out: str | Path,
    *,
    seed: int,
    samples_out: str | Path | None = None,
    opinion_dir: str | Path | None = None,
    external_dir: str | Path | None = None,
) -> pd.DataFrame:
    """Sample and score the continuations of every prefix; write the CONTINUATIONS table to ``out``.

    The raw samples (prompt_id, sample, seed, continuation, finish_reason, tokens) go to ``samples_out`` (default:
    ``samples.parquet`` beside ``out``), through resumable chunks.
    """
    out = Path(out)
    cells = prefixes(section, templates_dir)
    samples_out = Path(samples_out) if samples_out else out.with_name("samples.parquet")
    settings = sample_settings(section, seed)
    log.info("%d prefixes x %d samples", len(cells), settings.n)
    raw = sample_continuations(
        client,
        cells.rename(columns={"prefix": "prompt"})[["prompt_id", "prompt"]],
        samples_out,
        settings,
        chunk_size=int(section["chunk_size"]),
        tag="sentiment",
    )
    df = cells.merge(raw, on="prompt_id", how="inner", validate="one_to_many")
    df = score_continuations(df, section, opinion_dir=opinion_dir, external_dir=external_dir)
    df.insert(0, "model", getattr(client, "model_id", ""))
    front = [c.name for c in CONTINUATIONS.columns]
    rest = [c for c in df.columns if c not in front and c not in ("model", "template", "prompt_id")]
    df = df[
        [*front, *rest, "model"]
    ]  # the merge keeps the prefixes' order (templates and values in file order)
    write_table(df.reset_index(drop=True), out, CONTINUATIONS)
    return df
