"""The masked-LM scores by name, and the factory that loads a masked LM for one of them.

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

from collections.abc import Callable
from typing import Any

from ..errors import InputError
from ..log import get_logger
from ..model_spec import resolve_model
from ..models import ModelSpec, resolve_device, resolve_dtype
from .masked import AulScorer, MaskedScorer, load_masked_lm
from .masked_crows import CrowsPairsScorer
from .masked_term import MaskedTermScorer

log = get_logger("scoring")

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


def masked_factory(
    model: str | ModelSpec, scorer: str = "biastestgpt", *, revision: str | None = None,
    batch_size: int | str = "auto", max_batch_size: int | None = None, dtype: str = "auto", device: str = "auto",
) -> tuple[dict[str, Any], Callable[[], MaskedScorer]]:  # fmt: skip
    """(run description, scorer factory) of the masked-LM scorer ``scorer`` on a masked LM (hub id or folder), like
    :func:`unstereo.scoring.run.scorer_factory` does for the other scorers."""
    cls = MASKED_SCORERS[check_name(scorer)]
    spec = resolve_model(model, revision=revision, key="MODEL")
    device = resolve_device(device)
    run = {
        "model_id": spec.path,
        "model_revision": spec.revision,
        "gguf_file": None,
        "scorer": cls.kind,
        "dtype": str(resolve_dtype(dtype, device)).replace("torch.", ""),
    }

    def make() -> MaskedScorer:
        log.info("loading masked LM %s on %s (%s score)", spec.path, device, scorer)
        m, tok = load_masked_lm(spec, dtype=dtype, device=device)
        return cls(m, tok, device=device, batch_size=batch_size, max_batch_size=max_batch_size)

    return run, make
