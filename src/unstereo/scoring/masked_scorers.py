"""The masked-LM scores by name (loaded through the one scorer registry, :mod:`unstereo.scoring.registry`).

========== ================================================ ========================== ======================
name       definition                                       text it scores             sentence score
========== ================================================ ========================== ======================
pll        Salazar et al. 2020: every token masked in turn  the sentence               sum of ln p
crows-pairs Nangia et al. 2020: the shared tokens masked in the sentence + its partner sum of ln p
           turn, the modified ones visible                  (:func:`with_partner`)
aul        Kaneko and Bollegala 2022: nothing masked        the sentence               mean of ln p
biastestgpt Kocielnik et al. 2023, the authors' code: one   the sentence, group term   mean raw logit of the
           [MASK] per term                                  marked (:func:`mark`)      term's sub-word ids
========== ================================================ ========================== ======================

Each scorer's ``score`` returns (value, n) per text; :data:`REDUCE` says how the sentence score follows from it.
Definitions with their equations: docs/methods.md, "Masked-LM scoring".
"""

from __future__ import annotations

from unstereo.errors import InputError
from unstereo.scoring.masked import AulScorer, MaskedScorer
from unstereo.scoring.masked_crows import CrowsPairsScorer
from unstereo.scoring.masked_term import MaskedTermScorer

MASKED_SCORERS: dict[str, type[MaskedScorer]] = {
    "pll": MaskedScorer,
    "crows-pairs": CrowsPairsScorer,
    "aul": AulScorer,
    "biastestgpt": MaskedTermScorer,
}
# (value, n) -> sentence score: "sum" keeps the value (a summed log-prob, or BiasTestGPT's mean logit), "mean"
# divides it by n (AUL's mean log-prob).
REDUCE = {"pll": "sum", "crows-pairs": "sum", "aul": "mean", "biastestgpt": "sum"}


def check_name(name: str) -> str:
    if name not in MASKED_SCORERS:
        raise InputError(f"unknown masked-LM scorer {name!r}; known: {list(MASKED_SCORERS)}")
    return name
