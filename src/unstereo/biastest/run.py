"""The biastest stage end to end: the config section, pair tables per specification, the run summary and page."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.biastest.pairs import balanced_sample, released_pairs, released_template_pairs, template_pairs
from unstereo.biastest.schemas import COMPARISON, PAIRS, SCORES, SUMMARY
from unstereo.biastest.spec import (
    CORE_TAGS,
    HEALTH_TAGS,
    BiasSpec,
    load_spec_file,
    release_aliases,
    resolve_specs,
)
from unstereo.biastest.stats import compare, stereotyped, summarize
from unstereo.errors import ConfigError, InputError
from unstereo.io import write_text
from unstereo.log import get_logger
from unstereo.tables import read_table, validate, write_table

log = get_logger("biastest")

SPEC_FILE_SUFFIXES = (".yaml", ".yml", ".json")


def load_section(section: dict[str, Any] | None = None) -> dict[str, Any]:
    """Validate a ``biastest`` section (a copy) and fill in every default; errors name ``biastest.<key>``."""
    from unstereo import config

    return config.load_section("biastest", section)


def is_spec_file(entry: str) -> bool:
    return Path(entry).suffix.lower() in SPEC_FILE_SUFFIXES


def spec_entries(entries: list[str]) -> dict[str, str]:
    """Specification name -> the entry that gives it (a release name, or the file), without reading the release
    (so the workflow knows its jobs before the reference data is fetched). Unknown names are a ConfigError."""
    aliases = release_aliases()
    known = {*CORE_TAGS.values(), *HEALTH_TAGS.values()}
    out: dict[str, str] = {}
    for i, entry in enumerate(entries):
        if entry in ("core", "health"):
            names = list((CORE_TAGS if entry == "core" else HEALTH_TAGS).values())
        elif is_spec_file(entry):
            names = [s.name for s in load_spec_file(entry)]
        else:
            name = aliases.get(entry, entry)
            if name not in known:
                raise ConfigError(
                    f"{entry!r} is neither a release specification ({sorted(known)}), core, health, nor a "
                    f"{'/'.join(SPEC_FILE_SUFFIXES)} file",
                    key=f"biastest.specs[{i}]",
                )
            names = [name]
        for name in names:
            if name in out:
                raise ConfigError(f"specification {name!r} given twice", key=f"biastest.specs[{i}]")
            out[name] = entry if is_spec_file(entry) else name
    return out


def get_spec(entry: str, name: str, reference_dir: str | Path | None) -> BiasSpec:
    """The specification ``name`` from ``entry`` (a file or a release name)."""
    specs = load_spec_file(entry) if is_spec_file(entry) else resolve_specs([entry], reference_dir)
    for s in specs:
        if s.name == name:
            return s
    raise InputError(f"no specification named {name!r} in {entry}")


def spec_overrides(section: dict[str, Any], name: str) -> dict[str, Any]:
    """Dotted section key -> value that specification ``name``'s entry of ``per_spec`` sets (``released.runs``,
    ``max_pairs_per_spec``; a null cap included); empty when it has none."""
    entry = (section.get("per_spec") or {}).get(name) or {}
    out = {f"released.{k}": v for k, v in (entry.get("released") or {}).items()}
    out.update({k: v for k, v in entry.items() if k != "released"})
    return out


def spec_section(section: dict[str, Any], name: str) -> dict[str, Any]:
    """The section as specification ``name``'s pairs see it: its ``per_spec`` entry over the section's keys, and
    no ``per_spec`` (so that the pairs job of one specification depends on its own entry only). A copy."""
    out = {k: v for k, v in section.items() if k != "per_spec"}
    for path, value in spec_overrides(section, name).items():
        head, _, key = path.rpartition(".")
        if head:
            out[head] = {**(out.get(head) or {}), key: value}
        else:
            out[key] = value
    return out


def build_pairs(
    spec: BiasSpec,
    *,
    sources: list[str],
    reference_dir: str | Path | None,
    release: bool,
    generated: str | Path | None = None,
    template: str = "release",
    generator: str = "gpt-3.5",
    runs: tuple[int, ...] = (1, 2, 3, 4, 5),
    max_pairs: int | None = None,
    seed: int = 0,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """The pair table of ``spec``: generated pairs (a file), the release's pairs, the template baseline; each
    source sub-sampled to ``max_pairs`` (attribute terms balanced). ``release``: ``spec`` is one of the release's
    (a user specification has no released pairs and gets the templates of its own file). ``reference_quirks``:
    the release's pairs as the authors' script builds them (:func:`~unstereo.biastest.pairs.released_pairs`)."""
    parts = []
    if generated is not None:
        parts.append(read_table(generated, PAIRS))
    for source in sources:
        if source == "released":
            if not release:
                log.warning(
                    "%s: a user specification has no released pairs; source `released` skipped", spec.name
                )
                continue
            parts.append(released_pairs(reference_dir, spec.name, generator, tuple(runs), reference_quirks))
        elif source == "template":
            if template == "release" and release:
                parts.append(released_template_pairs(reference_dir, spec.name))
            else:
                parts.append(template_pairs(spec))
        else:
            raise ConfigError(f"unknown pair source {source!r}", key="biastest.sources")
    parts = [balanced_sample(p, max_pairs, seed) for p in parts if len(p)]
    if not parts:
        raise InputError(f"{spec.name}: no pairs from any source")
    return validate(pd.concat(parts, ignore_index=True), PAIRS)


def summarize_run(
    pairs_files: list[str | Path],
    scores_files: list[str | Path],
    out_dir: str | Path,
    *,
    rounds: int = 30,
    per_attribute: int = 4,
    seed: int = 0,
    page: str | Path | None = None,
    meta: dict | None = None,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """Judge every scored pair, write ``summary.parquet``, ``comparison.parquet``, ``sentences.parquet``,
    ``summary.html`` (a table for the workflow report), ``stereotype_score.png`` into ``out_dir`` and the
    inspection page (``page``, default ``out_dir/page.html``); return the summary. ``reference_quirks``: the
    released pairs were built with the authors' texts (recorded in the report table and the page)."""
    pairs = pd.concat([read_table(p, PAIRS) for p in pairs_files], ignore_index=True)
    judged_parts = []
    for path in scores_files:
        scores = read_table(path, SCORES)
        if "model" not in scores.columns:
            raise InputError("scores table has no `model` column", path=path)
        ids = set(scores["pair_id"])
        unknown = sorted(ids - set(pairs["pair_id"]))
        if unknown:
            raise InputError(
                f"{len(unknown)} scored pair(s) are in no pairs table, e.g. {unknown[:3]}", path=path
            )
        sub = pairs[pairs["pair_id"].isin(ids)]
        j = stereotyped(sub, scores)
        extra = [c for c in ("logp_a", "logp_b", "model", "score_kind") if c in scores.columns]
        j = j.merge(scores[["pair_id", *extra]], on="pair_id", how="left")
        judged_parts.append(j)
    if not judged_parts:
        raise InputError("no scores to summarize")
    judged = pd.concat(judged_parts, ignore_index=True)
    summary, boot = summarize(judged, rounds, per_attribute, seed)
    comparison = compare(boot)
    out = Path(out_dir)
    write_table(summary, out / "summary.parquet", SUMMARY)
    write_table(comparison, out / "comparison.parquet", COMPARISON)
    write_table(judged, out / "sentences.parquet")
    write_text(out / "summary.html", report_table(summary, comparison, reference_quirks))
    from unstereo.biastest.figure import plot_scores

    plot_scores(summary, out / "stereotype_score.png")
    from unstereo.biastest.page import write_page

    write_page(page or out / "page.html", summary, judged, comparison,
               meta={"pairs": int(len(judged)), "bootstrap rounds": rounds, "per attribute": per_attribute,
                     "seed": seed, "scorer": ", ".join(sorted(set(summary["scorer"].dropna()))) or "unknown",
                     "released texts": TEXTS_NOTE[bool(reference_quirks)], **(meta or {})})  # fmt: skip
    return summary


# The sample rule of the authors' app (_constructInterpretationMsg): fewer than 20 sentences, or fewer than the
# specification's attribute terms, and it recommends generating more for a robust estimate.
MIN_PAIRS = 20
TEXTS_NOTE = {
    False: "the released full sentences (sent_att_1 / sent_att_2)",
    True: "the authors' texts: the template with [T] filled and [R] left literal (reference_quirks)",
}
SCORER_NOTE = {
    "causal-mean": "causal LMs by the mean token log-prob (the paper's mean NLL)",
    "causal-sum": "causal LMs by the summed log-prob",
    "masked-biastestgpt": "masked LMs by the authors' score, the group term's mean raw logit at one [MASK]",
    "masked-pll": "masked LMs by pseudo-log-likelihood (Salazar et al. 2020)",
    "masked-crows-pairs": "masked LMs by the CrowS-Pairs score (Nangia et al. 2020)",
    "masked-aul": "masked LMs by All Unmasked Likelihood (Kaneko and Bollegala 2022)",
}


def small_samples(summary: pd.DataFrame, minimum: int = MIN_PAIRS) -> pd.DataFrame:
    """The whole-specification rows with fewer than ``minimum`` pairs or fewer pairs than attribute terms."""
    whole = summary[summary["attribute"] == "*"]
    terms = summary[summary["attribute"] != "*"].groupby(["model", "spec", "source"]).size()
    n_terms = [terms.get((m, s, o), 0) for m, s, o in zip(whole.model, whole.spec, whole.source, strict=True)]
    return whole[(whole["n"] < minimum) | (whole["n"] < n_terms)]


def convention_note(summary: pd.DataFrame, reference_quirks: bool) -> str:
    """One sentence: which texts and which scorer, where the authors' code and the paper's peers differ."""
    kinds = sorted({k for v in summary["scorer"].dropna() for k in v.split(",")})
    scorers = "; ".join(SCORER_NOTE.get(k, k) for k in kinds) or "unknown scorer"
    return f"Convention: released pairs are scored on {TEXTS_NOTE[bool(reference_quirks)]}; {scorers}."


def report_table(summary: pd.DataFrame, comparison: pd.DataFrame, reference_quirks: bool = False) -> str:
    """A small HTML table (whole specifications) for the Snakemake report, with the convention sentence and a
    warning for specifications with too few pairs for their interval to mean anything."""
    import html

    whole = summary[summary["attribute"] == "*"].copy()
    whole = whole.merge(
        comparison[["model", "spec", "source", "p"]], on=["model", "spec", "source"], how="left"
    )
    whole["stereotype_score"] = whole["stereotype_score"].round(1)
    whole["95% interval"] = [
        f"[{lo:.1f}, {hi:.1f}]" for lo, hi in zip(whole.ci_low, whole.ci_high, strict=True)
    ]
    whole["p vs template"] = [("" if pd.isna(p) else f"{p:.1e}") for p in whole["p"]]
    cols = ["model", "spec", "source", "n", "stereotype_score", "95% interval", "p vs template", "scorer"]
    body = whole[cols].to_html(index=False, border=0, classes="biastest")
    small = small_samples(summary)
    warning = ""
    if len(small):
        names = ", ".join(
            f"{m} / {s} / {o} ({n})"
            for m, s, o, n in zip(small.model, small.spec, small.source, small.n, strict=True)
        )
        warning = (
            f"<p class='warning'><b>Warning:</b> fewer than {MIN_PAIRS} pairs (or fewer pairs than attribute "
            f"terms) for {html.escape(names)}: too few for the interval to mean anything (the authors' app "
            "recommends generating more sentences below this).</p>"
        )
    return (
        "<!DOCTYPE html><html><head><meta charset='utf-8'><title>BiasTestGPT Stereotype Score</title><style>"
        "body{font-family:sans-serif;font-size:13px}td,th{padding:2px 8px;border-bottom:1px solid #ddd}"
        ".warning{color:#a40}</style></head><body><h3>Stereotype Score (%) per model, specification and source</h3>"
        f"{body}<p>50 = no preference; interval: 2.5-97.5 percentiles of the bootstrap rounds; p: t-test of the "
        f"bootstrap estimates against the template baseline.</p><p>{html.escape(convention_note(summary, reference_quirks))}"
        f"</p>{warning}</body></html>"
    )
