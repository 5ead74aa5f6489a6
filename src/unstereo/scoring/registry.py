"""The one scorer registry: scorer kind -> how to load its model and build its scorer, for the causal LM scorer and
the four masked-LM scorers (:mod:`unstereo.scoring.masked_scorers`). :func:`scorer_for` turns a
:class:`~unstereo.models.request.ModelRequest` into (run description, scorer factory) for every stage that scores
(``unstereo score``, robustness, BiasTestGPT, the naturalness filter).

The run description enters the chunk fingerprint, the score-cache key (:data:`unstereo.scoring.cache.KEY_SETTINGS`)
and the output columns: model_id, model_revision, gguf_file, scorer (``causal`` or the masked scorer's ``kind``),
dtype, and bos_policy_requested where the request records one.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from unstereo.errors import ConfigError, UnstereoError
from unstereo.log import get_logger
from unstereo.models.request import CAUSAL, MASKED_KINDS, ModelRequest

log = get_logger("scoring")


@dataclass(frozen=True)
class ScorerKind:
    """One scorer kind: its name in the run description (``label``) and ``load(request)`` -> scorer."""

    name: str
    label: str
    load: Callable[[ModelRequest], Any]


def _load_causal(request: ModelRequest) -> Any:
    from unstereo.models.load import load
    from unstereo.scoring.causal import CausalScorer

    m, tok = load(request, "causal")
    return CausalScorer(m, tok, device=request.resolved_device, batch_size=request.batch_size,
                        bos_policy=request.bos_policy, max_batch_size=request.max_batch_size,
                        remember_probe=True)  # fmt: skip


def _masked_class(name: str) -> type:
    from unstereo.scoring.masked_scorers import MASKED_SCORERS

    return MASKED_SCORERS[name]


def _load_masked(request: ModelRequest) -> Any:
    from unstereo.models.load import load

    m, tok = load(request, "masked")
    return _masked_class(request.scorer)(m, tok, device=request.resolved_device, batch_size=request.batch_size,
                                         max_batch_size=request.max_batch_size)  # fmt: skip


#: Every scorer kind (the masked ones' labels are their classes' ``kind``: masked-pll, masked-crows-pairs, ...).
SCORERS: dict[str, ScorerKind] = {
    CAUSAL: ScorerKind(CAUSAL, "causal", _load_causal),
    **{name: ScorerKind(name, f"masked-{name}", _load_masked) for name in MASKED_KINDS},
}


def scorer_kind(name: str, key: str = "scorer") -> ScorerKind:
    """The registry entry of ``name``; an unknown name is a ConfigError naming ``key`` (the option or config key)."""
    try:
        return SCORERS[name]
    except KeyError:
        raise ConfigError(f"unknown scorer {name!r}; known: {list(SCORERS)}", key=key) from None


def scorer_for(request: ModelRequest) -> tuple[dict[str, Any], Callable[[], Any]]:
    """(run description, scorer factory) of ``request``: the description enters the fingerprint and the output
    columns; the factory loads the model and is called only when some chunk is left to score."""
    from unstereo.models.load import resolve_dtype

    kind = scorer_kind(request.scorer)
    spec = request.spec
    if spec.is_remote:
        raise UnstereoError(
            f"cannot score with {spec.to_arg()!r}: log-likelihoods need the model's weights (a hub id, folder or GGUF file)"
        )
    device = request.resolved_device
    run: dict[str, Any] = {
        "model_id": spec.path,
        "model_revision": spec.revision,
        "gguf_file": spec.gguf_file,
        "scorer": kind.label,
        "dtype": str(resolve_dtype(request.dtype, device)).replace("torch.", ""),
    }
    if request.bos_policy is not None:
        run["bos_policy_requested"] = request.bos_policy

    def make_scorer() -> Any:
        log.info("loading %s (%s) on %s in %s", spec.label, kind.label, device, run["dtype"])
        return kind.load(request)

    return run, make_scorer
