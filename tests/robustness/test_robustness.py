"""Robustness constructions ("Tail wagging", docs/methods.md#dataset-construction-robustness) on hand-made
templates; the release rebuilt; rank statistics."""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest

from unstereo.errors import ConfigError, InputError
from unstereo.robustness.build import construct, sample_name, sampling_units, subsample
from unstereo.robustness.constructions import (
    ADJECTIVES,
    CLAUSES,
    RoleTemplate,
    add_adjective,
    add_clause,
    load_synonyms,
    mark_roles,
    negate,
    substitute,
)
from unstereo.robustness.stats import kendall_tau, rank_swaps, rankings, summary
from unstereo.tables import PAIRS, validate
from unstereo.templates import fill_template

WG = RoleTemplate(
    "The $SUBJECT told the $OBJECT that {pronoun} could pay with cash.", "technician", "customer"
)
SOMEONE = RoleTemplate(WG.text, "technician", "someone")


def test_paper_lists():
    assert len(ADJECTIVES) == 33 and len(set(ADJECTIVES)) == 33 and "intelligent" in ADJECTIVES
    assert len(CLAUSES) == 5 and CLAUSES["beach"] == "who just returned from the beach"


def test_clause_after_subject_or_object_and_someone():
    back = CLAUSES["back"]
    assert add_clause(WG, back, "subject").render() == (
        "The technician, who just came back, told the customer that {pronoun} could pay with cash."
    )
    assert add_clause(WG, back, "object").render() == (
        "The technician told the customer, who just came back, that {pronoun} could pay with cash."
    )
    assert add_clause(SOMEONE, back, "object", spaced=True).render() == (
        "The technician told someone , who just came back , that {pronoun} could pay with cash."
    )
    # before sentence punctuation no second comma; a missing role leaves the template alone
    end = RoleTemplate("{pronoun} met the $OBJECT.", None, "doctor")
    assert add_clause(end, back, "object").render() == "{pronoun} met the doctor, who just came back."
    assert add_clause(end, back, "subject") == end
    with pytest.raises(ValueError, match="role"):
        add_clause(WG, back, "verb")


def test_adjective_placements_articles_and_someone():
    assert add_adjective(WG, "smart", "subject").render().startswith("The smart technician told the customer")
    assert "told the smart customer that" in add_adjective(WG, "smart", "object").render()
    assert "The technician, who was smart, told" in add_adjective(WG, "smart", "subject", "clause").render()
    assert "customer, who was smart, that" in add_adjective(WG, "smart", "object", "clause").render()
    # "someone" takes no adjective before it, but the clause
    assert add_adjective(SOMEONE, "smart", "object").render() == SOMEONE.render()
    assert "told someone, who was smart, that" in add_adjective(SOMEONE, "smart", "object", "clause").render()
    # a/an agreement, by sound (honest), keeping the capital; the release's "a aggressive" with article=False
    a = RoleTemplate("A $SUBJECT met with a $OBJECT.", "nurse", "student")
    assert add_adjective(a, "aggressive", "object").render() == "A nurse met with an aggressive student."
    assert add_adjective(a, "honest", "subject").render() == "An honest nurse met with a student."
    assert add_adjective(a, "wise", "object").render() == "A nurse met with a wise student."
    an = RoleTemplate("An $SUBJECT waved.", "engineer")
    assert add_adjective(an, "smart", "subject").render() == "A smart engineer waved."
    assert (
        add_adjective(a, "aggressive", "object", article=False).render()
        == "A nurse met with a aggressive student."
    )
    with pytest.raises(ValueError, match="placement"):
        add_adjective(WG, "smart", "subject", "after")


def test_placeholders_survive_and_fill():
    rt = add_adjective(add_clause(WG, CLAUSES["beach"], "object"), "clever", "subject")
    template = rt.render()
    assert template == (
        "The clever technician told the customer, who just returned from the beach, that {pronoun} could pay with cash."
    )
    assert fill_template(template, "female").endswith("that she could pay with cash.")


def test_someone_capitalised_at_the_start():
    rt = RoleTemplate("The $OBJECT asked the $SUBJECT about {pronoun1} bill.", "clerk", "someone")
    assert rt.render() == "Someone asked the clerk about {pronoun1} bill."


def test_synonyms_whole_words_case_and_markers():
    rt = RoleTemplate("Help the $SUBJECT repair {pronoun1} helmet; helpers help.", "mechanic")
    got = substitute(rt, {"help": "aid", "repair": "fix", "mechanic": "X", "pronoun1": "Y"}).render()
    assert got == "Aid the mechanic fix {pronoun1} helmet; helpers aid."
    assert load_synonyms()["repair"] == "fix"


def test_synonym_map_errors_name_the_file(tmp_path):
    bad = tmp_path / "s.csv"
    bad.write_text("word,synonym\nhelp,\n")
    with pytest.raises(InputError, match="line 2"):
        load_synonyms(bad)


@pytest.mark.parametrize(
    ("text", "want"),
    [
        (
            "The $SUBJECT told the $OBJECT that {pronoun} left.",
            "The $SUBJECT did not tell the $OBJECT that {pronoun} left.",
        ),
        ("The $SUBJECT was meeting a $OBJECT.", "The $SUBJECT was not meeting a $OBJECT."),
        ("The $SUBJECT could pay.", "The $SUBJECT could not pay."),
        ("{pronoun} carries {pronoun1} bag.", "{pronoun} does not carry {pronoun1} bag."),
        ("{pronoun} had a dog.", "{pronoun} did not have a dog."),
        ("{pronoun} had left.", "{pronoun} had not left."),
        ("{pronoun} walked home.", "{pronoun} did not walk home."),
        ("{pronoun} stopped.", "{pronoun} did not stop."),
        ("The dog barked.", "The dog did not bark."),
        ("Nothing here.", "Nothing here."),
    ],
)
def test_negation(text, want):
    assert negate(RoleTemplate(text, "doctor", "patient")).text == want


def test_mark_roles_given_words_and_noun_phrases():
    rt = mark_roles("The technician told the customer that {pronoun} could pay.", "technician", "customer")
    assert rt.text == "The $SUBJECT told the $OBJECT that {pronoun} could pay."
    assert mark_roles(
        "The technician told someone that {pronoun} left.", "technician", "someone"
    ).render() == ("The technician told someone that {pronoun} left.")
    with pytest.raises(InputError, match="not found"):
        mark_roles("The nurse left.", "doctor", None)
    # noun phrases: the first (a sentence-initial pronoun counts) and the next one in the same sentence
    np_ = mark_roles("The old man fed a dog before {pronoun} left.")
    assert (np_.text, np_.subject, np_.object) == (
        "The $SUBJECT fed a $OBJECT before {pronoun} left.",
        "old man",
        "dog",
    )
    assert mark_roles("{pronoun} saw the cat. The dog ran.").object == "cat"
    pr = mark_roles("{pronoun} saw it. The dog ran.")
    assert (pr.subject, pr.object) == ("{pronoun}", None)  # no object past the sentence end
    assert add_adjective(pr, "smart", "subject") == pr  # no adjective before a pronoun
    assert (
        add_clause(pr, "who just came back", "subject").render()
        == "{pronoun}, who just came back, saw it. The dog ran."
    )


def _pairs(rows):
    out = []
    for pid, template, seed in rows:
        out.append(
            dict(
                pair_id=pid,
                benchmark=pid.split(":")[0],
                template=template,
                sentence_female=fill_template(template, "female"),
                sentence_male=fill_template(template, "male"),
                seed_word=seed,
                max_pmi=0.1,
                max_pmi_word="x",
                source="test",
            )
        )
    return validate(pd.DataFrame(out), PAIRS)


WINOGENDER = _pairs(
    [
        (
            "Winogender:technician.customer.1",
            "The technician told the customer that {pronoun} could pay.",
            "customer",
        ),
        (
            "Winogender:technician.someone.1",
            "The technician told someone that {pronoun} could pay.",
            "someone",
        ),
        ("Winogender:nurse.patient.0", "The nurse helped the patient because {pronoun} was kind.", "nurse"),
    ]
)


def test_construct_pair_table_ids_changed_flag_and_sentences():
    got = construct(WINOGENDER, "adj_object", adjectives=["smart", "honest"])
    assert list(got["pair_id"]) == [
        "Winogender:technician.customer.1@adj_object:smart",
        "Winogender:technician.customer.1@adj_object:honest",
        "Winogender:technician.someone.1@adj_object:smart",
        "Winogender:technician.someone.1@adj_object:honest",
        "Winogender:nurse.patient.0@adj_object:smart",
        "Winogender:nurse.patient.0@adj_object:honest",
    ]
    assert list(got["changed"]) == [True, True, False, False, True, True]
    assert got["sentence_female"].iloc[0] == "The technician told the smart customer that she could pay."
    assert got["sentence_male"].iloc[2] == "The technician told someone that he could pay."  # left alone
    assert (
        set(got["construction"]) == {"adj_object"}
        and got["original_pair_id"].iloc[5] == "Winogender:nurse.patient.0"
    )
    original = construct(WINOGENDER, "original")
    assert list(original["pair_id"]) == list(WINOGENDER["pair_id"]) and not original["changed"].any()
    neg = construct(WINOGENDER, "negation")
    assert neg["sentence_male"].iloc[2] == "The nurse did not help the patient because he was kind."
    with pytest.raises(ConfigError, match="unknown construction"):
        construct(WINOGENDER, "paraphrase")


def test_subsample_is_seeded_by_unit_and_trial():
    pairs = _pairs([(f"U:{i}", f"{{pronoun}} saw thing {i}.", f"w{i % 10}") for i in range(40)])
    assert sampling_units(WINOGENDER).tolist() == ["technician", "technician", "nurse"]
    a = subsample(pairs, 0.25, trial=3, seed=7)
    assert a["seed_word"].nunique() == 3 and len(a) == 12  # 0.25 * 10 units rounded half up, 4 pairs each
    assert a.equals(subsample(pairs, 0.25, trial=3, seed=7))
    draws = {tuple(sorted(set(subsample(pairs, 0.25, trial=t, seed=7)["seed_word"]))) for t in range(20)}
    assert len(draws) > 10  # trials are independent draws
    assert len(subsample(pairs, 0.01, 0, 0)) == 4  # at least one unit
    assert sample_name(0.1) == "sample_10" and sample_name(0.125) == "sample_12.5"
    with pytest.raises(ValueError):
        subsample(pairs, 0, 0, 0)


def test_kendall_tau_hand_values():
    assert kendall_tau([1, 2, 3], [1, 2, 3]) == 1.0
    assert kendall_tau([1, 2, 3], [3, 2, 1]) == -1.0
    assert kendall_tau([1, 2, 3], [1, 3, 2]) == pytest.approx(1 / 3)  # 2 concordant, 1 discordant
    # tau-b with a tie: pairs (1,2) tied in y: (C - D) / sqrt((3 - 0) (3 - 1)) = (2 - 0) / sqrt(6)
    assert kendall_tau([1, 2, 3], [1, 1, 2]) == pytest.approx(2 / math.sqrt(6))
    assert math.isnan(kendall_tau([1], [1]))


def _synthetic_scores() -> pd.DataFrame:
    """Three models; original US A=10, B=20, C=30. Construction X swaps B and C; sample_10 has 4 trials where
    A and B swap in trials 0 and 1, and nothing else moves."""
    rows = []

    def add(cons, trial, a, b, c):
        for model, us in zip("ABC", (a, b, c), strict=True):
            rows.append(
                dict(
                    model=model,
                    benchmark="W",
                    construction=cons,
                    trial=trial,
                    eta=math.inf,
                    us=us,
                    pd=0.0,
                    aufc=1.0,
                )
            )

    add("original", 0, 10, 20, 30)
    add("X", 0, 10, 30, 20)
    for trial, (a, b) in enumerate([(25, 20), (21, 20), (9, 20), (5, 19)]):
        add("sample_10", trial, a, b, 30)
    return pd.DataFrame(rows)


def test_rank_swaps_and_rankings_known_answer():
    scores = _synthetic_scores()
    swaps = rank_swaps(scores).set_index(["construction", "model_a", "model_b"])["swap_rate"]
    assert swaps[("X", "B", "C")] == 1.0 and swaps[("X", "A", "B")] == 0.0 and swaps[("X", "A", "C")] == 0.0
    assert swaps[("sample_10", "A", "B")] == 0.5 and swaps[("sample_10", "B", "C")] == 0.0
    assert swaps[("original", "A", "B")] == 0.0
    ranked = rankings(scores).set_index(["construction", "trial"])
    assert (
        ranked.loc[("original", 0), "ranking"] == "C > B > A"
        and ranked.loc[("X", 0), "ranking"] == "B > C > A"
    )
    taus = ranked["kendall_tau"]
    assert taus[("original", 0)] == 1.0 and taus[("X", 0)] == pytest.approx(1 / 3)
    assert taus[("sample_10", 0)] == pytest.approx(1 / 3) and taus[("sample_10", 2)] == 1.0
    s = summary(scores, metrics=("us",)).set_index(["model", "construction"])
    assert s.loc[("A", "sample_10"), "mean"] == pytest.approx(15.0)
    assert s.loc[("A", "sample_10"), "std"] == pytest.approx(np.std([25, 21, 9, 5], ddof=1))
    assert s.loc[("A", "sample_10"), "trials"] == 4 and s.loc[("A", "X"), "std"] == 0.0
    with pytest.raises(InputError, match="original"):
        rank_swaps(scores[scores["construction"] != "original"])


def test_a_nan_score_never_counts_as_a_rank_swap():
    """A NaN original score of C: no order to compare with, so no (A, C) or (B, C) row (before the fix every trial
    counted as a swap, NaN != sign). A NaN trial score of A in sample_10 trial 0: that trial leaves the (A, B) pair;
    of the other three trials only trial 1 (A 21 > B 20, original A 10 < B 20) swaps, so 1/3 over 3 trials."""
    scores = _synthetic_scores()
    scores.loc[(scores.construction == "original") & (scores.model == "C"), "us"] = np.nan
    scores.loc[(scores.construction == "sample_10") & (scores.trial == 0) & (scores.model == "A"), "us"] = (
        np.nan
    )
    swaps = rank_swaps(scores).set_index(["construction", "model_a", "model_b"])
    assert not any("C" in (a, b) for _, a, b in swaps.index)
    assert swaps.loc[("sample_10", "A", "B"), "swap_rate"] == pytest.approx(1 / 3)
    assert swaps.loc[("sample_10", "A", "B"), "trials"] == 3
    assert swaps.loc[("X", "A", "B"), "swap_rate"] == 0.0
