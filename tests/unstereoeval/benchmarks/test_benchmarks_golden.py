"""Golden tests against the UnStereoEval release (skipped with the reason when ../shared/reference is absent).

- MaxPMI with the released PILE delta table equals ``max_gender_pmi`` of all 15,810 released preprocessed rows, and
  the per-word deltas equal ``template_words_pmi``; the sizes after each eta equal
  docs/methods.md#benchmarks-and-their-sizes.
- Winobias / Winogender built from the ORIGINAL files equal the released templates row for row with
  ``reference_quirks``; without it the only differences are the explained artifacts.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.tables import read_delta
from unstereo.unstereoeval.benchmarks import add_max_pmi, build_pairs, eta_sizes, max_pmi_many
from unstereo.unstereoeval.benchmarks.maxpmi import delta_lookup, template_words

pytestmark = pytest.mark.reference

DATASETS = ["USE-5", "USE-10", "USE-20", "Winobias-dev", "Winobias-test", "Winogender"]

# docs/methods.md#benchmarks-and-their-sizes: sizes after the eta filter (USE-5 / USE-10 / USE-20 / Winobias /
# Winogender)
EXPECTED_SIZES = {
    math.inf: [4405, 4740, 4839, 1586, 240],
    1.0: [4263, 4396, 4296, 879, 188],
    0.8: [3978, 3916, 3561, 675, 150],
    0.65: [3698, 3401, 2828, 409, 107],
    0.5: [3069, 2397, 1456, 186, 69],
    0.3: [1556, 601, 133, 22, 16],
}


@pytest.fixture(scope="module")
def use_data(reference_dir):
    return reference_dir / "unstereo-eval" / "data"


@pytest.fixture(scope="module")
def delta(use_data):
    return read_delta(use_data / "pmi_file_w_counts.csv")


@pytest.fixture(scope="module")
def released(use_data):
    frames = [
        pd.read_csv(use_data / "datasets" / "preprocessed" / f"{name}-no-maxpmi-constraint.csv.gz")
        for name in DATASETS
    ]
    return pd.concat(frames, ignore_index=True)


@pytest.fixture(scope="module")
def computed(released, delta):
    return max_pmi_many(released["template"].tolist(), delta)


def test_maxpmi_equals_released_column(released, computed):
    assert len(released) == 15810
    assert not released["max_gender_pmi"].isna().any()
    # The released values went through two CSV round trips: equal to 1e-12 (observed max diff ~2e-14).
    diff = (computed["max_pmi"] - released["max_gender_pmi"]).abs()
    assert int((diff <= 1e-12).sum()) == 15810, released.loc[~(diff <= 1e-12), ["dataset", "template"]].head()


@pytest.fixture(scope="module")
def found_words(released, delta):
    """Per released template: the (word, delta) pairs looked up, in token order."""
    lookup = delta_lookup(delta)
    return [[(w, lookup[w]) for w in template_words(t) if w in lookup] for t in released["template"]]


def test_per_word_deltas_equal_released(released, found_words):
    # template_words_pmi lists the delta of every looked-up word, in order (printed with 8 decimals).
    mismatches = 0
    for found, printed in zip(found_words, released["template_words_pmi"], strict=True):
        ours = [d for _, d in found]
        theirs = [float(x) for x in printed.strip("[]").split()]
        if len(ours) != len(theirs) or not np.allclose(ours, theirs, rtol=0, atol=1e-7):
            mismatches += 1
    assert mismatches == 0


def test_tie_rule_cannot_be_told_apart_on_released_data(found_words):
    # Our rule: the first of equal-|delta| words wins (np.argmax in the reference). The released data has no
    # template where different words tie at the maximum, so "last wins" would reproduce it just as well.
    ties = 0
    for pairs in found_words:
        found = dict(pairs)
        if found:
            top = max(abs(v) for v in found.values())
            ties += sum(abs(v) == top for v in found.values()) > 1
    assert ties == 0


def test_sizes_after_eta_match_spec(released, computed):
    pairs = pd.DataFrame(
        {
            "benchmark": released["dataset"].str.replace(r"-(dev|test)$", "", regex=True),
            "max_pmi": computed["max_pmi"],
        }
    )
    sizes = eta_sizes(pairs, list(EXPECTED_SIZES))
    table = sizes.pivot(index="eta", columns="benchmark", values="n")
    for eta, expected in EXPECTED_SIZES.items():
        got = [int(table.loc[eta, b]) for b in ["USE-5", "USE-10", "USE-20", "Winobias", "Winogender"]]
        assert got == expected, eta


def test_use_released_reader_ids_point_at_raw_rows(use_data, delta):
    pairs = build_pairs(
        "use-released", use_data / "datasets" / "preprocessed" / "USE-10-no-maxpmi-constraint.csv.gz"
    )
    raw = pd.read_csv(use_data / "datasets" / "raw" / "USE-10.csv", keep_default_na=False)
    rows = pairs["pair_id"].str.split(":").str[1].astype(int)
    assert len(pairs) == 4740 and rows.max() < len(raw)
    assert (raw["template"].to_numpy()[rows] == pairs["template"].to_numpy()).all()
    assert raw["is_natural"].to_numpy()[rows].all()
    filled = add_max_pmi(pairs, delta)
    assert np.allclose(filled["max_pmi"], filled["released_max_pmi"], rtol=0, atol=1e-12)


@pytest.fixture(scope="module")
def originals(reference_dir):
    wino = reference_dir / "winobias" / "WinoBias" / "wino" / "data"
    gender = reference_dir / "winogender" / "data" / "all_sentences.tsv"
    return {
        quirks: (
            build_pairs("winobias", wino, reference_quirks=quirks),
            build_pairs("winogender", gender, reference_quirks=quirks),
        )
        for quirks in (False, True)
    }


@pytest.fixture(scope="module")
def released_templates(use_data):
    raw = use_data / "datasets" / "raw"
    wb = pd.concat(
        [pd.read_csv(raw / f"coref__Winobias__templates.{s}.csv", index_col=0) for s in ("dev", "test")],
        ignore_index=True,
    )
    wg = pd.read_csv(raw / "coref__Winogender__templates.csv")
    return wb, wg


def test_originals_match_released_templates_with_quirks(originals, released_templates):
    wb, wg = originals[True]
    rwb, rwg = released_templates
    assert len(wb) == 1586 and len(wg) == 240
    assert (wb["template"].to_numpy() == rwb["template"].to_numpy()).all()
    assert (wb["seed_word"].to_numpy() == rwb["word"].to_numpy()).all()
    assert (wb["filename"].to_numpy() == rwb["filename"].to_numpy()).all()
    assert (wg["template"].to_numpy() == rwg["template"].to_numpy()).all()
    assert (wg["seed_word"].to_numpy() == rwg["word"].to_numpy()).all()
    assert (wg["pair_id"].to_numpy() == ("Winogender:" + rwg["example_id"]).to_numpy()).all()


def test_originals_clean_differences_are_the_explained_artifacts(originals, released_templates):
    wb, wg = originals[False]
    rwb, rwg = released_templates
    # Winobias: 41 released templates keep a bracketed pronoun (the reference only unbrackets two spans)
    differ = wb["template"].to_numpy() != rwb["template"].to_numpy()
    assert int(differ.sum()) == 41
    unbracketed = rwb["template"].str.replace("[", "", regex=False).str.replace("]", "", regex=False)
    assert (wb["template"].to_numpy() == unbracketed.to_numpy()).all()
    # Winogender: 4 released templates lost their apostrophe and gained a trailing '"'
    differ = wg["template"].to_numpy() != rwg["template"].to_numpy()
    assert int(differ.sum()) == 4
    assert (rwg["template"][differ].str.endswith('dollars."')).all()
    fixed = rwg["template"].where(~differ, rwg["template"].str.replace("couldnt", "couldn't").str.rstrip('"'))
    assert (wg["template"].to_numpy() == fixed.to_numpy()).all()


def test_originals_maxpmi_equals_released(originals, released, delta):
    # The artifacts do not change MaxPMI: brackets are punctuation, "n't"/"nt" carry no larger delta here.
    ref = released[released["dataset"].str.startswith(("Winobias", "Winogender"))][
        "max_gender_pmi"
    ].to_numpy()
    for quirks in (False, True):
        wb, wg = originals[quirks]
        ours = add_max_pmi(pd.concat([wb, wg], ignore_index=True), delta)["max_pmi"].to_numpy()
        assert np.allclose(ours, ref, rtol=0, atol=1e-12)


def test_quirk_fillings_equal_released_scored_sentences(originals, reference_dir):
    # The released scores were computed on these strings (F_template / M_template): the scorer can rely on them.
    results = reference_dir / "unstereo-eval" / "results"
    wb, wg = originals[True]
    scored_wb = pd.concat(
        [
            pd.read_csv(
                results / "Winobias" / f"coref__Winobias__templates.{s}__scores__EleutherAI__gpt-j-6b.csv"
            )
            for s in ("dev", "test")
        ],
        ignore_index=True,
    )
    scored_wg = pd.read_csv(
        results / "Winogender" / "coref__Winogender__templates__scores__EleutherAI__gpt-j-6b.csv"
    )
    for ours, scored in ((wb, scored_wb), (wg, scored_wg)):
        assert (ours["sentence_female"].to_numpy() == scored["F_template"].to_numpy()).all()
        assert (ours["sentence_male"].to_numpy() == scored["M_template"].to_numpy()).all()
