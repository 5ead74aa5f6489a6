"""The agreement-on-occupations leans of each model variant against its base's
(docs/methods.md#variants-against-their-bases): does an intervention flatten a method's lean against the share of
women in the occupation, and do the other methods' leans follow?

For every measure of the :data:`~unstereo.model_card.occupations.OCCUPATION_LEANS` table (method / its variant of
items), every model variant and its base, over the occupations both have with a share of women: the least-squares
slope of the lean on the share (BLS and Bergsma, % women; a magnitude such as FairPair's F on |share - 50|, as the
card's correlations take it) for the base and for the variant, and the change of steepness ``|slope_variant| -
|slope_base|`` (< 0 = flatter), with a paired bootstrap over occupations (the same resample of occupations for
both; :func:`unstereo.model_card.compare.bootstrap_indices`, p by :func:`~unstereo.model_card.compare.bootstrap_p`)
and Holm over every row.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from unstereo.model_card.compare import ALPHA, N_BOOT, bootstrap_indices, bootstrap_p, fmt_p, holm
from unstereo.model_card.variant_models import VariantOf
from unstereo.tables import TableSchema, columns, validate

FLATTER, STEEPER, UNKNOWN = "flatter", "steeper", "cannot tell"

VARIANT_OCCUPATIONS = TableSchema(
    "model_card_variant_occupations",
    "each model variant's per-occupation lean against its base's: slopes against the share of women and the change "
    "of steepness, paired bootstrap over occupations, Holm over every row "
    "(`results/model_card_variant_occupations.parquet`)",
    columns("""
        measure        str     method / variant of items, as in occupation_correlations
        kind           str     `lean` (signed), `magnitude` or `sentiment`
        yardstick      str     `bls` or `bergsma` (the share of women)
        variant        str     the model variant
        base           str     its base
        intervention   str     its intervention
        strength       float   its strength (0 for the control)
        n              int     occupations both have, with a share
        slope_base     float?  least-squares slope of the base's lean on the share (a magnitude: on |share - 50|),
                               lean units per percentage point
        slope_variant  float?  the variant's
        steepness      float?  |slope_variant| - |slope_base| (< 0 = the variant's lean is flatter)
        ci_low         float?  low end of the 95 % paired-bootstrap percentile interval of steepness
        ci_high        float?  high end
        p_value        float?  two-sided paired-bootstrap p of steepness = 0
        p_holm         float?  Holm-adjusted p (family: every row)
        verdict        str     `flatter`, `steeper` (p_holm < 0.05) or `cannot tell`
    """),
    unique=("measure", "yardstick", "variant"),
)

_SHARES = {"bls": "bls_pct_female", "bergsma": "bergsma_pct_female"}


def slope(x, y) -> np.ndarray:
    """Least-squares slope of ``y`` on ``x`` (the last axis; rows of a 2-d array are separate fits); NaN where
    ``x`` is constant."""
    x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    xc = x - x.mean(axis=-1, keepdims=True)
    yc = y - y.mean(axis=-1, keepdims=True)
    den = (xc**2).sum(axis=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return np.where(den > 0, (xc * yc).sum(axis=-1) / np.where(den > 0, den, 1.0), np.nan)


def slope_change(x, y_base, y_variant, seed: int = 0, n_boot: int = N_BOOT) -> dict:
    """Slopes of the base's and the variant's leans on ``x`` (one value per occupation, both paired with it) and the
    change of steepness |slope_variant| - |slope_base| with its paired bootstrap over occupations (95 % percentile
    interval, two-sided p)."""
    x, yb, yv = (np.asarray(a, dtype=float) for a in (x, y_base, y_variant))
    sb, sv = float(slope(x, yb)), float(slope(x, yv))
    observed = abs(sv) - abs(sb)
    out = dict(n=len(x), slope_base=sb, slope_variant=sv, steepness=observed, ci_low=math.nan, ci_high=math.nan,
               p_value=math.nan)  # fmt: skip
    if len(x) < 3 or not np.isfinite(observed):
        return out
    rs = bootstrap_indices(len(x), n_boot, seed)
    d = np.abs(slope(x[rs], yv[rs])) - np.abs(slope(x[rs], yb[rs]))
    fin = d[np.isfinite(d)]
    if fin.size:
        out["ci_low"], out["ci_high"] = (float(v) for v in np.percentile(fin, [2.5, 97.5]))
    out["p_value"] = bootstrap_p(d, 1e-9 * max(1.0, abs(observed)))
    return out


def variant_slopes(leans: pd.DataFrame, variants: list[VariantOf], seed: int = 0,
                   n_boot: int = N_BOOT) -> pd.DataFrame:  # fmt: skip
    """The :data:`VARIANT_OCCUPATIONS` table of an OCCUPATION_LEANS table: per measure, yardstick and variant
    whose base has the measure too, over the occupations both have with a finite lean and share."""
    rows = []
    measure = [f"{m} / {v}" for m, v in zip(leans["method"], leans["variant"], strict=True)]
    leans = leans.assign(measure=measure)
    leans = leans[np.isfinite(leans["lean"].astype(float))]
    by = {k: g.set_index("occupation") for k, g in leans.groupby(["model", "measure"], sort=False)}
    for m in dict.fromkeys(leans["measure"]):
        for v in variants:
            gb, gv = by.get((v.base, m)), by.get((v.model, m))
            if not v.base or gb is None or gv is None:
                continue
            kind = str(gb["kind"].iloc[0])
            for name, col in _SHARES.items():
                share = gb[col].astype(float)
                occ = sorted(set(share.index[np.isfinite(share)]) & set(gv.index))
                if len(occ) < 2:
                    continue
                x = share[occ].to_numpy(float)
                x = np.abs(x - 50) if kind == "magnitude" else x
                res = slope_change(x, gb.loc[occ, "lean"].to_numpy(float), gv.loc[occ, "lean"].to_numpy(float),
                                   seed, n_boot)  # fmt: skip
                rows.append(dict(measure=m, kind=kind, yardstick=name, variant=v.model, base=v.base,
                                 intervention=v.intervention, strength=v.strength, **res))  # fmt: skip
    cols = [c for c in VARIANT_OCCUPATIONS.names if c not in ("p_holm", "verdict")]
    df = pd.DataFrame(rows, columns=cols).astype({"n": "int64", "strength": float, "p_value": float})
    df["p_holm"] = holm(df["p_value"]) if len(df) else pd.Series(dtype=float)
    df["verdict"] = [
        (FLATTER if s < 0 else STEEPER) if np.isfinite(p) and p < ALPHA else UNKNOWN
        for s, p in zip(df["steepness"], df["p_holm"], strict=True)
    ]
    return validate(df[VARIANT_OCCUPATIONS.names], VARIANT_OCCUPATIONS)


def findings(slopes: pd.DataFrame, alpha: float = ALPHA) -> list[str]:
    """Per variant and yardstick: which measures' leans flatten, steepen or cannot be told apart from the base's
    (led by the first measure, e.g. UnStereoEval's Winogender lean), chosen by the numbers."""
    if not len(slopes):
        return ["No occupation lean was measured for both a variant and its base."]
    out = []
    for (variant, yardstick), g in slopes.groupby(["variant", "yardstick"], sort=False):
        r0 = g.iloc[0]
        lead = (
            f"{r0.measure}: slope against the share of women ({yardstick}) {r0.slope_base:.3g} under {r0.base}, "
            f"{r0.slope_variant:.3g} under {variant} ({r0.intervention}), "
            + (f"{r0.verdict} (adjusted p = {fmt_p(r0.p_holm)})" if r0.verdict != UNKNOWN
               else f"not shown flatter or steeper (adjusted p = {fmt_p(r0.p_holm)}, {int(r0.n)} occupations)")
        )  # fmt: skip
        rest = g.iloc[1:]
        groups = {k: list(h["measure"]) for k, h in rest.groupby("verdict", sort=False)}
        follow = "; ".join(f"{k}: {', '.join(v)}" for k, v in groups.items())
        if len(rest):
            same = (rest["verdict"] == r0.verdict).all()
            lead += f"; the other measures: {follow} ({'all' if same else 'not all'} the same as the first)"
        out.append(lead + ".")
    return out
