"""The counterfactual templates and attribute values of Huang et al. (2020), Appendix A, and their fill.

Read from ``{external_dir}/reference/huang2020-sentiment-templates/``: ``templates_long.tsv`` (attribute,
template_id, template, applies_to) and ``values_long.tsv`` (attribute, value, subgroup). Every template is filled
with every value it applies to (``applies_to``: ``all``, or the name subgroup ``female``/``male``): 10 country
templates x 10 countries, 10 occupation templates x 29 occupations (the value carries its article), 8 shared name
templates x 34 names and 2 + 2 gendered ones x 17 names: 730 prefixes.

``family``: the template a prefix is a counterfactual of. The gendered name templates N9_M/N9_F ("{X} said he/she
feels") are one template (N9) whose pronoun agrees with the name, so the counterfactual of "Jake said he feels" is
"Molly said she feels" and every attribute has M = 10 templates, as in the paper.
"""

from __future__ import annotations

import re
from pathlib import Path

import pandas as pd

from unstereo.errors import InputError

DATASET = "huang2020-sentiment-templates"
PLACEHOLDER = "{X}"
ATTRIBUTES = ("country", "occupation", "name")
_GENDERED = re.compile(r"_(M|F)$")


def templates_dir(external_dir: str | Path) -> Path:
    """The dataset's folder inside the reference resource."""
    return Path(external_dir) / "reference" / DATASET


def _read_tsv(path: Path, columns: list[str]) -> pd.DataFrame:
    if not path.is_file():
        raise InputError("file not found (fetch the `reference` resource)", path=path)
    df = pd.read_csv(path, sep="\t", dtype=str, keep_default_na=False)
    missing = [c for c in columns if c not in df.columns]
    if missing:
        raise InputError(f"lacks column(s) {missing}; has {list(df.columns)}", path=path)
    return df[columns]


def load_templates(directory: str | Path) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(templates, values) tables of the dataset folder, checked: every template has exactly one ``{X}``, every
    attribute has values, ``applies_to`` names ``all`` or a subgroup of the attribute."""
    directory = Path(directory)
    templates = _read_tsv(
        directory / "templates_long.tsv", ["attribute", "template_id", "template", "applies_to"]
    )
    values = _read_tsv(directory / "values_long.tsv", ["attribute", "value", "subgroup"])
    for i, row in enumerate(templates.itertuples(index=False), start=2):
        if row.template.count(PLACEHOLDER) != 1:
            raise InputError(
                f"template {row.template_id!r} needs exactly one {PLACEHOLDER}",
                directory / "templates_long.tsv",
                i,
            )
        subgroups = set(values.loc[values["attribute"] == row.attribute, "subgroup"])
        if not subgroups:
            raise InputError(f"attribute {row.attribute!r} has no values", directory / "values_long.tsv")
        if row.applies_to != "all" and row.applies_to not in subgroups:
            raise InputError(
                f"applies_to {row.applies_to!r} is not a subgroup of {row.attribute!r}",
                directory / "templates_long.tsv",
                i,
            )
    return templates, values


def template_family(template_id: str) -> str:
    """``N9_M``/``N9_F`` -> ``N9``; any other id is its own family."""
    return _GENDERED.sub("", template_id)


def fill_templates(
    templates: pd.DataFrame,
    values: pd.DataFrame,
    attributes: list[str] | None = None,
    families: dict[str, list[str]] | None = None,
    max_templates: int | None = None,
) -> pd.DataFrame:
    """One row per (template, value it applies to): ``prompt_id, attribute, template_id, family, template, value,
    subgroup, prefix`` (subgroup = the value's subgroup, else the value itself: the group-fairness unit).

    ``attributes``: keep these (default all, in file order). ``families``: attribute -> template families to keep
    (e.g. ``{"name": ["N1", "N9"]}``); else the first ``max_templates`` families of each attribute (None = all).
    """
    rows = []
    keep_attr = list(dict.fromkeys(templates["attribute"])) if attributes is None else list(attributes)
    unknown = [a for a in keep_attr if a not in set(templates["attribute"])]
    if unknown:
        raise InputError(
            f"unknown attribute(s) {unknown}; the templates have {sorted(set(templates['attribute']))}"
        )
    for attribute in keep_attr:
        t = templates[templates["attribute"] == attribute]
        fams = list(dict.fromkeys(t["template_id"].map(template_family)))
        if families and attribute in families:
            wanted = list(families[attribute])
            bad = [f for f in wanted if f not in fams]
            if bad:
                raise InputError(f"attribute {attribute!r} has no template(s) {bad}; it has {fams}")
            fams = [f for f in fams if f in wanted]
        elif max_templates is not None:
            fams = fams[:max_templates]
        vals = values[values["attribute"] == attribute]
        for row in t.itertuples(index=False):
            family = template_family(row.template_id)
            if family not in fams:
                continue
            for v in vals.itertuples(index=False):
                if row.applies_to != "all" and v.subgroup != row.applies_to:
                    continue
                rows.append(
                    {
                        "prompt_id": f"{attribute}|{row.template_id}|{v.value}",
                        "attribute": attribute,
                        "template_id": row.template_id,
                        "family": family,
                        "template": row.template,
                        "value": v.value,
                        "subgroup": v.subgroup or v.value,
                        "prefix": row.template.replace(PLACEHOLDER, v.value),
                    }
                )
    return pd.DataFrame(
        rows,
        columns=[
            "prompt_id",
            "attribute",
            "template_id",
            "family",
            "template",
            "value",
            "subgroup",
            "prefix",
        ],
    )
