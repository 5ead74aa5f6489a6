"""The judge's labelled set (unstereo.unstereoeval.generate.judge_set: shuffles, seed-word swaps, labels, a stratified disjoint
split, deterministic) and its calibration (unstereo.unstereoeval.generate.judge_calibration: threshold of best balanced
accuracy, precision / recall of both classes, the resumable P(Yes) cache), on hand-worked inputs; the 1.5B is not
loaded (a fake judge and scorer stand in for it in the CLI test)."""

from __future__ import annotations

import json
import math
import random

import pandas as pd
import pytest
from click.testing import CliRunner

from unstereo.errors import InputError
from unstereo.unstereoeval.generate import judge_calibration as jc
from unstereo.unstereoeval.generate import judge_set as js

# ------------------------------------------------------------------------------------------------ set builder


def test_shuffle_words_by_hand():
    # words He sat on the mat (the end mark kept aside); order [4, 0, 1, 2, 3] -> mat he sat on the
    assert js.shuffle_words("He sat on the mat.", [4, 0, 1, 2, 3]) == "Mat he sat on the."
    # commas dropped, "?" kept, "I" stays upper-case
    assert js.shuffle_words("Yes, I can?", [2, 1, 0]) == "Can I yes?"
    with pytest.raises(ValueError, match="permutation"):
        js.shuffle_words("He sat.", [0, 0])


def test_random_order_deterministic_and_moves_half():
    a = [js.random_order(5, random.Random(7)) for _ in range(2)]
    assert a[0] == a[1]
    for seed in range(50):
        order = js.random_order(4, random.Random(seed))
        assert sorted(order) == [0, 1, 2, 3]
        assert sum(i != j for i, j in enumerate(order)) >= 2


def test_swap_word_whole_word_and_case():
    t = "Booths fill the fair; {pronoun} loves {pronoun1} booth. Booth!"
    assert js.swap_word(t, "booth", "taxidermy") == (
        "Booths fill the fair; {pronoun} loves {pronoun1} taxidermy. Taxidermy!"
    )
    assert js.swap_word("{pronoun} sang.", "booth", "x") is None


def _write_release(folder, n=12):
    """A fake reference folder with a USE-5 raw file: n natural templates (seed word wN) and one unnatural row."""
    path = folder / js.RELEASE_FILE
    path.parent.mkdir(parents=True)
    rows = [{"": i, "word": f"w{i}", "template": f"{{pronoun}} liked the w{i} on day {i}.", "is_natural": True}
            for i in range(n)]  # fmt: skip
    rows.append({"": n, "word": "zz", "template": "{pronoun} zz zz.", "is_natural": False})
    pd.DataFrame(rows).to_csv(path, index=False)
    return folder


def _write_run(path):
    path.write_text(
        "sentence,label,note\nHe sat.,natural,\nHe was the border.,unnatural,\nHe bowed.,unsure,\n"
    )
    return path


def test_make_recipe_and_build_set(tmp_path):
    ref = _write_release(tmp_path / "ref")
    release = js.read_release(ref)
    assert len(release) == 12  # the unnatural row is not a source
    recipe = js.make_recipe(release, n_released=4, n_shuffled=3, n_swapped=3, seed=3)
    assert recipe == js.make_recipe(release, n_released=4, n_shuffled=3, n_swapped=3, seed=3)
    pids = [i["pair_id"] for i in recipe["items"]]
    assert len(pids) == len(set(pids)) == 10  # each template used once: no template on both sides
    for item in recipe["items"]:
        if item["source"] == "swapped":
            assert item["word"] != release.loc[item["pair_id"], "seed_word"]
    (tmp_path / "recipe.json").write_text(json.dumps(recipe))
    run = _write_run(tmp_path / "run.csv")
    df = js.build_set(ref, tmp_path / "recipe.json", run)
    assert list(df.columns) == js.COLUMNS
    assert df.equals(js.build_set(ref, recipe, run))
    # 4 released + 1 run natural; 3 shuffled + 3 swapped + 1 run unnatural; "unsure" left out
    assert df.groupby("label").size().to_dict() == {"natural": 5, "unnatural": 7}
    assert "He bowed." not in set(df["sentence"])
    sw = df[df["source"] == "swapped"].iloc[0]
    item = next(i for i in recipe["items"] if i["id"] == sw["id"])
    pronoun = "He" if item["gender"] == "male" else "She"
    n = item["pair_id"].split(":")[1]
    assert sw["sentence"] == f"{pronoun} liked the {item['word']} on day {n}."
    from unstereo.cli import cli

    args = ["generate", "judge-set", "-o", str(tmp_path / "set.csv"), "--reference-dir", str(ref),
            "--recipe", str(tmp_path / "recipe.json"), "--run-sentences", str(run)]  # fmt: skip
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    assert pd.read_csv(tmp_path / "set.csv").equals(df)
    sh = df[df["source"] == "shuffled"]
    assert all(s.endswith(".") and s.count(" ") == 6 for s in sh["sentence"])


def test_split_stratified_and_disjoint():
    items = pd.DataFrame({
        "id": ["a", "b", "c", "d", "e", "f"],
        "label": ["natural"] * 3 + ["unnatural"] * 3,
        "source": ["released"] * 3 + ["shuffled", "shuffled", "run"],
    })  # fmt: skip
    part = js.split_parts(items, seed=1)
    assert part.equals(js.split_parts(items, seed=1))
    # strata: natural/released 3 -> ceil(1.5) = 2 calibration; unnatural/shuffled 2 -> 1; unnatural/run 1 -> 1
    cal = items[part == "calibration"]
    assert cal.groupby(["label", "source"]).size().to_dict() == {
        ("natural", "released"): 2, ("unnatural", "run"): 1, ("unnatural", "shuffled"): 1}  # fmt: skip
    assert set(part) == {"calibration", "heldout"} and len(part) == 6  # each item in exactly one part


def test_bad_run_label(tmp_path):
    p = tmp_path / "run.csv"
    p.write_text("sentence,label\nHe sat.,maybe\n")
    with pytest.raises(InputError, match="run.csv:2"):
        js.read_run_sentences(p)


# ------------------------------------------------------------------------------------------------ calibration

LABELS = ["natural", "natural", "natural", "unnatural", "unnatural"]
SCORES = [0.9, 0.6, 0.3, 0.5, 0.1]


def test_class_metrics_by_hand():
    # threshold 0.55 keeps 0.9 and 0.6 (both natural): natural kept 2 of 3, nothing unnatural kept.
    # natural: P = 2/2 = 1, R = 2/3, F1 = 2 * 1 * 2/3 / (5/3) = 0.8
    # unnatural (positive = rejected): rejected 0.3 (natural), 0.5, 0.1 -> P = 2/3, R = 2/2 = 1, F1 = 0.8
    # balanced accuracy = (2/3 + 1) / 2 = 5/6
    m = jc.class_metrics(LABELS, [s >= 0.55 for s in SCORES])
    assert (m["n"], m["n_natural"], m["n_unnatural"], m["natural_kept"], m["unnatural_rejected"]) == (
        5,
        3,
        2,
        2,
        2,
    )
    assert m["natural_precision"] == 1 and m["natural_recall"] == pytest.approx(2 / 3)
    assert m["natural_f1"] == pytest.approx(0.8) and m["unnatural_f1"] == pytest.approx(0.8)
    assert m["unnatural_precision"] == pytest.approx(2 / 3) and m["unnatural_recall"] == 1
    assert m["balanced_accuracy"] == pytest.approx(5 / 6)
    # keeping everything: no rejection, so unnatural precision has no denominator
    m = jc.class_metrics(LABELS, [True] * 5)
    assert (
        math.isnan(m["unnatural_precision"]) and m["unnatural_recall"] == 0 and m["natural_precision"] == 0.6
    )
    with pytest.raises(ValueError):
        jc.class_metrics(["natural", "odd"], [True, False])


def test_choose_threshold_by_hand():
    # candidates -0.9, 0.2, 0.4, 0.55, 0.75, 1.9 give balanced accuracy 1/2, 3/4, 7/12, 5/6, 2/3, 1/2
    assert jc.choose_threshold(SCORES, LABELS) == pytest.approx(0.55)
    # a tie: [N .9, U .7, N .3, U .1]: 0.2 -> (1 + 1/2)/2 = 3/4, 0.5 -> 1/2, 0.8 -> (1/2 + 1)/2 = 3/4: lowest wins
    t = jc.choose_threshold([0.9, 0.7, 0.3, 0.1], ["natural", "unnatural", "natural", "unnatural"])
    assert t == pytest.approx(0.2)


def test_choose_question_needs_a_margin():
    tried = [{"q": "built-in", "calibration_balanced_accuracy": 0.80},
             {"q": "a", "calibration_balanced_accuracy": 0.805}, {"q": "b", "calibration_balanced_accuracy": 0.79}]  # fmt: skip
    assert jc.choose_question(tried, 0.01)["q"] == "built-in"  # 0.805 - 0.80 = 0.005 < 0.01
    assert jc.choose_question(tried, 0.005)["q"] == "a"


def test_evaluate_per_part():
    df = pd.DataFrame({"label": LABELS * 2, "part": ["calibration"] * 5 + ["heldout"] * 5, "s": SCORES * 2})
    rows = jc.evaluate(df, "s", 0.55, "m", "calibration")
    assert [r["part"] for r in rows] == ["calibration", "heldout"]
    assert rows[1]["balanced_accuracy"] == pytest.approx(5 / 6)
    assert "| m | 0.55 (calibration) | 5 (3/2) | 1.00 | 0.67 | 0.80 | 0.67 | 1.00 | 0.80 | 0.83 |" in (
        jc.results_markdown(rows)
    )


def test_kept_by_source():
    # held-out: natural 0.9, 0.6, 0.3 -> 2 of 3 kept at 0.55; unnatural 0.5 (source a), 0.1 (source b) -> none
    df = pd.DataFrame({"label": LABELS * 2, "part": ["calibration"] * 5 + ["heldout"] * 5, "s": SCORES * 2,
                       "source": ["r", "r", "r", "a", "b"] * 2})  # fmt: skip
    got = jc.kept_by_source(df, [("f", "s", 0.55), ("g", "s", 0.4)])
    assert got.to_dict("records") == [
        {"label": "natural", "source": "r", "n": 3, "f": pytest.approx(2 / 3), "g": pytest.approx(2 / 3)},
        {"label": "unnatural", "source": "a", "n": 1, "f": 0.0, "g": 1.0},
        {"label": "unnatural", "source": "b", "n": 1, "f": 0.0, "g": 0.0},
    ]


def test_cache_resumes(tmp_path):
    calls = []

    def score(batch):
        calls.append(list(batch))
        return [len(s) / 10 for s in batch]

    cache = jc.PYesCache(tmp_path / "c.jsonl")
    got = jc.cached_p_yes(["aa", "bbb", "aa", "c"], "k", cache, score, chunk=1, limit=2)
    assert got == [0.2, 0.3, 0.2, None] and calls == [["aa"], ["bbb"]]
    again = jc.PYesCache(tmp_path / "c.jsonl")  # reread from the file
    assert jc.cached_p_yes(["aa", "bbb", "c"], "k", again, score) == [0.2, 0.3, 0.1]
    assert calls[-1] == ["c"]
    assert jc.cached_p_yes(["aa"], "other", again, score) == [0.2] and calls[-1] == ["aa"]  # another key


def test_calibrate_cli_with_fakes(tmp_path, monkeypatch):
    """judge-calibrate end to end with a fake judge (P(Yes) 0.8 for a natural sentence, 0.2 otherwise, 0.6 for
    one unnatural) and a fake log-likelihood scorer; --limit stops and a rerun resumes."""
    import unstereo.unstereoeval.generate.judge as judge_mod
    import unstereo.unstereoeval.generate.naturalness as nat_mod
    from unstereo.cli import cli

    natural = [f"She sat here {i}." for i in range(4)]
    unnatural = [f"Here sat she {i}." for i in range(4)]
    labelled = pd.DataFrame({
        "id": [f"x{i}" for i in range(8)], "sentence": natural + unnatural,
        "label": ["natural"] * 4 + ["unnatural"] * 4, "source": "t",
        "part": ["calibration", "heldout"] * 4,
    })  # fmt: skip
    labelled.to_csv(tmp_path / "set.csv", index=False)
    p = {s: 0.8 for s in natural} | {s: 0.2 for s in unnatural} | {unnatural[1]: 0.6}

    class FakeJudge:
        settings = None

        def p_yes(self, batch):
            return [p[s] for s in batch]

    class FakeScorer:
        def score(self, texts):  # ln p = -10 natural, -40 unnatural, 2 tokens
            return [(-10.0 if t in natural else -40.0, 2) for t in texts]

    monkeypatch.setattr(judge_mod, "load_judge", lambda request, settings=None: FakeJudge())
    monkeypatch.setattr(nat_mod, "make_scorer", lambda model, cache, external_dir=None: FakeScorer())
    (tmp_path / "config.yaml").write_text(
        "generate:\n  naturalness:\n    model: some/model\n    min_token_logprob: -3.0\n    start_logprob: -4.0\n"
    )
    args = ["generate", "judge-calibrate", str(tmp_path / "set.csv"), "-o", str(tmp_path / "out"),
            "--model", "some/judge", "--config", str(tmp_path / "config.yaml")]  # fmt: skip
    r = CliRunner().invoke(cli, args + ["--limit", "2"])
    assert r.exit_code == 0, r.output
    assert not (tmp_path / "out" / "results.csv").exists()
    r = CliRunner().invoke(cli, args)
    assert r.exit_code == 0, r.output
    res = pd.read_csv(tmp_path / "out" / "results.csv")
    # calibration scores: natural .8 .8, unnatural .2 .2 (x4, x6) -> threshold (0.2 + 0.8) / 2 = 0.5;
    # held-out: natural .8 .8 kept, unnatural .6 (x5, kept), .2 rejected -> natural P 2/3 R 1, unnatural P 1 R 1/2
    j = res[(res["method"] == "judge P(Yes)") & (res["threshold_from"] == "calibration")].set_index("part")
    assert j.loc["calibration", "threshold"] == pytest.approx(0.5)
    assert j.loc["heldout", "natural_precision"] == pytest.approx(2 / 3)
    assert j.loc["heldout", "unnatural_recall"] == pytest.approx(0.5)
    # log-likelihood at the configured -3: (-10 + 4) / 2 = -3 kept, (-40 + 4) / 2 = -18 rejected
    ll = res[(res["method"] == "log-likelihood") & (res["threshold_from"] == "config")].set_index("part")
    assert ll.loc["heldout", "balanced_accuracy"] == 1
