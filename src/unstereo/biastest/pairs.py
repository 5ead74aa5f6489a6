"""Sentence pairs of a bias specification: manual templates, the release's pairs, balanced sub-sampling.

Every table here follows :data:`unstereo.biastest.schemas.PAIRS`. In pairs built by this project sentence ``a`` holds
the first group's term; the stereotype is ``a`` for an attribute of the first set and ``b`` for one of the second.
Release pairs keep the release's order and its ``label_1`` (stereotype / anti-stereotype of ``sent_att_1``).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.biastest.schemas import PAIRS
from unstereo.biastest.spec import BiasSpec, core_spec_names
from unstereo.errors import InputError
from unstereo.tables import validate

# The release's generated pairs: generator -> (folder under gen_pairs_csv, file name with {run}).
RELEASED = {
    "gpt-3.5": ("gpt-3.5", "similarity-gpt-3.5-temp-0.8-shots-5-{run}_pairs.csv"),
    "megatron": ("nvidia-megatron-530b", "nvidia-temp-0.8-shots-5-{run}_pairs.csv"),
}
RUNS = (1, 2, 3, 4, 5)
# The release's manual-template baselines (core specifications; health ones from the two smaller files).
TEMPLATE_FILES = (
    "templates/gen_pairs_csv/bias_specs_with_pairs.csv",
    "templates/_lit_gen_pairs_csv/custom_biases_spec.json_pairs.csv",
    "templates/_chgpt_gen_pairs_csv/chat_gpt_biases_pairs.csv",
)
COLUMNS = PAIRS.names


def counterpart(spec: BiasSpec, term: str) -> tuple[int, str]:
    """(group index of ``term``, the other group's term at the same position, cycling over a shorter list)."""
    for k, terms in enumerate(spec.group_terms):
        if term in terms:
            other = spec.group_terms[1 - k]
            return k, other[terms.index(term) % len(other)]
    raise KeyError(f"{term!r} is not a group term of {spec.name}")


def stereotype_side(spec: BiasSpec, attribute: str, group_a: int) -> str:
    """``a`` when the sentence with a term of group ``group_a`` states the stereotype for ``attribute``, else ``b``."""
    return "a" if spec.stereotype_group(attribute) == group_a else "b"


def fill(template: str, group_term: str, attribute: str) -> str:
    """A manual template filled; the first letter upper-cased (a sentence)."""
    s = template.replace("[T]", group_term).replace("[A]", attribute)
    return s[:1].upper() + s[1:]


def template_pairs(spec: BiasSpec) -> pd.DataFrame:
    """The manual-template baseline of ``spec``: every template x attribute term x first-group term, each paired
    with its counterpart in the second group."""
    rows = []
    for ti, template in enumerate(spec.templates):
        for attribute, _ in spec.attribute_terms():
            for term in spec.group_terms[0]:
                _, other = counterpart(spec, term)
                rows.append({
                    "pair_id": f"{spec.name}:template:{ti}:{attribute}:{term}",
                    "spec": spec.name, "attribute": attribute, "group_term_a": term, "group_term_b": other,
                    "sentence_a": fill(template, term, attribute), "sentence_b": fill(template, other, attribute),
                    "stereotype": stereotype_side(spec, attribute, 0), "source": "template",
                })  # fmt: skip
    return validate(pd.DataFrame(rows, columns=COLUMNS), PAIRS)


def authors_text(template: str, group_term: str) -> str:
    """A sentence as the authors' ``_4_ss_test_rule.py`` builds it from a release template: every ``[T]`` replaced
    by the group term as the release spells it (no capital added), ``[R]`` (the pronoun slot) left as it is."""
    return template.replace("[T]", group_term)


def _from_release_rows(
    df: pd.DataFrame, spec: str, source: str, prefix: str, path: Path, reference_quirks: bool = False
) -> pd.DataFrame:
    """Release pair rows (group_term = attribute, att_term_1/2 = group terms, label_1) -> PAIRS rows; with
    ``reference_quirks`` the sentences of generated pairs are the authors' texts (:func:`authors_text`)."""
    if reference_quirks and "sent_att_1" in df.columns:
        if "template" not in df.columns:
            raise InputError(
                "release pair file lacks column 'template' (needed by reference_quirks)", path=path
            )
        a = [authors_text(str(t), g) for t, g in zip(df["template"], df["att_term_1"], strict=True)]
        b = [authors_text(str(t), g) for t, g in zip(df["template"], df["att_term_2"], strict=True)]
    elif "sent_att_1" in df.columns:
        a, b = df["sent_att_1"].astype(str), df["sent_att_2"].astype(str)
    else:  # only a template: [MASK] (template baselines) or [T] (health pairs) for the group term, as the authors fill it
        a = [
            authors_text(t.replace("[MASK]", "[T]"), g)
            for t, g in zip(df["template"], df["att_term_1"], strict=True)
        ]
        b = [
            authors_text(t.replace("[MASK]", "[T]"), g)
            for t, g in zip(df["template"], df["att_term_2"], strict=True)
        ]
    bad = sorted(set(df["label_1"]) - {"stereotype", "anti-stereotype"})
    if bad:
        raise InputError(f"unknown label_1 value(s) {bad}", path=path)
    out = pd.DataFrame({
        "pair_id": [f"{prefix}:{i}" for i in df.index], "spec": spec, "attribute": df["group_term"].astype(str),
        "group_term_a": df["att_term_1"].astype(str), "group_term_b": df["att_term_2"].astype(str),
        "sentence_a": list(a), "sentence_b": list(b),
        "stereotype": np.where(df["label_1"] == "stereotype", "a", "b"), "source": source,
    })  # fmt: skip
    return out


def _read_release_csv(path: Path) -> pd.DataFrame:
    if not path.is_file():
        raise InputError("release file missing (fetch the `reference` resource)", path=path)
    df = pd.read_csv(path, keep_default_na=False, na_values=[""])
    need = {"group", "group_term", "att_term_1", "att_term_2", "label_1"}
    if not need <= set(df.columns):
        raise InputError(f"release pair file lacks column(s) {sorted(need - set(df.columns))}", path=path)
    if "discarded" in df.columns:  # rows the authors discarded (none in the files of the release)
        df = df[df["discarded"].isna() | (df["discarded"].astype(str).isin(["0", "0.0", "False", ""]))]
    return df


def released_pairs(
    reference_dir: str | Path,
    spec: str,
    generator: str = "gpt-3.5",
    runs: tuple[int, ...] = RUNS,
    reference_quirks: bool = False,
) -> pd.DataFrame:
    """The release's generated pairs of specification ``spec`` (its release name), ``source = released``.

    ``generator``: gpt-3.5 (core and health specifications) or megatron (core only); ``runs``: which of the 5
    generation runs. Pair ids are ``{spec}:released:{generator}:{run}:{row of the file}``. ``reference_quirks``:
    the sentences as the authors' scoring script builds them (the ``template`` column with ``[T]`` filled and
    ``[R]`` left literal: "... for [R] outstanding performance"), so the published pipeline's judgements can be
    reproduced; off, the released full sentences ``sent_att_1`` / ``sent_att_2``.
    """
    if generator not in RELEASED:
        raise InputError(f"unknown released generator {generator!r}; known: {sorted(RELEASED)}")
    ref = Path(reference_dir)
    core = spec in core_spec_names(ref)
    folder, pattern = RELEASED[generator]
    if not core and generator != "gpt-3.5":
        raise InputError(
            f"the release has no {generator} pairs of {spec!r} (only of the 15 core specifications)"
        )
    base = ref / ("dataset_core_biases" if core else "dataset_custom_biases") / "gen_pairs_csv" / folder
    parts = []
    for run in runs:
        if run not in RUNS:
            raise InputError(f"released run {run}: the release has runs {list(RUNS)}")
        path = base / pattern.format(run=run)
        df = _read_release_csv(path)
        df = df[df["group"] == spec]
        prefix = f"{spec}:released:{generator}:{run}"
        parts.append(_from_release_rows(df, spec, "released", prefix, path, reference_quirks))
    out = pd.concat(parts, ignore_index=True) if parts else pd.DataFrame(columns=COLUMNS)
    if out.empty:
        raise InputError(f"the release has no {generator} pairs of specification {spec!r}")
    return validate(out, PAIRS)


def released_template_pairs(reference_dir: str | Path, spec: str) -> pd.DataFrame:
    """The release's manual-template baseline pairs of ``spec`` (its templates filled with every term pair),
    ``source = template``; ids ``{spec}:template:release:{file}:{row}``."""
    ref = Path(reference_dir)
    for k, rel in enumerate(TEMPLATE_FILES):
        path = ref / rel
        df = _read_release_csv(path)
        df = df[df["group"] == spec]
        if len(df):
            return validate(
                _from_release_rows(df, spec, "template", f"{spec}:template:release:{k}", path), PAIRS
            )
    raise InputError(f"the release has no template baseline for specification {spec!r}")


def balanced_sample(pairs: pd.DataFrame, max_pairs: int | None, seed: int = 0) -> pd.DataFrame:
    """At most ``max_pairs`` pairs with the attribute terms as equally represented as possible (round robin over
    the terms, a seeded random pair of each term per round); the original row order is kept."""
    if max_pairs is None or len(pairs) <= max_pairs:
        return pairs.reset_index(drop=True)
    rng = np.random.default_rng(seed)
    shuffled = pairs.iloc[rng.permutation(len(pairs))]
    rank = shuffled.groupby("attribute", sort=False).cumcount()
    order = {a: i for i, a in enumerate(rng.permutation(pairs["attribute"].unique()))}
    key = rank * len(order) + shuffled["attribute"].map(order)
    keep = shuffled.index[np.argsort(key.to_numpy(), kind="stable")[:max_pairs]]
    return pairs.loc[sorted(keep)].reset_index(drop=True)
