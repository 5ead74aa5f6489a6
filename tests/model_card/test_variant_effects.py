"""Variants against their bases on hand-made metric tables: the paired change test, Holm over the family, the
dose-response, the "move together" classification, the variants read from their records, and the findings."""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
from scipy.stats import spearmanr

from unstereo.headline_metric import HeadlineMetric
from unstereo.model_card.compare import N_BOOT
from unstereo.model_card.headline import Resampled, items_table
from unstereo.model_card.variant_effects import (
    LESS,
    MIXED,
    MORE,
    STILL,
    VARIANT_CHANGES,
    VARIANT_DOSE,
    VARIANT_TOGETHER,
    change_tests,
    classify,
    dose_response,
    findings,
    item_change,
    resampled_change,
    together,
)
from unstereo.model_card.variant_models import VariantOf, find_variants, variant_sources
from unstereo.tables import validate

HIGHER = HeadlineMetric("f", "F", more_biased="higher")
LOWER = HeadlineMetric("us", "US", more_biased="lower")
INFO = {("toy", "f"): HIGHER, ("toy", "us"): LOWER}
V_DOWN = VariantOf("toy-cda", "toy", "toy-cda", "cda", 0.5)
V_SAME = VariantOf("toy-control", "toy", "toy-control", "control", 0.0)


def _items(n: int) -> pd.DataFrame:
    """Base: F = 1 on every item, US = 0. toy-cda: F = 0 everywhere (falls on all n items), US = 1 (rises on all);
    toy-control: the base's values (moves on none)."""
    rows = []
    for i in range(n):
        for model, f, us in (("toy", 1.0, 0.0), ("toy-cda", 0.0, 1.0), ("toy-control", 1.0, 0.0)):
            rows.append(dict(method="toy", model=model, metric="f", item=f"i{i}", value=f))
            rows.append(dict(method="toy", model=model, metric="us", item=f"i{i}", value=us))
    return items_table(rows)


def _card() -> pd.DataFrame:
    return pd.DataFrame({"method": ["toy", "toy"], "metric": ["f", "us"]})


def test_item_change_all_items_one_way():
    # 6 untied items: of the 2^6 swap patterns only "none" and "all" reach |d| = 1: p = 2/64; every bootstrap
    # resample of the items gives d = -1, so the interval is [-1, -1]
    out = item_change(np.ones(6), np.zeros(6), np.ones(6), HIGHER.bias)
    assert out["bias_change"] == -1.0 and out["p_value"] == pytest.approx(2 / 64)
    assert (out["ci_low"], out["ci_high"]) == (-1.0, -1.0)
    assert out["n_untied"] == 6 and out["min_p"] == pytest.approx(2 / 64)
    assert (out["value_base"], out["value_variant"]) == (1.0, 0.0)


def test_item_change_that_does_not_move():
    out = item_change(np.array([1.0, 0, 2, 0]), np.array([1.0, 0, 2, 0]), np.ones(4), HIGHER.bias)
    assert out["bias_change"] == 0.0 and out["p_value"] == 1.0 and out["min_p"] == 1.0
    assert (out["ci_low"], out["ci_high"]) == (0.0, 0.0)
    # moves both ways: (1, 0) -> (0, 1): d = 0 under every pattern's mirror; p = 1
    out = item_change(np.array([1.0, 0]), np.array([0.0, 1]), np.ones(2), HIGHER.bias)
    assert out["bias_change"] == 0.0 and out["p_value"] == 1.0


def test_resampled_change_every_item_shifted():
    # the statistic is the mean; every item of the variant is its base's minus 1, so every resample gives d = -1:
    # no round reaches 0 and p is the floor 1 / (B + 1)
    keys = tuple(f"k{i}" for i in range(5))
    base = np.arange(5.0)

    def res(model, values):
        return Resampled("toy", model, "f", keys, lambda pos, v=values: float(np.mean(v[pos])))

    out = resampled_change(res("toy", base), res("toy-cda", base - 1), HIGHER.bias)
    assert out["bias_change"] == -1.0 and out["p_value"] == pytest.approx(1 / (N_BOOT + 1))
    assert out["ci_low"] == pytest.approx(-1.0) and out["ci_high"] == pytest.approx(-1.0)
    assert out["test"] == f"bootstrap ({N_BOOT} rounds)" and out["n_untied"] is None
    same = resampled_change(res("toy", base), res("toy-control", base.copy()), HIGHER.bias)
    assert same["bias_change"] == 0.0 and same["p_value"] == 1.0


def test_change_tests_holm_over_the_family_7_items():
    # 7 items: raw p = 2/128 for the cda variant under both metrics, 1 for the control. Holm over the 4 rows:
    # sorted (1/64, 1/64, 1, 1) -> (4/64, max(4/64, 3/64), 1, 1): 0.0625, above 0.05, so nothing moves
    t = change_tests(_card(), _items(7), INFO, [V_DOWN, V_SAME])
    validate(t, VARIANT_CHANGES)
    assert list(zip(t["metric"], t["variant"], strict=True)) == [
        ("f", "toy-cda"), ("f", "toy-control"), ("us", "toy-cda"), ("us", "toy-control")
    ]  # fmt: skip
    assert np.allclose(t["p_value"], [1 / 64, 1, 1 / 64, 1])
    assert np.allclose(t["p_holm"], [0.0625, 1, 0.0625, 1])
    assert list(t["moves"]) == [STILL] * 4


def test_change_tests_holm_over_the_family_8_items_and_orientation():
    # 8 items: raw p = 2/256, Holm x 4 = 1/32 < 0.05. F falls (higher = more biased): less biased, bias change -1;
    # US rises (lower = more biased): also less biased, change +1 in its own units, bias change -1
    t = change_tests(_card(), _items(8), INFO, [V_DOWN, V_SAME])
    assert np.allclose(t["p_holm"], [1 / 32, 1, 1 / 32, 1])
    assert list(t["moves"]) == [LESS, STILL, LESS, STILL]
    cda = t[t["variant"] == "toy-cda"].set_index("metric")
    assert cda.loc["f", "change"] == -1.0 and cda.loc["us", "change"] == 1.0
    assert cda.loc["f", "bias_change"] == -1.0 and cda.loc["us", "bias_change"] == -1.0
    assert (cda["base"] == "toy").all() and (cda["strength"] == 0.5).all()


def test_change_tests_skip_a_variant_without_its_base():
    orphan = VariantOf("toy-cda", "", "toy-cda", "cda", 0.5)
    assert change_tests(_card(), _items(3), INFO, [orphan]).empty


def _changes(rows: list[tuple]) -> pd.DataFrame:
    """A VARIANT_CHANGES table from (metric, variant, base, intervention, strength, bias_change, moves)."""
    out = []
    for metric, variant, base, intervention, strength, d, mv in rows:
        out.append(dict(method="toy", metric=metric, variant=variant, base=base, intervention=intervention,
                        strength=strength, n_items=5, n_untied=5, value_base=1.0, value_variant=1.0 + d,
                        change=d, bias_change=d, ci_low=d - 0.1, ci_high=d + 0.1, p_value=0.01, min_p=0.001,
                        p_holm=0.01 if mv != STILL else 0.5, moves=mv, test="exact"))  # fmt: skip
    return validate(pd.DataFrame(out).astype({"n_untied": "Int64"}), VARIANT_CHANGES)


def test_dose_response_rho_and_exact_p_by_hand():
    # strengths 0.25 .. 1 with bias changes (-0.1, -0.3, -0.2, -0.5): ranks (4, 2, 3, 1) against (1, 2, 3, 4),
    # sum d^2 = 18, rho = 1 - 6 * 18 / (4 * 15) = -0.8. Of the 24 orders, |rho| >= 0.8 for sum d^2 in {0, 2, 18,
    # 20}: 1 + 3 + 3 + 1 = 8, p = 1/3. The control (strength 0) and a one-strength intervention are no series.
    ds = [-0.1, -0.3, -0.2, -0.5]
    rows = [
        ("f", f"v{i}", "toy", "cda", s, d, LESS)
        for i, (s, d) in enumerate(zip([0.25, 0.5, 0.75, 1.0], ds, strict=True))
    ]
    rows += [
        ("f", "ctl", "toy", "control", 0.0, 0.4, MORE),
        ("f", "emb", "toy", "embedding", 10.0, -1.0, LESS),
    ]
    dose = dose_response(_changes(rows))
    validate(dose, VARIANT_DOSE)
    assert len(dose) == 1
    r = dose.iloc[0]
    assert r["spearman"] == pytest.approx(-0.8)
    assert r["spearman"] == pytest.approx(spearmanr([0.25, 0.5, 0.75, 1.0], ds).statistic)
    assert r["p_value"] == pytest.approx(1 / 3) and r["min_p"] == pytest.approx(2 / 24)
    assert r["strengths"] == "0.25, 0.5, 0.75, 1" and r["n_strengths"] == 4
    assert r["test"] == "exact (24 permutations)" and r["verdict"] == "cannot tell"


def test_dose_response_perfect_series_and_verdict():
    # rho = -1 on 5 strengths: exact p = 2/120, below 0.05 -> less biased with strength
    rows = [("f", f"v{i}", "toy", "cda", s, -s, LESS) for i, s in enumerate([0.1, 0.2, 0.3, 0.4, 0.5])]
    r = dose_response(_changes(rows)).iloc[0]
    assert r["spearman"] == pytest.approx(-1.0) and r["p_value"] == pytest.approx(2 / 120)
    assert r["verdict"] == "less biased with strength"
    rows = [("f", f"v{i}", "toy", "cda", s, s, MORE) for i, s in enumerate([0.1, 0.2, 0.3, 0.4, 0.5])]
    assert dose_response(_changes(rows)).iloc[0]["verdict"] == "more biased with strength"


def test_classify():
    assert classify([STILL, STILL]) == STILL
    assert classify([LESS, STILL]) == LESS
    assert classify([MORE]) == MORE
    assert classify([LESS, MORE, STILL]) == MIXED


def test_together_by_hand():
    rows = [
        # metric f: cda makes both bases less biased (one of base a's two strengths does not move)
        ("f", "a1", "a", "cda", 0.5, -1, LESS), ("f", "a2", "a", "cda", 1.0, 0, STILL),
        ("f", "b1", "b", "cda", 0.5, -1, LESS),
        # metric us: base a less, base b more biased under cda
        ("us", "a1", "a", "cda", 0.5, -1, LESS), ("us", "a2", "a", "cda", 1.0, -1, LESS),
        ("us", "b1", "b", "cda", 0.5, 1, MORE),
        # the control, on base a only; embedding on base a, both ways
        ("f", "ac", "a", "control", 0.0, 0, STILL),
        ("f", "e1", "a", "embedding", 1.0, -1, LESS), ("f", "e2", "a", "embedding", 2.0, 1, MORE),
    ]  # fmt: skip
    t = together(_changes(rows))
    validate(t, VARIANT_TOGETHER)
    got = {(r.intervention, r.metric, r.base): (r.moves, r.same_across_bases, r.n_variants)
           for r in t.itertuples()}  # fmt: skip
    assert got == {
        ("cda", "f", "a"): (LESS, "yes", 2), ("cda", "f", "b"): (LESS, "yes", 1),
        ("cda", "us", "a"): (LESS, "no", 2), ("cda", "us", "b"): (MORE, "no", 1),
        ("control", "f", "a"): (STILL, "one base", 1), ("embedding", "f", "a"): (MIXED, "one base", 2),
    }  # fmt: skip


def test_findings_from_the_numbers():
    t = change_tests(_card(), _items(8), INFO, [V_DOWN, V_SAME])
    moved = together(t)
    s = findings(t, dose_response(t), moved, INFO, [V_DOWN, V_SAME])
    cda = next(x for x in s if x.startswith("toy-cda (cda, strength 0.5) against toy"))
    assert "toy: F less biased (1 -> 0" in cda and "toy: US less biased (0 -> 1" in cda
    ctrl = next(x for x in s if x.startswith("toy-control (control) against toy"))
    assert "no metric moves after Holm correction" in ctrl and "cannot show a change" in ctrl
    assert any(x.startswith("Under cda (base toy): less biased: toy: F, toy: US; the methods move together")
               and "one base only" in x for x in s)  # fmt: skip
    assert any(
        x.startswith("Under control (base toy): does not move: toy: F, toy: US; no method moves") for x in s
    )
    assert any("no dose-response" in x for x in s)
    # the control moving F the same way as cda is named as fine-tuning, not the intervention
    items = _items(8)
    items = items_table(pd.concat([items, items[items["model"] == "toy-cda"].assign(model="toy-c2")]))
    ctl = VariantOf("toy-c2", "toy", "c2", "control", 0.0)
    both = change_tests(_card(), items, INFO, [V_DOWN, ctl])
    s = findings(both, dose_response(both), together(both), INFO, [V_DOWN, ctl])
    assert any(
        x.startswith("toy-cda (cda) and toy-c2 (control) give the same value on every metric") for x in s
    )
    assert not any(
        "give the same value" in x for x in findings(t, dose_response(t), moved, INFO, [V_DOWN, V_SAME])
    )
    assert any(x.startswith("The control fine-tune moves toy: F on toy, toy: US on toy the same way as cda")
               for x in s)  # fmt: skip


def _record(folder, name, base, intervention="cda", strength=0.5):
    (folder / name).mkdir(parents=True)
    (folder / name / "variant.json").write_text(json.dumps(dict(
        name=name, base=base, base_model="x", intervention=intervention, strength=strength)))  # fmt: skip


def test_find_variants_from_records_not_names(tmp_path):
    # short names say nothing: "zeta" is the variant "v1" of the base the config calls "alpha" (matched by its
    # entry, given once as a mapping and once as the record's string form), "omega" a variant of no listed model
    base = {"resource": "smollm2", "gguf_file": "S.gguf"}
    _record(tmp_path / "variants", "v1", "resource:smollm2/S.gguf", "control", None)
    _record(tmp_path / "variants", "v2", {"path": "elsewhere"})
    config = {"results_dir": str(tmp_path), "fairpair": {"models": {"alpha": base, "zeta": {"variant": "v1"}}},
              "biastest": {"models": {"omega": "variant:v2", "alpha": base}}}  # fmt: skip
    found = find_variants(config, ["alpha", "zeta", "omega"])
    assert found == [
        VariantOf("zeta", "alpha", "v1", "control", 0.0),
        VariantOf("omega", "", "v2", "cda", 0.5),
    ]
    assert variant_sources(config, ["alpha", "zeta"]) == [str(tmp_path / "variants" / "v1" / "variant.json")]
    assert math.isclose(found[0].strength, 0.0)
