"""The eta rules of unstereo.unstereoeval.eta (docs/methods.md#maxpmi-and-eta), shared by the benchmarks, metrics and
report stages."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.unstereoeval.eta import (
    PAPER_ETAS,
    eta_label,
    eta_mask,
    eta_stem,
    eta_symbol,
    parse_eta,
    parse_etas,
    sort_etas,
    unique_labels,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ("inf", math.inf),
        (".inf", math.inf),  # YAML's spelling, when it arrives as a string
        ("Infinity", math.inf),
        ("unconstrained", math.inf),
        (math.inf, math.inf),
        ("0.65", 0.65),
        (1, 1.0),
        (0, 0.0),  # the strictest bound: keeps MaxPMI = 0 only
        ("0", 0.0),
        (np.float64(0.3), 0.3),
    ],
)
def test_parse_eta_accepts_numbers_from_zero_and_inf(value, expected):
    assert parse_eta(value) == expected


@pytest.mark.parametrize("value", [-0.1, "-1", -math.inf, "nan", math.nan, "abc", "", None, True, False])
def test_parse_eta_rejects_negative_nan_words_and_booleans(value):
    with pytest.raises(ValueError, match="eta must be a number >= 0 or 'inf'"):
        parse_eta(value)


def test_labels_stems_and_symbols():
    assert [eta_label(e) for e in ("inf", 1, 0.8, "0.65", 0, ".inf")] == [
        "inf",
        "1.0",
        "0.8",
        "0.65",
        "0.0",
        "inf",
    ]
    assert eta_stem(math.inf) == "eta-inf" and eta_stem("0.5") == "eta-0.5"
    assert [eta_symbol(e) for e in (math.inf, 1.0, 0.65)] == ["∞", "1", "0.65"]


def test_order_and_uniqueness():
    assert sort_etas([0.3, "inf", 1, 0.65, 1.0, 0]) == [math.inf, 1.0, 0.65, 0.3, 0.0]
    assert unique_labels(["inf", 1, 1.0, 0.8, ".inf"]) == ["inf", "1.0", "0.8"]
    assert parse_etas(["inf", "0.5"]) == [math.inf, 0.5]
    assert sort_etas(PAPER_ETAS) == list(PAPER_ETAS)  # the paper lists them loosest first


def test_mask_bounds_inclusive_nan_only_at_inf_series_and_array():
    values = [0.1, -0.8, 0.81, np.nan, 0.0, -0.0]
    series = pd.Series(values, index=[10, 11, 12, 13, 14, 15])
    kept = eta_mask(series, 0.8)
    assert isinstance(kept, pd.Series) and list(kept.index) == [10, 11, 12, 13, 14, 15]
    assert kept.tolist() == [True, True, False, False, True, True]
    assert eta_mask(series, "inf").tolist() == [True] * 6
    assert eta_mask(series, 0).tolist() == [False, False, False, False, True, True]
    arr = eta_mask(np.array(values), 0.1)
    assert isinstance(arr, np.ndarray) and arr.tolist() == [True, False, False, False, True, True]
    # nullable dtypes and None count as undefined
    assert eta_mask(pd.Series([0.2, None], dtype="Float64"), 1.0).tolist() == [True, False]
    assert eta_mask(pd.Series([0.2, None], dtype=object), math.inf).tolist() == [True, True]
    with pytest.raises(ValueError):
        eta_mask(series, -1)
