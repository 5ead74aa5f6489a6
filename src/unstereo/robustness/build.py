"""Named constructions of a benchmark's pair table: PAIRS -> PAIRS, and the seeded sub-samples.

Names (:func:`construction_names` lists those a configuration asks for):

| name | what each pair becomes |
|---|---|
| ``original`` | itself |
| ``{subject,object}_clause_{afternoon,back,beach,restaurant,to_restaurant}`` | a clause (:data:`CLAUSES`) after the entity |
| ``adj_subject`` / ``adj_object`` | one pair per adjective, the adjective before the entity's noun |
| ``subject_adj`` / ``object_adj`` | one pair per adjective, "who was ADJ" after the entity |
| ``synonyms`` | words replaced from a synonym map |
| ``negation`` | the first verb after the subject negated |
| ``release:FILE`` | the released Winogender construction ``FILE.tsv`` (a fixed alternative, :func:`from_release`) |

(the release's own file names for Winogender, :mod:`.release`). A constructed pair keeps the original pair id plus
the construction (``{pair_id}@{construction}``, ``...@adj_subject:smart`` for an adjective), its benchmark, seed word
and source, and has the columns ``construction``, ``original_pair_id`` and ``changed`` (False where the
construction did not apply, e.g. no adjective before "someone"; those pairs are kept, with the original sentences).

Entities: Winogender pairs (pair id ``Winogender:occupation.participant.answer``) mark the occupation (subject) and
the participant or "someone" (object); other pairs use :func:`.constructions.mark_roles`' noun phrases.

Sub-sampling (:func:`subsample`) keeps the pairs of a seeded random fraction of the units (Winogender: occupations;
other benchmarks: seed words, else templates), one independent draw per trial.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.errors import ConfigError, InputError
from unstereo.robustness.constructions import (
    ADJECTIVES,
    CLAUSES,
    Construction,
    RoleTemplate,
    add_adjective,
    add_clause,
    mark_roles,
    negate,
    substitute,
)
from unstereo.tables import PAIRS, validate
from unstereo.templates import fill_template

ORIGINAL = "original"
ADJECTIVE_PLACEMENTS: dict[str, tuple[str, str]] = {
    "adj_subject": ("subject", "before"),
    "adj_object": ("object", "before"),
    "subject_adj": ("subject", "clause"),
    "object_adj": ("object", "clause"),
}
CLAUSE_CONSTRUCTIONS: dict[str, tuple[str, str]] = {
    f"{role}_clause_{key}": (role, key) for role in ("subject", "object") for key in CLAUSES
}
NAMES = (ORIGINAL, *CLAUSE_CONSTRUCTIONS, *ADJECTIVE_PLACEMENTS, "synonyms", "negation")
_WINOGENDER_ID = re.compile(r"^[^:]+:(?P<occ>[^.@]+)\.(?P<part>[^.@]+)\.(?P<answer>[01])$")
EXTRA_COLUMNS = ("construction", "original_pair_id", "changed")


RELEASE_PREFIX = "release:"


def with_original(names: Sequence[str]) -> list[str]:
    """The constructions ``names`` with ``original`` first (always built: the reference of the rank statistics and
    the sub-samples' pool)."""
    return [ORIGINAL, *(n for n in names if n != ORIGINAL)]


def construction_dir(name: str) -> str:
    """The folder name of a construction's outputs (``release:FILE`` -> ``release_FILE``)."""
    return name.replace(":", "_")


def construction_names(names: Iterable[str]) -> list[str]:
    """``names`` checked against :data:`NAMES` and ``release:FILE`` (a released Winogender construction file, see
    :data:`.release.RELEASE_FILES`); a ConfigError names an unknown one."""
    from unstereo.robustness.release import RELEASE_FILES

    out = list(names)
    for name in out:
        if name.startswith(RELEASE_PREFIX) and name[len(RELEASE_PREFIX) :] in RELEASE_FILES[1:]:
            continue
        if name not in NAMES:
            raise ConfigError(
                f"unknown construction {name!r}; known: {', '.join(NAMES)}", key="robustness.constructions"
            )
    return out


def roles_of(pair_id: str, template: str) -> RoleTemplate:
    """The role template of a pair (see the module doc)."""
    m = _WINOGENDER_ID.match(pair_id)
    if m:
        try:
            return mark_roles(template, subject=m["occ"], object=m["part"])
        except InputError:
            pass  # a user table with a look-alike id: fall back to noun phrases
    return mark_roles(template)


def variants(
    name: str, adjectives: Sequence[str] = ADJECTIVES, synonyms: Mapping[str, str] | None = None
) -> list[tuple[str, Construction]]:
    """``(suffix, role template -> role template)`` for each variant of construction ``name``."""
    if name == ORIGINAL:
        return [("", lambda rt: rt)]
    if name in CLAUSE_CONSTRUCTIONS:
        role, key = CLAUSE_CONSTRUCTIONS[name]
        return [("", lambda rt: add_clause(rt, CLAUSES[key], role))]
    if name in ADJECTIVE_PLACEMENTS:
        role, placement = ADJECTIVE_PLACEMENTS[name]
        return [(f":{a}", lambda rt, a=a: add_adjective(rt, a, role, placement)) for a in adjectives]
    if name == "synonyms":
        if synonyms is None:
            raise ValueError("the synonyms construction needs a synonym map")
        return [("", lambda rt: substitute(rt, synonyms))]
    if name == "negation":
        return [("", negate)]
    raise ConfigError(
        f"unknown construction {name!r}; known: {', '.join(NAMES)}", key="robustness.constructions"
    )


def construct(
    pairs: pd.DataFrame,
    name: str,
    adjectives: Sequence[str] = ADJECTIVES,
    synonyms: Mapping[str, str] | None = None,
) -> pd.DataFrame:
    """The PAIRS table of construction ``name`` of ``pairs`` (see the module doc)."""
    pairs = validate(pairs.reset_index(drop=True), PAIRS, source="pairs")
    todo = variants(name, adjectives, synonyms)
    rows = []
    for rec in pairs.to_dict("records"):
        base = roles_of(str(rec["pair_id"]), str(rec["template"]))
        original = base.render()
        for suffix, fn in todo:
            rt = fn(base)
            template = rt.render()
            changed = template != original
            out = dict(rec)
            out.update(
                pair_id=f"{rec['pair_id']}@{name}{suffix}" if name != ORIGINAL else rec["pair_id"],
                template=template if changed else rec["template"],
                sentence_female=fill_template(template, "female") if changed else rec["sentence_female"],
                sentence_male=fill_template(template, "male") if changed else rec["sentence_male"],
                construction=name,
                original_pair_id=rec["pair_id"],
                changed=changed,
            )
            rows.append(out)
    columns = [*pairs.columns, *(c for c in EXTRA_COLUMNS if c not in pairs.columns)]
    return validate(pd.DataFrame(rows, columns=columns), PAIRS, source=f"construction {name}")


def sampling_units(pairs: pd.DataFrame) -> pd.Series:
    """The unit each pair is sampled with: the Winogender occupation, else the seed word, else the template."""
    units = []
    for pid, seed, template in zip(pairs["pair_id"], pairs["seed_word"], pairs["template"], strict=True):
        m = _WINOGENDER_ID.match(str(pid))
        if m:
            units.append(m["occ"])
        elif isinstance(seed, str) and seed:
            units.append(seed)
        else:
            units.append(str(template))
    return pd.Series(units, index=pairs.index, name="unit")


def subsample(pairs: pd.DataFrame, fraction: float, trial: int, seed: int) -> pd.DataFrame:
    """The pairs of a random ``fraction`` of the units (rounded half up, at least one), drawn with ``(seed, trial)``: the same
    arguments give the same sample, other trials independent ones."""
    if not 0 < fraction <= 1:
        raise ValueError(f"fraction must be in (0, 1], got {fraction}")
    units = sampling_units(pairs)
    distinct = sorted(set(units))
    k = max(1, math.floor(fraction * len(distinct) + 0.5))  # half up: 25 % of 10 units is 3
    rng = np.random.default_rng([int(seed), int(trial)])
    chosen = set(rng.choice(np.array(distinct, dtype=object), size=k, replace=False))
    return pairs.loc[units.isin(chosen).to_numpy()]


def sample_name(fraction: float) -> str:
    """Construction name of a sub-sample: ``sample_10`` for 10 %."""
    pct = fraction * 100
    return f"sample_{int(pct)}" if float(pct).is_integer() else f"sample_{pct:g}"


def from_release(pairs: pd.DataFrame, name: str, release_dir: str | Path) -> pd.DataFrame:
    """Construction ``release:FILE``: the released Winogender file ``release_dir/FILE.tsv`` as a pair table over
    the pairs of ``pairs`` (matched by ``occupation.participant.answer``; released rows of other pairs are left
    out), with the construction columns."""
    from unstereo.robustness.release import load_release

    pairs = validate(pairs.reset_index(drop=True), PAIRS, source="pairs")
    bench = str(pairs["benchmark"].iloc[0]) if len(pairs) else "Winogender"
    released = load_release(
        Path(release_dir) / f"{name[len(RELEASE_PREFIX) :]}.tsv", bench, construction=name
    )
    released["original_pair_id"] = released["pair_id"].str.split("@").str[0]
    by_id = pairs.set_index("pair_id")
    released = released[released["original_pair_id"].isin(by_id.index)].reset_index(drop=True)
    if released.empty:
        raise InputError(f"no pair of the benchmark {bench!r} in the released file", path=str(release_dir))
    original = by_id.loc[released["original_pair_id"]]
    for col in ("seed_word", "max_pmi", "max_pmi_word"):
        released[col] = original[col].to_numpy()
    released["construction"] = name
    released["changed"] = released["template"].to_numpy() != original["template"].to_numpy()
    return validate(released, PAIRS, source=f"construction {name}")
