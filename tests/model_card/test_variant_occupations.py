"""The per-occupation leans of a variant against its base's: slopes against the share of women by hand."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from unstereo.model_card.compare import bootstrap_indices
from unstereo.model_card.occupations import OCCUPATION_LEANS
from unstereo.model_card.variant_models import VariantOf
from unstereo.model_card.variant_occupations import (
    VARIANT_OCCUPATIONS,
    findings,
    slope,
    slope_change,
    variant_slopes,
)
from unstereo.tables import validate

SHARE = {"nurse": 90.0, "clerk": 50.0, "engineer": 10.0}
CDA = VariantOf("m-cda", "m", "m-cda", "cda", 0.5)
CTRL = VariantOf("m-ctl", "m", "m-ctl", "control", 0.0)


def _leans(values: dict[tuple[str, str], dict[str, float]], kind: dict[str, str]) -> pd.DataFrame:
    """(model, method) -> occupation -> lean, as an OCCUPATION_LEANS table (Bergsma's share = BLS's)."""
    rows = []
    for (model, method), by_occ in values.items():
        for occ, lean in by_occ.items():
            rows.append(dict(model=model, method=method, variant="all", occupation=occ, term=occ, kind=kind[method],
                             lean=lean, unit="u", n_items=2, neutral_share=np.nan, bls_pct_female=SHARE[occ],
                             bergsma_pct_female=SHARE[occ]))  # fmt: skip
    return validate(pd.DataFrame(rows).astype({"n_items": "int64"}), OCCUPATION_LEANS)


def test_slope_by_hand():
    # x = (10, 50, 90), y = (2, 0, -2): slope = sum(xc * yc) / sum(xc^2) = (-40 * 2 + 40 * -2) / 3200 = -0.05
    assert slope([10, 50, 90], [2, 0, -2]) == pytest.approx(-0.05)
    assert np.isnan(slope([5, 5, 5], [1, 2, 3]))


def test_slope_change_a_lean_halved_is_flatter():
    # the variant's lean is the base's halved: slope -0.025 against -0.05, steepness -0.025; on every resample of
    # the occupations with two distinct shares the same holds (d < 0), so p is the floor 1 / (finite + 1)
    x, yb = np.array([10.0, 50, 90]), np.array([2.0, 0, -2])
    out = slope_change(x, yb, yb / 2)
    assert out["slope_base"] == pytest.approx(-0.05) and out["slope_variant"] == pytest.approx(-0.025)
    assert out["steepness"] == pytest.approx(-0.025)
    rs = bootstrap_indices(3, seed=0)
    finite = int(sum(np.ptp(x[r]) > 0 for r in rs))
    assert out["p_value"] == pytest.approx(1 / (finite + 1))
    assert out["ci_high"] < 0
    same = slope_change(x, yb, yb.copy())
    assert same["steepness"] == 0.0 and same["p_value"] == 1.0


def test_variant_slopes_by_hand():
    # unstereoeval: base slope -0.05, cda halves it (flatter), the control keeps it (cannot tell);
    # fairpair (a magnitude) on |share - 50| = (40, 0, 40): base (1, 0, 1) slope 0.025, cda (2, 0, 2) 0.05: steeper
    leans = _leans({
        ("m", "unstereoeval"): {"nurse": -2.0, "clerk": 0.0, "engineer": 2.0},
        ("m-cda", "unstereoeval"): {"nurse": -1.0, "clerk": 0.0, "engineer": 1.0},
        ("m-ctl", "unstereoeval"): {"nurse": -2.0, "clerk": 0.0, "engineer": 2.0},
        ("m", "fairpair"): {"nurse": 1.0, "clerk": 0.0, "engineer": 1.0},
        ("m-cda", "fairpair"): {"nurse": 2.0, "clerk": 0.0, "engineer": 2.0},
    }, {"unstereoeval": "lean", "fairpair": "magnitude"})  # fmt: skip
    t = variant_slopes(leans, [CDA, CTRL])
    validate(t, VARIANT_OCCUPATIONS)
    bls = t[t["yardstick"] == "bls"].set_index(["measure", "variant"])
    assert bls.loc[("unstereoeval / all", "m-cda"), "slope_base"] == pytest.approx(-0.05)
    assert bls.loc[("unstereoeval / all", "m-cda"), "slope_variant"] == pytest.approx(-0.025)
    assert bls.loc[("fairpair / all", "m-cda"), "slope_base"] == pytest.approx(0.025)
    assert bls.loc[("fairpair / all", "m-cda"), "steepness"] == pytest.approx(0.025)
    # 3 (measure, variant) pairs with a base x 2 yardsticks; the control has no fairpair lean
    assert len(t) == 6
    verdicts = dict(zip(bls.index, bls["verdict"], strict=True))
    assert verdicts == {("unstereoeval / all", "m-cda"): "flatter", ("unstereoeval / all", "m-ctl"): "cannot tell",
                        ("fairpair / all", "m-cda"): "steeper"}  # fmt: skip
    s = findings(t)
    first = next(x for x in s if x.startswith("unstereoeval / all") and "m-cda" in x and "(bls)" in x)
    assert "flatter" in first and "fairpair / all" in first and "not all the same as the first" in first
