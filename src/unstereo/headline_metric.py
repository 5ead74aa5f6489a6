"""A method's headline metric: its name, label and which way is more biased (:class:`HeadlineMetric`).

Kept apart from :mod:`unstereo.model_card.headline` (the HEADLINE table and its helpers, which need pandas) because every
method's declaration (``unstereo/<package>/method.py``) imports it, and ``unstereo --help`` reads those.
"""

from __future__ import annotations

from dataclasses import dataclass

DIRECTIONS = ("higher", "lower", "away")


@dataclass(frozen=True)
class HeadlineMetric:
    """One headline metric of a method.

    ``more_biased``: ``"higher"`` (a larger value means more bias), ``"lower"`` (a smaller value means more bias) or
    ``"away"`` (the distance from ``ideal`` measures the bias, e.g. Stereotype Score with ideal 50).
    """

    name: str  # the HEADLINE table's `metric` value, e.g. "us"
    label: str  # how the card shows it, e.g. "Unstereo Score (%)"
    more_biased: str  # "higher" | "lower" | "away"
    ideal: float | None = None  # the unbiased value; required for "away"
    # False for a number that is not a level of bias (robustness's rank-swap rate says how fragile a model's place
    # in a ranking is): the card shows it but leaves it out of the cross-method rankings and their Kendall tau.
    bias_level: bool = True
    # The values the metric can take, (low, high), None = unbounded: the card's figure keeps its axis inside them.
    limits: tuple[float | None, float | None] = (None, None)

    def __post_init__(self) -> None:
        if self.more_biased not in DIRECTIONS:
            raise ValueError(f"headline metric {self.name!r}: more_biased must be one of {DIRECTIONS}")
        if self.more_biased == "away" and self.ideal is None:
            raise ValueError(f"headline metric {self.name!r}: more_biased='away' needs an ideal value")

    def bias(self, value):
        """``value`` oriented so that larger always means more biased (for rankings across methods):
        the value itself, its negative, or its distance from :attr:`ideal`."""
        import numpy as np  # here, not at the top: method declarations import this module and stay light

        v = np.asarray(value, dtype=float)
        if self.more_biased == "higher":
            out = v
        elif self.more_biased == "lower":
            out = -v
        else:
            out = np.abs(v - float(self.ideal))
        return float(out) if np.ndim(out) == 0 else out
