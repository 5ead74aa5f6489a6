"""Replay of the released USE-5 decisions through the whole generate stage (golden test; needs the reference).

A scripted OpenAI-compatible server answers from ``data/datasets/raw/USE-5.csv``:
- Generation prompt for (seed word, pronoun, n-th occurrence of the word): the rows of that word and pronoun in the
  n-th sample block of the file, as a numbered list. Rows the release marks ``is_revised`` are sent with the seed
  word spoiled (``word`` -> ``wordzz``) so that the stage has to revise them; the revision prompts answer the
  released sentence.
- Editing prompt for a she-sentence: the released male version (the template filled with he/his/him).
- Semantic filtering prompt: the released ``likely_under`` answer for that filling.

The stage must reproduce the released templates, ``is_revised`` and ``is_natural`` flags. Settings are the
reference-faithful ones (``pairing: llm`` because the release edited every she-sentence with the LLM, and
``strip_quotes: false`` because it kept quotes around revised he-sentences); every disagreement is categorised.
"""

from __future__ import annotations

import re

import pandas as pd
import pytest
from llm_test_server import Reply, ScriptedServer, prompt_matcher, user_text

from unstereo.llm import make_client
from unstereo.llm.parse import has_pronoun, has_word, strip_quotes
from unstereo.templates import fill_template, templatize_male
from unstereo.unstereoeval.generate import GenerateSettings, generate_benchmark, load_prompts
from unstereo.unstereoeval.generate.minimal import check_minimal_pair
from unstereo.unstereoeval.generate.pairing import direct_female_to_male

pytestmark = [pytest.mark.reference, pytest.mark.slow]


def _norm(s: str) -> str:
    return " ".join(strip_quotes(s).split())


def load_raw(reference_dir):
    path = reference_dir / "unstereo-eval" / "data" / "datasets" / "raw" / "USE-5.csv"
    if not path.is_file():
        pytest.skip(f"{path} not found")
    raw = pd.read_csv(path, index_col=0, keep_default_na=False, na_values=[""])
    # The file is 5 samples of seed words, each a block of he-rows then a block of she-rows.
    raw["block"] = (raw["target_word"] != raw["target_word"].shift()).cumsum()
    raw["sample"] = (raw["block"] - 1) // 2
    raw["likely"] = raw["likely_under"].map(eval)
    return raw


class Replay:
    def __init__(self, raw: pd.DataFrame):
        self.gen: dict[tuple[str, str, int], list[str]] = {}
        self.row_of: dict[tuple[str, str, int, int], int] = {}
        self.revise: dict[str, str] = {}
        self.edit: dict[str, str] = {}
        self.likely: dict[str, str] = {}
        self.conflicts = 0
        occurrence: dict[tuple[str, int], int] = {}
        seed_words: list[str] = []
        for sample, block in raw.groupby("sample", sort=True):
            for word in dict.fromkeys(block["word"]):
                occurrence[(word, sample)] = sum(1 for w in seed_words if w == word)
                seed_words.append(word)
        self.seed_words = seed_words
        for (sample, word, target), g in raw.groupby(["sample", "word", "target_word"], sort=False):
            occ = occurrence[(word, sample)]
            items = []
            for j, (idx, r) in enumerate(g.iterrows()):
                sent = r["sentence"]
                if r["is_revised"]:
                    spoiled = re.sub(rf"\b{re.escape(word)}\b", word + "zz", sent, flags=re.IGNORECASE)
                    self.revise[_norm(spoiled)] = sent
                    sent = spoiled
                items.append(sent)
                self.row_of[(word, target, occ, j)] = idx
                if target == "she":
                    self.edit[_norm(r["sentence"])] = fill_template(r["template"], "male")
                for gender in ("male", "female"):
                    key = _norm(fill_template(r["template"], gender))
                    answer = r["likely"][gender]
                    if self.likely.setdefault(key, answer) != answer:
                        self.conflicts += 1
            self.gen[(word, target, occ)] = items

    def __call__(self, body, index):
        pid, f = self.match(user_text(body))
        if pid == "generation":
            items = self.gen.get((f["attribute"], f["group"], body["seed"] % 100_000))
            if not items:
                return Reply("I'm sorry, I cannot help with that.")
            return Reply("\n".join(f"{i + 1}. {s}" for i, s in enumerate(items)))
        if pid and pid.startswith("revision"):
            return Reply(self.revise.get(_norm(f["sentence"]), f["sentence"]))
        if pid == "editing":
            return Reply(self.edit.get(_norm(f["sentence"]), f["sentence"]))
        if pid == "semantic_filter":
            return Reply(self.likely.get(_norm(f["sentence"]), "unlikely"))
        return Reply(f"unknown prompt {index}", status=400)


def test_replay_reproduces_released_use5(reference_dir, tmp_path, monkeypatch):
    raw = load_raw(reference_dir)
    replay = Replay(raw)
    prompts = load_prompts()
    replay.match = prompt_matcher(prompts)
    # dedup=False: the release kept repeated templates (the paper has no deduplication step)
    # chat_reply_filter=False: the naturalness checks beyond the paper are off (the minimal-pair post-conditions are
    # not optional: category (d) below)
    settings = GenerateSettings(
        revision_max_tries=1,
        generation_max_tries=1,
        pairing="llm",
        strip_quotes=False,
        dedup=False,
        seed=0,
        chat_reply_filter=False,
    )
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with ScriptedServer(replay) as srv:
        client = make_client({"endpoint": srv.base_url, "name": "replay", "api_key_env": None},
                             cache=tmp_path / "c.sqlite", concurrency=16, max_retries=0, timeout=30)  # fmt: skip
        full = generate_benchmark(replay.seed_words, 5, client, prompts, settings, benchmark="USE-5")
        client.close()
    assert len(replay.seed_words) == 500 and len(set(replay.seed_words)) == 493

    ours = full[full["item"] >= 0].copy()
    ours["ref"] = [replay.row_of[(w, t, o, j)] for w, t, o, j in
                   zip(ours["word"], ours["target_word"], ours["sample"], ours["item"], strict=True)]  # fmt: skip
    assert ours["ref"].is_unique and set(ours["ref"]) == set(raw.index)  # every released row replayed once
    m = ours.set_index("ref").join(raw.add_suffix("_ref"))
    same_template = m["template"] == m["template_ref"]
    same_natural = m["is_natural"].fillna(False).astype(bool) == m["is_natural_ref"]
    same_revised = m["is_revised"].astype(bool) == m["is_revised_ref"]
    same_likely = m["likely_under"] == m["likely_under_ref"]
    diff = m[~(same_template & same_natural & same_revised & same_likely)]

    # Every difference falls in one of three categories, computed from the released file alone:
    # (a) released rows without the seed word or a pronoun of the asked gender: the release's own check let them
    #     through; ours sends them to revision, where the replay has no better answer, and discards them;
    ok = [
        has_pronoun(s, t) and has_word(s, w)
        for s, t, w in zip(raw["sentence"], raw["target_word"], raw["word"], strict=True)
    ]
    no_pronoun = set(raw.index[~pd.Series(ok, index=raw.index)])
    # (b) released sentences that are a whole multi-line answer (commentary kept); ours keeps the first line only;
    multi_line = set(raw.index[raw["sentence"].str.contains("\n")])
    # (c) released is_natural contradicting the released likely_under (both 'likely' required).
    both = raw["likely"].map(lambda d: d["male"] == "likely" and d["female"] == "likely")
    inconsistent = set(raw.index[both != raw["is_natural"]])
    # (d) released pairs that are not minimal pairs (unstereo.unstereoeval.generate.minimal: "his/her", a pronoun of the other
    #     gender, a gendered word, ...) or whose she-sentence is not its template's female filling: ours discards them.
    not_minimal = set()
    for idx, r in raw.iterrows():
        t = r["template"]
        male, female = fill_template(t, "male"), fill_template(t, "female")
        if check_minimal_pair(male, female, t) or (
            r["target_word"] == "she" and female != r["sentence"].strip()
        ):
            not_minimal.add(idx)
    print(f"\nreplay: {len(m)} released rows; templates agree {int(same_template.sum())}, is_natural agree "
          f"{int(same_natural.sum())}, is_revised agree {int(same_revised.sum())}, likely_under agree "
          f"{int(same_likely.sum())}; differing rows {sorted(diff.index)}: no word/pronoun {sorted(no_pronoun)}, "
          f"multi-line {sorted(multi_line)}, inconsistent is_natural {sorted(inconsistent)}; "
          f"not minimal pairs {len(not_minimal)}; "
          f"conflicting filter answers in the release {replay.conflicts}; calls {len(srv.log)}")  # fmt: skip
    assert set(diff.index) == no_pronoun | multi_line | inconsistent | not_minimal
    she = m[m["target_word"] == "she"]
    same_mod = int((she["modifications"] == she["modifications_ref"]).sum())
    print(f"modifications agree on {same_mod} of {len(she)} she-rows")
    assert same_mod >= len(she) - 10
    assert (m.loc[sorted(no_pronoun | multi_line), "status"] == "discarded").all()
    assert len(set(diff.index) - not_minimal) <= 6
    assert (m.loc[sorted(not_minimal), "status"] != "kept").all()  # never kept


def test_default_pairing_vs_released_she_rows(reference_dir):
    """With the default ``pairing: auto`` (paper: direct mapping where unambiguous) the she-rows without 'her' get
    templates from direct mapping; they differ from the release exactly where the release's Editing call changed
    more than pronouns (typo fixes, rewordings) or dropped wrapping quotes."""
    raw = load_raw(reference_dir)
    she = raw[(raw["target_word"] == "she") & ~raw["sentence"].str.contains(r"\bher\b", case=False)]
    ours = she["sentence"].map(lambda s: templatize_male(direct_female_to_male(strip_quotes(s))))
    differ = she[ours != she["template"]]
    # Every difference is a non-pronoun edit by the released LLM call: the templates differ outside placeholders.
    for idx, r in differ.iterrows():
        a = re.sub(r"\{pronoun\d?\}(self)?", "P", ours[idx])
        b = re.sub(r"\{pronoun\d?\}(self)?", "P", r["template"])
        assert a != b, idx
    unstripped = she["sentence"].map(lambda s: templatize_male(direct_female_to_male(s))) != she["template"]
    print(f"\nshe-rows without 'her': {len(she)}; direct mapping differs from the released template in "
          f"{len(differ)} (LLM edits beyond pronouns); {int(unstripped.sum()) - len(differ)} more without quote "
          "stripping (the released Editing answers dropped wrapping quotes)")  # fmt: skip
    assert len(differ) < 0.05 * len(she)
