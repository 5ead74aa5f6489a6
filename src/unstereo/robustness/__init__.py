"""Dataset-construction robustness ("The Tail Wagging the Dog",
docs/methods.md#dataset-construction-robustness): rebuild a benchmark harmlessly and see how much its bias
scores and model rankings move.

- :mod:`.constructions`: role templates and the construction functions (clauses, adjectives, synonyms, negation);
- :mod:`.build`: named constructions of a pair table, seeded sub-samples;
- :mod:`.release`: the released Winogender constructions, rebuilt and compared, or loaded as fixed alternatives;
- :mod:`.run`: construction -> scores (through the score cache) -> US, PD, AuFC per construction and trial;
- :mod:`.stats`: distributions, Kendall tau between rankings, rank swaps; :mod:`.figures`: Figures 3 and 4.
"""

from .build import NAMES, construct, subsample
from .constructions import (
    ADJECTIVES,
    CLAUSES,
    RoleTemplate,
    add_adjective,
    add_clause,
    mark_roles,
    negate,
    substitute,
)
from .stats import kendall_tau, rank_swaps, rankings

__all__ = [
    "ADJECTIVES",
    "CLAUSES",
    "NAMES",
    "RoleTemplate",
    "add_adjective",
    "add_clause",
    "construct",
    "kendall_tau",
    "mark_roles",
    "negate",
    "rank_swaps",
    "rankings",
    "subsample",
    "substitute",
]
