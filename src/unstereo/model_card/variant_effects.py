"""Intervene, then measure: every model variant against its base under every headline metric, on the same items,
with the card's paired tests (docs/methods.md#variants-against-their-bases).

- :func:`change_tests` (:data:`VARIANT_CHANGES`): per (metric, variant) the change from the base, oriented like the
  card (``bias(variant) - bias(base)``, > 0 = the variant is more biased), tested by the card's paired permutation
  test (metrics with per-item values) or its paired bootstrap (metrics that are another statistic of items), with
  a 95 % paired-bootstrap percentile interval of the change; Holm over every row (one family, apart from the
  card's between-model family); ``moves``: `less biased`, `more biased` or `does not move` at Holm p < 0.05.
- :func:`dose_response` (:data:`VARIANT_DOSE`): per (metric, base, intervention) with at least two strengths, the
  Spearman rank correlation of strength with the change, exact permutation p (the card's occupation test,
  :func:`unstereo.model_card.occupations.stratified_test`), Holm over the family. The series is the intervention's
  variants only: neither the base nor the control is put in as a strength 0 (they differ from the variants by more
  than the strength: the base by not being fine-tuned at all, the control by another intervention).
- :func:`together` (:data:`VARIANT_TOGETHER`): per intervention, base and metric, how the metric moves over the
  intervention's variants (`less biased`, `more biased`, `does not move`, `mixed`), and whether that is the same on
  every base.
- :func:`findings`: sentences chosen by those numbers.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable

import numpy as np
import pandas as pd

from unstereo.headline_metric import HeadlineMetric
from unstereo.model_card.compare import (
    ALPHA,
    N_BOOT,
    N_PERM,
    bootstrap_indices,
    bootstrap_p,
    fmt_p,
    holm,
    paired_permutation,
    permutation_min_p,
    untied,
)
from unstereo.model_card.headline import Resampled
from unstereo.model_card.variant_models import VariantOf
from unstereo.tables import TableSchema, columns, validate

LEVEL = 0.95  # of the paired-bootstrap interval of a change
LESS, MORE, STILL, MIXED = "less biased", "more biased", "does not move", "mixed"

VARIANT_CHANGES = TableSchema(
    "model_card_variant_changes",
    "each model variant against its base under every headline metric that is a level of bias, over the items both "
    "were measured on: the card's paired test, a paired-bootstrap interval, Holm over every row "
    "(`results/model_card_variants.parquet`)",
    columns("""
        method         str     the metric's method
        metric         str     the headline metric
        variant        str     the variant's short name on the card
        base           str     its base's short name (from the variant's record)
        intervention   str     cda, control, embedding or sentiment (from the record)
        strength       float   the intervention's strength (0 for the control)
        n_items        int     items both have a value for
        n_untied       int?    permutation tests: shared items whose two values differ (empty: bootstrap test)
        value_base     float?  the metric of the base over the shared items
        value_variant  float?  the metric of the variant over them
        change         float?  value_variant - value_base, in the metric's own units
        bias_change    float?  bias(variant) - bias(base): > 0 = the variant is more biased
        ci_low         float?  low end of the paired-bootstrap percentile interval of bias_change (95 %)
        ci_high        float?  high end
        p_value        float?  two-sided p of the card's paired test
        min_p          float?  the smallest p the test can reach
        p_holm         float?  Holm-adjusted p (family: every row of this table)
        moves          str     `less biased`, `more biased` (p_holm < 0.05, by the sign of bias_change) or
                               `does not move`
        test           str     `exact`, `random (N patterns)` or `bootstrap (B rounds)`
    """),
    unique=("method", "metric", "variant"),
)

VARIANT_DOSE = TableSchema(
    "model_card_variant_dose",
    "dose-response: per (metric, base, intervention) with two or more strengths, Spearman's rho of strength with "
    "bias_change over the intervention's variants (the base and the control not among them) "
    "(`results/model_card_variant_dose.parquet`)",
    columns("""
        method        str     the metric's method
        metric        str     the headline metric
        base          str     the base model
        intervention  str     the intervention
        n_strengths   int     variants in the series
        strengths     str     their strengths, ascending, comma-separated
        spearman      float?  rho of strength with bias_change (< 0 = the stronger, the less biased)
        p_value       float?  two-sided permutation p (exact up to 8 strengths)
        min_p         float?  the smallest p reachable (2 / n! exact)
        test          str     `exact (N permutations)` or `random (N permutations)`
        p_holm        float?  Holm-adjusted p (family: every row of this table)
        verdict       str     `less biased with strength` (p_holm < 0.05, rho < 0), `more biased with
                              strength` (rho > 0) or `cannot tell`
    """),
    unique=("method", "metric", "base", "intervention"),
)

VARIANT_TOGETHER = TableSchema(
    "model_card_variant_together",
    "whether the methods move together: per (intervention, base, metric) how the metric moves over the "
    "intervention's variants of that base, and whether it moves so on every base "
    "(`results/model_card_variant_together.parquet`)",
    columns("""
        intervention        str  the intervention
        method              str  the metric's method
        metric              str  the headline metric
        base                str  the base model
        n_variants          int  the intervention's variants of this base measured by the metric
        moves               str  `less biased` / `more biased` (every variant that moves moves so, Holm p <
                                 0.05), `mixed` (some each way) or `does not move` (none moves)
        same_across_bases   str  `yes` (every base: the same `moves`), `no`, or `one base`
    """),
    unique=("intervention", "method", "metric", "base"),
)


def _weighted(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    return (x * w).sum(axis=-1) / w.sum(axis=-1)


def item_change(
    base: np.ndarray, variant: np.ndarray, weight: np.ndarray, bias: Callable, seed: int = 0,
    n_perm: int = N_PERM, n_boot: int = N_BOOT,
) -> dict:  # fmt: skip
    """The change of a (weighted) mean metric from ``base`` to ``variant`` (paired per-item values): the card's
    paired permutation test (:func:`unstereo.model_card.compare.paired_permutation`, of bias(variant) -
    bias(base)) and a paired-bootstrap percentile interval of that difference (``n_boot`` resamples of the items,
    :func:`unstereo.model_card.compare.bootstrap_indices`, the same for both)."""
    base, variant, weight = (np.asarray(a, dtype=float) for a in (base, variant, weight))
    diff, p, kind = paired_permutation(variant, base, weight, bias, n_perm, seed)
    u = untied(variant, base)
    lo = hi = math.nan
    if len(base):
        rs = bootstrap_indices(len(base), n_boot, seed)
        w = weight[rs]
        d = np.asarray(bias(_weighted(variant[rs], w)), float) - np.asarray(
            bias(_weighted(base[rs], w)), float
        )
        lo, hi = _interval(d)
    vb = float(_weighted(base, weight)) if len(base) else math.nan
    vv = float(_weighted(variant, weight)) if len(base) else math.nan
    return dict(n_items=len(base), n_untied=u, value_base=vb, value_variant=vv, bias_change=diff, ci_low=lo,
                ci_high=hi, p_value=p, min_p=permutation_min_p(u, n_perm) if len(base) else math.nan,
                test=kind)  # fmt: skip


def _interval(d: np.ndarray, level: float = LEVEL) -> tuple[float, float]:
    d = np.asarray(d, dtype=float)
    d = d[np.isfinite(d)]
    if not d.size:
        return math.nan, math.nan
    tail = 100 * (1 - level) / 2
    lo, hi = np.percentile(d, [tail, 100 - tail])
    return float(lo), float(hi)


def resampled_change(base: Resampled, variant: Resampled, bias: Callable, seed: int = 0,
                     n_boot: int = N_BOOT) -> dict:  # fmt: skip
    """The change of a metric that is a statistic of items (``Resampled``) from ``base`` to ``variant`` over their
    shared items: the card's paired bootstrap (the same resamples for both, drawn within the strata; p by
    :func:`unstereo.model_card.compare.bootstrap_p`) and the percentile interval of the same resampled
    differences."""
    shared = sorted(set(base.items) & set(variant.items))
    empty = dict(n_items=0, n_untied=None, value_base=math.nan, value_variant=math.nan, bias_change=math.nan,
                 ci_low=math.nan, ci_high=math.nan, p_value=math.nan, min_p=math.nan, test="")  # fmt: skip
    if not shared:
        return empty
    pos_b = pd.Series(range(len(base.items)), index=list(base.items))[shared].to_numpy()
    pos_v = pd.Series(range(len(variant.items)), index=list(variant.items))[shared].to_numpy()
    strata = None
    for r, pos in ((base, pos_b), (variant, pos_v)):
        if r.strata is not None:
            strata = tuple(np.asarray(r.strata, dtype=object)[pos])
            break
    rs = bootstrap_indices(len(shared), n_boot, seed, strata)
    vb, vv = float(base.statistic(pos_b)), float(variant.statistic(pos_v))
    boot_b = np.array([base.statistic(pos_b[i]) for i in rs], dtype=float)
    boot_v = np.array([variant.statistic(pos_v[i]) for i in rs], dtype=float)
    observed = float(bias(vv) - bias(vb))
    d = np.asarray(bias(boot_v), float) - np.asarray(bias(boot_b), float)
    tol = 1e-9 * max(1.0, abs(observed)) if np.isfinite(observed) else 0.0
    finite = int(np.isfinite(d).sum())
    lo, hi = _interval(d)
    kind = (
        f"bootstrap ({len(d)} rounds)"
        if finite == len(d)
        else f"bootstrap ({finite} of {len(d)} rounds finite)"
    )
    return dict(n_items=len(shared), n_untied=None, value_base=vb, value_variant=vv, bias_change=observed,
                ci_low=lo, ci_high=hi, p_value=bootstrap_p(d, tol),
                min_p=1.0 / (finite + 1) if finite else math.nan, test=kind)  # fmt: skip


def moves(bias_change: float, p_holm: float, alpha: float = ALPHA) -> str:
    """`less biased` / `more biased` when the Holm-adjusted p is below ``alpha`` (by the sign of the oriented
    change), else `does not move`."""
    if not (np.isfinite(p_holm) and p_holm < alpha) or not np.isfinite(bias_change) or bias_change == 0:
        return STILL
    return MORE if bias_change > 0 else LESS


def change_tests(
    card: pd.DataFrame,
    items: pd.DataFrame,
    info: dict[tuple[str, str], HeadlineMetric],
    variants: list[VariantOf],
    resampled: list[Resampled] | None = None,
    seed: int = 0,
    n_perm: int = N_PERM,
    n_boot: int = N_BOOT,
) -> pd.DataFrame:
    """The :data:`VARIANT_CHANGES` table: for every (method, metric) of ``card`` that is a level of bias and every
    variant of ``variants`` whose base the metric also measured, the change from the base over their shared items
    (:func:`item_change` where ``items`` has both models' values, else :func:`resampled_change` where
    ``resampled`` has both), in the card's order of metrics; Holm over every row."""
    rows = []
    by_items = {k: g for k, g in items.groupby(["method", "metric"], sort=False)}
    by_res: dict[tuple[str, str], dict[str, Resampled]] = {}
    for r in resampled or []:
        by_res.setdefault((r.method, r.metric), {})[r.model] = r
    for key in dict.fromkeys(zip(card["method"], card["metric"], strict=True)):
        hm = info.get(key)
        if hm is None or not hm.bias_level:
            continue
        g = by_items.get(key)
        per_model = {m: x.set_index("item") for m, x in g.groupby("model")} if g is not None else {}
        res = by_res.get(key, {})
        for v in variants:
            if not v.base:
                continue
            if v.model in per_model and v.base in per_model:
                gb, gv = per_model[v.base], per_model[v.model]
                ok_b, ok_v = gb.index[np.isfinite(gb["value"])], gv.index[np.isfinite(gv["value"])]
                shared = sorted(set(ok_b) & set(ok_v))
                w = (gb.loc[shared, "weight"].to_numpy() + gv.loc[shared, "weight"].to_numpy()) / 2
                out = item_change(gb.loc[shared, "value"].to_numpy(), gv.loc[shared, "value"].to_numpy(), w,
                                  hm.bias, seed, n_perm, n_boot)  # fmt: skip
            elif v.model in res and v.base in res:
                out = resampled_change(res[v.base], res[v.model], hm.bias, seed, n_boot)
            else:
                continue
            rows.append(dict(method=key[0], metric=key[1], variant=v.model, base=v.base,
                             intervention=v.intervention, strength=v.strength, **out))  # fmt: skip
    cols = [c for c in VARIANT_CHANGES.names if c not in ("change", "p_holm", "moves")]
    df = pd.DataFrame(rows, columns=cols)
    df = df.astype({"n_items": "int64", "n_untied": "Int64", "strength": float, "min_p": float})
    df["change"] = df["value_variant"].astype(float) - df["value_base"].astype(float)
    df["p_holm"] = holm(df["p_value"]) if len(df) else pd.Series(dtype=float)
    df["moves"] = [moves(d, p) for d, p in zip(df["bias_change"], df["p_holm"], strict=True)]
    return validate(df[VARIANT_CHANGES.names], VARIANT_CHANGES)


def dose_response(changes: pd.DataFrame, n_perm: int = N_PERM, seed: int = 0) -> pd.DataFrame:
    """The :data:`VARIANT_DOSE` table of a :data:`VARIANT_CHANGES` table: per (metric, base, intervention) other
    than the control with at least two distinct strengths, Spearman's rho of strength with ``bias_change`` and its
    exact permutation p (:func:`unstereo.model_card.occupations.stratified_test`); Holm over the rows."""
    from unstereo.model_card.occupations import stratified_test

    rows = []
    ok = changes[(changes["intervention"] != "control") & np.isfinite(changes["bias_change"].astype(float))]
    for (method, metric, base, intervention), g in ok.groupby(
        ["method", "metric", "base", "intervention"], sort=False
    ):
        if g["strength"].nunique() < 2:
            continue
        g = g.sort_values("strength", kind="stable")
        t = stratified_test([(g["strength"].to_numpy(float), g["bias_change"].to_numpy(float))], n_perm, seed)
        rows.append(dict(method=method, metric=metric, base=base, intervention=intervention, n_strengths=len(g),
                         strengths=", ".join(f"{s:g}" for s in g["strength"]), spearman=t["spearman"],
                         p_value=t["spearman_p"], min_p=t["min_p"], test=t["test"]))  # fmt: skip
    cols = [c for c in VARIANT_DOSE.names if c not in ("p_holm", "verdict")]
    df = pd.DataFrame(rows, columns=cols).astype({"n_strengths": "int64", "spearman": float, "p_value": float,
                                                   "min_p": float})  # fmt: skip
    df["p_holm"] = holm(df["p_value"]) if len(df) else pd.Series(dtype=float)
    df["verdict"] = [
        ("less biased with strength" if r < 0 else "more biased with strength")
        if p < ALPHA
        else "cannot tell"
        for r, p in zip(df["spearman"], df["p_holm"].fillna(1.0), strict=True)
    ]
    return validate(df[VARIANT_DOSE.names], VARIANT_DOSE)


def classify(moved: list[str]) -> str:
    """How a metric moves over several variants: each variant's ``moves``; `does not move` when none moves, the
    one direction when all that move share it, `mixed` otherwise."""
    ways = {m for m in moved if m != STILL}
    if not ways:
        return STILL
    return ways.pop() if len(ways) == 1 else MIXED


def together(changes: pd.DataFrame) -> pd.DataFrame:
    """The :data:`VARIANT_TOGETHER` table of a :data:`VARIANT_CHANGES` table: per (intervention, metric, base)
    :func:`classify` over the intervention's variants of that base, and whether every base the metric measured
    under the intervention gives the same class."""
    rows = []
    for (intervention, method, metric, base), g in changes.groupby(
        ["intervention", "method", "metric", "base"], sort=False
    ):
        rows.append(dict(intervention=intervention, method=method, metric=metric, base=base, n_variants=len(g),
                         moves=classify(list(g["moves"]))))  # fmt: skip
    df = pd.DataFrame(rows, columns=[c for c in VARIANT_TOGETHER.names if c != "same_across_bases"])
    df = df.astype({"n_variants": "int64"})
    same = []
    for r in df.itertuples(index=False):
        g = df[
            (df["intervention"] == r.intervention) & (df["method"] == r.method) & (df["metric"] == r.metric)
        ]
        same.append("one base" if len(g) < 2 else ("yes" if g["moves"].nunique() == 1 else "no"))
    df["same_across_bases"] = same
    return validate(df[VARIANT_TOGETHER.names], VARIANT_TOGETHER)


# ---- findings ----------------------------------------------------------------------------------------------------


def _label(info: dict, method: str, metric: str) -> str:
    hm = info.get((method, metric))
    return f"{method}: {hm.label if hm else metric}"


def _num(v: float) -> str:
    return "NaN" if v is None or not np.isfinite(v) else f"{v:.3g}"


def findings(
    changes: pd.DataFrame,
    dose: pd.DataFrame,
    moved: pd.DataFrame,
    info: dict[tuple[str, str], HeadlineMetric],
    variants: list[VariantOf],
    perplexity: pd.DataFrame | None = None,
    alpha: float = ALPHA,
) -> list[str]:
    """Sentences stating what the variant tables show, each chosen by the numbers: per variant which metrics move
    (with the change, its interval and adjusted p), which cannot move at all (smallest p above ``alpha``), its
    perplexity against its base; per intervention whether the methods move together and whether the control moves
    the same metrics; the dose-response rows."""
    out = []
    for v in variants:
        if not v.base:
            out.append(f"{v.model}: its base is measured by no method on the card; nothing to compare.")
    for v in [v for v in variants if v.base]:
        t = changes[changes["variant"] == v.model]
        what = f"{v.model} ({v.intervention}" + (
            f", strength {v.strength:g}" if v.intervention != "control" else ""
        )
        what += f") against {v.base}"
        if not len(t):
            out.append(f"{what}: no metric measured both.")
            continue
        moved_rows = t[t["moves"] != STILL]
        parts = [
            f"{_label(info, r.method, r.metric)} {r.moves} ({_num(r.value_base)} -> {_num(r.value_variant)}; "
            f"bias change {_num(r.bias_change)} [{_num(r.ci_low)}, {_num(r.ci_high)}], adjusted p = "
            f"{fmt_p(r.p_holm)})"
            for r in moved_rows.itertuples(index=False)
        ]
        still = t[(t["moves"] == STILL) & (t["min_p"] < alpha)]
        blind = t[~(t["min_p"] < alpha)]
        sentence = f"{what}: " + ("; ".join(parts) if parts else "no metric moves after Holm correction")
        if len(still):
            sentence += (
                f"; does not move: {', '.join(_label(info, r.method, r.metric) for r in still.itertuples())} "
                f"(smallest adjusted p = {fmt_p(still['p_holm'].min())})"
            )
        if len(blind):
            sentence += (
                f"; cannot show a change with these items (smallest reachable p >= {alpha:g}): "
                f"{', '.join(_label(info, r.method, r.metric) for r in blind.itertuples())}"
            )
        out.append(sentence + ".")
        if perplexity is not None and len(perplexity):
            p = perplexity[perplexity["variant"] == v.name]
            if len(p):
                ratio = float(p["ppl_ratio"].iloc[0])
                way = "worse" if ratio > 1 else "better"
                out.append(
                    f"{v.model} models held-out text {way} than {v.base}: perplexity "
                    f"{float(p['ppl_variant'].iloc[0]):.4g} against {float(p['ppl_base'].iloc[0]):.4g} "
                    f"(ratio {ratio:.4g})."
                )
    for a, b in itertools.combinations([v for v in variants if v.base], 2):
        ta = changes[changes["variant"] == a.model].set_index(["method", "metric"])["value_variant"]
        tb = changes[changes["variant"] == b.model].set_index(["method", "metric"])["value_variant"]
        shared = ta.index.intersection(tb.index)
        if (
            a.base == b.base
            and len(shared)
            and np.allclose(ta[shared], tb[shared], rtol=0, atol=0, equal_nan=True)
        ):
            out.append(
                f"{a.model} ({a.intervention}) and {b.model} ({b.intervention}) give the same value on every "
                f"metric both were measured on ({len(shared)}): at these settings their fine-tunes did not tell "
                "them apart."
            )
    for intervention, g in moved.groupby("intervention", sort=False):
        bases = list(dict.fromkeys(g["base"]))
        classes: dict[str, list[str]] = {}
        for key, h in g.groupby(["method", "metric"], sort=False):
            cls = h["moves"].iloc[0] if h["moves"].nunique() == 1 else "differs between bases"
            classes.setdefault(cls, []).append(_label(info, *key))
        parts = [f"{cls}: {', '.join(ms)}" for cls, ms in classes.items()]
        where = f"base {bases[0]}" if len(bases) == 1 else f"{len(bases)} bases"
        same = (
            "one base only, so whether it holds across base models is not shown"
            if len(bases) == 1
            else (
                "the same on every base"
                if (g["same_across_bases"] == "yes").all()
                else "not the same on every base"
            )
        )
        together_word = (
            "the methods move together"
            if len(classes) == 1
            and STILL not in classes
            and "differs between bases" not in classes
            and MIXED not in classes
            else "the methods do not move together"
            if len(classes) > 1
            else "no method moves"
        )
        out.append(f"Under {intervention} ({where}): {'; '.join(parts)}; {together_word} ({same}).")
    ctrl = moved[moved["intervention"] == "control"].set_index(["base", "method", "metric"])["moves"]
    for intervention, g in moved[moved["intervention"] != "control"].groupby("intervention", sort=False):
        shared = [
            _label(info, r.method, r.metric) + f" on {r.base}"
            for r in g.itertuples(index=False)
            if r.moves not in (STILL, MIXED) and ctrl.get((r.base, r.method, r.metric)) == r.moves
        ]
        if shared:
            out.append(
                f"The control fine-tune moves {', '.join(shared)} the same way as {intervention}: those changes "
                "come with fine-tuning on this text, not with the intervention."
            )
    if not len(dose):
        out.append(
            "No base has two or more strengths of one intervention: no dose-response (the control and the base "
            "are not counted as strengths)."
        )
    for r in dose.itertuples(index=False):
        floor = "" if not (np.isfinite(r.min_p) and r.min_p >= alpha) else (
            f"; with {r.n_strengths} strengths the smallest reachable p is {r.min_p:.2g}"
        )  # fmt: skip
        out.append(
            f"Dose-response of {_label(info, r.method, r.metric)} under {r.intervention} on {r.base} "
            f"(strengths {r.strengths}): rho = {_num(r.spearman)}, adjusted p = {fmt_p(r.p_holm)}: "
            f"{r.verdict}{floor}."
        )
    return out
