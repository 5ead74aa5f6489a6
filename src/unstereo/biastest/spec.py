"""Bias specifications (BiasTestGPT, docs/methods.md#biastestgpt): two social groups with terms and two
attribute sets.

The first group with the first attribute set (and the second group with the second set) is the stereotype; the
crossed combinations are the anti-stereotype. A specification is a mapping

    name: my_bias
    social_groups: {Male: [he, man, ...], Female: [she, woman, ...]}
    attributes: {Math: [math, algebra, ...], Arts: [poetry, art, ...]}
    templates: ["[T] likes [A]", ...]     # optional: the manual-template baseline ([T] group term, [A] attribute)

in a YAML or JSON file (one specification, or a list of them). The release's 15 core and 4 health specifications
load by name (:func:`release_spec`): by their name in the release (``Math_Arts_vs_Male_Female``) or by the tag the
authors' app uses (``male_female__math_arts``). Some release specifications list more than two groups or attribute
sets (reduced name lists, ``balanced_professions``): the first two of each are the specification, as in the
release's generations.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from unstereo.errors import ConfigError, InputError

DEFAULT_TEMPLATES = ("[T] is [A]", "[T] likes [A]")
CORE_SPECS_FILE = "dataset_core_biases/bias_specs_with_glove_and_thesaurus.json"
HEALTH_SPECS_FILE = "dataset_custom_biases/custom_biases_spec.json"
NAME_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# The authors' app's tags of the 15 core specifications -> their names in the release's core file.
CORE_TAGS = {
    "male_female__math_arts": "Math_Arts_vs_Male_Female",
    "male_female__science_arts": "Science_Arts_vs_Male_Female",
    "flowers_insects__pleasant_unpleasant": "Flowers_Insects_vs_Pleasant_Unpleasant",
    "instruments_weapons__pleasant_unpleasant": "Instruments_Weapons_vs_Pleasant_Unpleasant",
    "eur_am_names_afr_am_names__pleasant_unpleasant_1": "Eur.-AmericanNames_Afr.-AmericanNames_vs_Pleasant_Unpleasant_1",
    "eur_am_names_afr_am_names__pleasant_unpleasant_2": "Eur.-AmericanNames_Afr.-AmericanNames_vs_Pleasant_Unpleasant_2",
    "eur_am_names_afr_am_names__pleasant_unpleasant_3": "Eur.-AmericanNames_Afr.-AmericanNames_vs_Pleasant_Unpleasant_3",
    "male_female__career_family": "Career_Family_vs_MaleName_FemaleName",
    "mental_physial_disease__temporary_permanent": "MentalDisease_PhysicalDisease_vs_Temporary_Permanent",
    "young_old__pleasant_unpleasant": "YoungName_OldName_vs_Pleasant_Unpleasant",
    "male_female__profession": "Professions_vs_Gender",
    "african_female_european_male__intersectional": "African_Female_European_Male_intersectional",
    "african_female_european_male__emergent_intersectional": "African_Female_European_Male_vs_AFemergent_EMintersectional",
    "mexican_female_european_male__intersectional": "Mexican_Female_European_Male_intersectional",
    "mexican_female_european_male__emergent_intersectional": "Mexican_Female_European_Male_vs_MFemergent_EMintersectional",
}
# The app's tags of the 4 health specifications -> their names in the release's custom_biases_spec.json.
HEALTH_TAGS = {
    "male_female__care_expertise": "Female_Male_Caregiving_DecisionMaking",
    "infant_adult__vaccination": "Health_Infant_Adult_Vaccination",
    "hisp_eur__treatment_adhere": "Health_Hispanic_vs_European_Treatment_Adherence",
    "afr_am_eur_am__risky_health": "Health_Afr_Am_vs_Eur_Aa_Risky_Health_Behaviors",
}


@dataclass(frozen=True)
class BiasSpec:
    """A bias specification. ``groups`` and ``attributes`` are two (label, terms) pairs each."""

    name: str
    groups: tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]
    attributes: tuple[tuple[str, tuple[str, ...]], tuple[str, tuple[str, ...]]]
    templates: tuple[str, ...] = DEFAULT_TEMPLATES
    source: str = ""
    dropped: tuple[str, ...] = field(default=(), compare=False)  # extra release groups/sets not used

    @property
    def group_terms(self) -> tuple[tuple[str, ...], tuple[str, ...]]:
        return self.groups[0][1], self.groups[1][1]

    def attribute_terms(self) -> list[tuple[str, int]]:
        """Every attribute term with the index (0 or 1) of its set, in specification order."""
        return [(t, k) for k, (_, terms) in enumerate(self.attributes) for t in terms]

    def attribute_set(self, term: str) -> int:
        """0 or 1: the attribute set ``term`` belongs to (KeyError when it is in neither)."""
        for t, k in self.attribute_terms():
            if t == term:
                return k
        raise KeyError(term)

    def stereotype_group(self, attribute: str) -> int:
        """The group (0 or 1) whose sentence with ``attribute`` states the stereotype: group k with set k."""
        return self.attribute_set(attribute)

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "social_groups": {label: list(terms) for label, terms in self.groups},
            "attributes": {label: list(terms) for label, terms in self.attributes},
            "templates": list(self.templates),
            "source": self.source,
        }


def _terms(value: Any, key: str, source: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not value:
        raise ConfigError("must be a non-empty list of terms", key=key, source=source)
    out = []
    for i, t in enumerate(value):
        if not isinstance(t, str) or not t.strip():
            raise ConfigError(
                f"term {i} is {t!r}: terms are non-empty strings", key=f"{key}[{i}]", source=source
            )
        if t != t.strip() or "  " in t:
            raise ConfigError(f"term {t!r} has stray spaces", key=f"{key}[{i}]", source=source)
        out.append(t)
    dup = sorted({t for t in out if out.count(t) > 1})
    if dup:
        raise ConfigError(f"repeated term(s) {dup}", key=key, source=source)
    return tuple(out)


def _two(value: Any, key: str, source: Any, release: bool) -> tuple[tuple, tuple[str, ...]]:
    if not isinstance(value, dict):
        raise ConfigError("must be a mapping label -> list of terms", key=key, source=source)
    items = list(value.items())
    if len(items) < 2 or (len(items) > 2 and not release):
        raise ConfigError(f"needs exactly two entries, has {len(items)}", key=key, source=source)
    pairs = tuple((str(label), _terms(terms, f"{key}.{label}", source)) for label, terms in items[:2])
    return pairs, tuple(f"{key}.{label}" for label, _ in items[2:])


def spec_from_dict(data: Any, source: Any = None, key: str = "", release: bool = False) -> BiasSpec:
    """Validate a specification mapping; errors are ConfigErrors naming the key (``social_groups.Male[2]``).

    ``release``: the release's files, whose extra groups/attribute sets beyond the first two are dropped.
    """
    pre = f"{key}." if key else ""
    if not isinstance(data, dict):
        raise ConfigError("a bias specification must be a mapping", key=key or None, source=source)
    allowed = {"name", "social_groups", "attributes", "templates", "source", "url", "description"}
    unknown = sorted(set(data) - allowed)
    if unknown and not release:
        raise ConfigError(
            f"unknown key(s) {unknown}; allowed: {sorted(allowed)}", key=key or None, source=source
        )
    for need in ("name", "social_groups", "attributes"):
        if need not in data:
            raise ConfigError("missing", key=f"{pre}{need}", source=source)
    name = data["name"]
    if not isinstance(name, str) or not NAME_PATTERN.match(name):
        raise ConfigError(
            f"{name!r}: a name is letters, digits, '.', '_' or '-' (it is a folder name)",
            key=f"{pre}name",
            source=source,
        )
    groups, dropped_g = _two(data["social_groups"], f"{pre}social_groups", source, release)
    attributes, dropped_a = _two(data["attributes"], f"{pre}attributes", source, release)
    both = set(groups[0][1]) & set(groups[1][1])
    if both:
        raise ConfigError(f"term(s) {sorted(both)} in both groups", key=f"{pre}social_groups", source=source)
    both = set(attributes[0][1]) & set(attributes[1][1])
    if both and not release:
        raise ConfigError(
            f"term(s) {sorted(both)} in both attribute sets", key=f"{pre}attributes", source=source
        )
    templates = data.get("templates") or list(DEFAULT_TEMPLATES)
    if not isinstance(templates, list):
        raise ConfigError("must be a list of strings", key=f"{pre}templates", source=source)
    for i, t in enumerate(templates):
        if not isinstance(t, str) or t.count("[T]") != 1 or t.count("[A]") != 1:
            raise ConfigError(
                f"template {t!r} needs exactly one [T] (group term) and one [A] (attribute term)",
                key=f"{pre}templates[{i}]",
                source=source,
            )
    return BiasSpec(
        name, groups, attributes, tuple(templates), str(data.get("source") or ""), dropped_g + dropped_a
    )


def load_spec_file(path: str | Path) -> list[BiasSpec]:
    """The specifications of a YAML or JSON file (one mapping or a list of them)."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
        data = json.loads(text) if path.suffix.lower() == ".json" else yaml.safe_load(text)
    except (OSError, ValueError, yaml.YAMLError) as exc:  # ValueError: JSON, not UTF-8
        raise InputError(f"cannot read bias specification: {exc}", path=path) from exc
    if isinstance(data, dict):
        return [spec_from_dict(data, source=str(path))]
    if not isinstance(data, list) or not data:
        raise InputError("a bias specification file holds a mapping or a non-empty list of them", path=path)
    specs = [spec_from_dict(d, source=str(path), key=f"[{i}]") for i, d in enumerate(data)]
    names = [s.name for s in specs]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise InputError(f"repeated specification name(s) {dup}", path=path)
    return specs


def _release_file(reference_dir: str | Path, rel: str) -> list[dict[str, Any]]:
    path = Path(reference_dir) / rel
    if not path.is_file():
        raise InputError("release file missing (fetch the `reference` resource)", path=path)
    return json.loads(path.read_text(encoding="utf-8"))


def release_specs(reference_dir: str | Path) -> dict[str, BiasSpec]:
    """The release's 15 core then 4 health specifications by release name (``reference_dir`` = the biastestgpt
    folder of the reference data)."""
    out: dict[str, BiasSpec] = {}
    for rel in (CORE_SPECS_FILE, HEALTH_SPECS_FILE):
        for i, d in enumerate(_release_file(reference_dir, rel)):
            out[d["name"]] = spec_from_dict(
                d, source=str(Path(reference_dir) / rel), key=f"[{i}]", release=True
            )
    return out


def core_spec_names(reference_dir: str | Path) -> list[str]:
    """Names of the 15 core specifications, in release order."""
    return [d["name"] for d in _release_file(reference_dir, CORE_SPECS_FILE)]


def release_aliases() -> dict[str, str]:
    """The authors' app tags (``male_female__math_arts``, its ``bias2tag``) -> release names."""
    return {**CORE_TAGS, **HEALTH_TAGS}


def release_spec(name: str, reference_dir: str | Path) -> BiasSpec:
    """A release specification by release name or app tag; an InputError lists the known names."""
    specs = release_specs(reference_dir)
    name = release_aliases().get(name, name)
    if name not in specs:
        raise InputError(f"no release bias specification {name!r}; known: {sorted(specs)}")
    return specs[name]


def resolve_specs(names_or_files: list[str], reference_dir: str | Path | None) -> list[BiasSpec]:
    """Specifications from a list of release names/tags, ``core`` (the 15), ``health`` (the 4), or file paths."""
    out: list[BiasSpec] = []
    for item in names_or_files:
        if Path(item).suffix.lower() in (".yaml", ".yml", ".json"):
            out += load_spec_file(item)
            continue
        if reference_dir is None:
            raise ConfigError(f"{item!r} is a release specification: needs the reference data folder")
        if item in ("core", "health"):
            core = core_spec_names(reference_dir)
            specs = release_specs(reference_dir)
            out += [s for n, s in specs.items() if (n in core) == (item == "core")]
        else:
            out.append(release_spec(item, reference_dir))
    names = [s.name for s in out]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(f"specification(s) {dup} given twice")
    return out
