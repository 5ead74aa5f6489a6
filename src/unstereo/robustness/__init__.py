"""Dataset-construction robustness ("The Tail Wagging the Dog",
docs/methods.md#dataset-construction-robustness): rebuild a benchmark harmlessly and see how much its bias
scores and model rankings move.

- :mod:`.constructions`: role templates and the construction functions (clauses, adjectives, synonyms, negation);
- :mod:`.build`: named constructions of a pair table, seeded sub-samples;
- :mod:`.release`: the released Winogender constructions, rebuilt and compared, or loaded as fixed alternatives;
- :mod:`.run`: construction -> scores (through the score cache) -> US, PD, AuFC per construction and trial;
- :mod:`.stats`: distributions, Kendall tau between rankings, rank swaps; :mod:`.figures`: Figures 3 and 4.
"""

# The names below are imported on first use (PEP 562), not with the package: the method registry imports
# unstereo.robustness.method, and `unstereo --help` must not pay for pandas through this package.
_EXPORTS = {
    "NAMES": ".build",
    "construct": ".build",
    "subsample": ".build",
    "ADJECTIVES": ".constructions",
    "CLAUSES": ".constructions",
    "RoleTemplate": ".constructions",
    "add_adjective": ".constructions",
    "add_clause": ".constructions",
    "mark_roles": ".constructions",
    "negate": ".constructions",
    "substitute": ".constructions",
    "kendall_tau": ".stats",
    "rank_swaps": ".stats",
    "rankings": ".stats",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str):
    if name in _EXPORTS:
        import importlib

        return getattr(importlib.import_module(_EXPORTS[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
