"""The version floors pyproject.toml declares support what the code uses (a floor below a feature's first release
installs fine and then fails at run time)."""

from __future__ import annotations

import re
import tomllib

import pytest
from _paths import REPO
from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

# (what the code contains, the distribution, the first version that has it)
FEATURES = [
    (re.compile(r"\bnp\.trapezoid\("), "numpy", "2.0"),  # renamed from np.trapz in numpy 2.0
    (re.compile(r"\.extractall\([^)]*filter="), "python", "3.11.4"),  # tarfile extraction filters (PEP 706)
]


def _floor(spec: SpecifierSet) -> Version:
    floors = [Version(s.version) for s in spec if s.operator in (">=", "==", "~=")]
    assert floors, f"no lower bound in {spec}"
    return max(floors)


def _declared() -> dict[str, SpecifierSet]:
    project = tomllib.loads((REPO / "pyproject.toml").read_text())["project"]
    out = {"python": SpecifierSet(project["requires-python"])}
    for line in project["dependencies"]:
        req = Requirement(line)
        out[req.name.lower()] = req.specifier
    return out


def test_floor_helper():
    assert _floor(SpecifierSet(">=1.26,<3")) == Version("1.26")
    assert _floor(SpecifierSet(">=3.11.4")) == Version("3.11.4")


@pytest.mark.parametrize(("pattern", "dist", "first"), FEATURES, ids=[f[1] for f in FEATURES])
def test_declared_floor_supports_the_features_used(pattern, dist, first):
    users = [
        str(p.relative_to(REPO))
        for p in sorted((REPO / "src").rglob("*.py"))
        if pattern.search(p.read_text())
    ]
    assert users, f"{pattern.pattern} is no longer used: drop it from FEATURES"
    floor = _floor(_declared()[dist])
    assert floor >= Version(first), f"{dist} >= {floor} is declared, but {users} need {dist} >= {first}"
