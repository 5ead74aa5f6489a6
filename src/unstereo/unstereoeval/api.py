"""UnStereoEval's public API: what another method may use of it, and the only module of ``unstereoeval/`` that one
imports (tests/repo/test_package_structure.py checks it). The robustness method rebuilds UnStereoEval's benchmarks
and scores them with UnStereoEval's score command and metrics:

- :func:`score_settings`, :func:`scorer_options`, :func:`scorer_request`: the score command's options and settings
  (click decorators) and its model request;
- :func:`eta_label`: an eta as the tables label it (:mod:`unstereo.unstereoeval.eta`);
- :func:`load_wordnet`: WordNet for the synonym construction (:mod:`unstereo.unstereoeval.vocabulary.english`);
- :func:`load_pairs`: the gendered word pairs (``data/gendered_pairs.csv``; :mod:`unstereo.unstereoeval.lexicon`), which
  the model variants swap;
- :func:`add_max_pmi`: a pair table's MaxPMI against a delta table (:mod:`unstereo.unstereoeval.benchmarks.maxpmi`);
- :func:`join_scores`, :func:`metrics_from_joined`: scores joined to their pairs, and the metric registry's metrics
  of such a table (:mod:`unstereo.unstereoeval.metrics.compute`).

The click decorators are imported here at once (click only: a method's ``--help`` stays light); the others, which
need pandas, on first use (``unstereo.unstereoeval.api.join_scores`` imports the metrics then).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from unstereo.unstereoeval.score.cli import score_settings, scorer_options, scorer_request

if TYPE_CHECKING:
    from unstereo.unstereoeval.benchmarks.maxpmi import add_max_pmi
    from unstereo.unstereoeval.eta import eta_label
    from unstereo.unstereoeval.lexicon import load_pairs
    from unstereo.unstereoeval.metrics.compute import join_scores, metrics_from_joined
    from unstereo.unstereoeval.vocabulary.english import load_wordnet

__all__ = [
    "add_max_pmi",
    "eta_label",
    "join_scores",
    "load_pairs",
    "load_wordnet",
    "metrics_from_joined",
    "score_settings",
    "scorer_options",
    "scorer_request",
]


def __getattr__(name: str) -> Any:
    """The names of :data:`__all__` that need pandas, imported on first use."""
    if name == "add_max_pmi":
        from unstereo.unstereoeval.benchmarks.maxpmi import add_max_pmi

        return add_max_pmi
    if name == "eta_label":
        from unstereo.unstereoeval.eta import eta_label

        return eta_label
    if name in ("join_scores", "metrics_from_joined"):
        from unstereo.unstereoeval.metrics import compute

        return getattr(compute, name)
    if name == "load_pairs":
        from unstereo.unstereoeval.lexicon import load_pairs

        return load_pairs
    if name == "load_wordnet":
        from unstereo.unstereoeval.vocabulary.english import load_wordnet

        return load_wordnet
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
