"""The MaxPMI constraint eta (docs/methods.md#maxpmi-and-eta), in one place: parsing, the filter mask, labels
and order.

A pair is kept under eta when -eta <= MaxPMI <= eta; a pair whose MaxPMI is undefined (no word of its template has
a delta) is kept only when eta is inf (unconstrained).

Valid etas are the numbers >= 0 and inf. eta = 0 is accepted: the constraint is a closed interval, so eta = 0 keeps
exactly the pairs with MaxPMI = 0 (every word of the template equally associated with both genders), the
strictest constraint the definition allows. A negative eta (an empty interval), NaN, a boolean or a word other than
the spellings of infinity is an error.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import overload

import numpy as np
import pandas as pd

INF = math.inf

#: The etas of the paper (Figure 2, Tables 8-22), strictest last.
PAPER_ETAS: tuple[float, ...] = (INF, 1.0, 0.8, 0.65, 0.5, 0.3)

# Spellings of an unconstrained eta: YAML's ".inf", the config's "inf", and the words the CLI has accepted.
_INF_WORDS = frozenset({"inf", "+inf", ".inf", "infinity", "unconstrained", "none"})


def parse_eta(value: float | str) -> float:
    """An eta from a number or a string ("inf", ".inf", "unconstrained", "0.65"); ValueError unless >= 0 or inf."""
    if isinstance(value, str) and value.strip().lower() in _INF_WORDS:
        return INF
    if isinstance(value, bool):  # float(True) == 1.0 would hide a config mistake
        raise ValueError(f"eta must be a number >= 0 or 'inf', got {value!r}")
    try:
        eta = float(value)
    except (TypeError, ValueError):
        raise ValueError(f"eta must be a number >= 0 or 'inf', got {value!r}") from None
    if math.isnan(eta) or eta < 0:
        raise ValueError(f"eta must be a number >= 0 or 'inf', got {value!r}")
    return eta


def parse_etas(values: Iterable[float | str]) -> list[float]:
    """:func:`parse_eta` of each value, in the given order."""
    return [parse_eta(v) for v in values]


def eta_label(eta: float | str) -> str:
    """The eta as file names and table keys write it: ``inf`` or Python's ``str(float(eta))`` (1.0, 0.8, 0.65)."""
    return str(parse_eta(eta))  # str(math.inf) == "inf"


def eta_stem(eta: float | str) -> str:
    """The stem of a per-eta file or table: ``eta-inf``, ``eta-0.65``."""
    return f"eta-{eta_label(eta)}"


def eta_symbol(eta: float | str) -> str:
    """The eta as a figure axis shows it: ``∞`` or the shortest number (1, 0.8, 0.65)."""
    eta = parse_eta(eta)
    return "∞" if math.isinf(eta) else f"{eta:g}"


def sort_etas(etas: Iterable[float | str]) -> list[float]:
    """The distinct etas from the loosest to the strictest (inf first), as the paper lists them."""
    return sorted(set(parse_etas(etas)), reverse=True)


def unique_labels(etas: Iterable[float | str]) -> list[str]:
    """The distinct labels of ``etas`` in their given order (``[inf, 1, 1.0]`` -> ``["inf", "1.0"]``)."""
    return list(dict.fromkeys(eta_label(e) for e in etas))


@overload
def eta_mask(max_pmi: pd.Series, eta: float | str) -> pd.Series: ...
@overload
def eta_mask(max_pmi: np.ndarray, eta: float | str) -> np.ndarray: ...
def eta_mask(max_pmi, eta):
    """Which pairs ``eta`` keeps: -eta <= MaxPMI <= eta; undefined (NaN) MaxPMI only when eta is inf.

    A Series gives a boolean Series on its index; anything else a boolean numpy array.
    """
    eta = parse_eta(eta)
    series = isinstance(max_pmi, pd.Series)
    values = max_pmi.to_numpy(dtype=float, na_value=np.nan) if series else np.asarray(max_pmi, dtype=float)
    if math.isinf(eta):
        keep = np.ones(values.shape, dtype=bool)
    else:
        keep = (values >= -eta) & (values <= eta)  # NaN compares False: undefined MaxPMI is dropped
    return pd.Series(keep, index=max_pmi.index) if series else keep
