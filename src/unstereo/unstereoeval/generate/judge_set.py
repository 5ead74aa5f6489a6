"""The labelled set on which the judge of sense is calibrated: natural and unnatural English sentences, with
a fixed calibration / held-out split.

Sources (column ``source``):

- ``released`` (natural): natural templates of the released USE-5 (``data/datasets/raw/USE-5.csv`` of the
  ``reference`` resource, read by :func:`unstereo.unstereoeval.benchmarks.readers.use_raw.read_use_raw`), filled with
  one gender (:func:`unstereo.templates.fill_template`).
- ``run`` (natural or unnatural): the candidate sentences of the offline default run (Qwen2.5-Coder-0.5B, 6 seed
  words), labelled by hand in ``data/judge/run-sentences.csv``; rows labelled ``unsure`` are left out.
- ``shuffled`` (unnatural): a released natural sentence with its words in another order (:func:`shuffle_words`).
- ``swapped`` (unnatural): a released natural template whose seed word is replaced by the seed word of another
  template (:func:`swap_word`), then filled: "He overcame his fear" -> "He overcame his taxidermy".

The reference texts are not kept in the repository: ``data/judge/recipe.json`` (:func:`make_recipe`) names the
released rows, the filling, the word order of each shuffle and the word of each swap, and :func:`build_set` rebuilds
the set from the release. The recipe lists only items a reader checked (a swap or shuffle that reads as a sensible
sentence was dropped from it, ``recipe["dropped"]``).

Split (:func:`split_parts`): within each (label, source) stratum the items, in id order, are shuffled with the
recipe's seed and the first half (rounded up) is ``calibration``, the rest ``heldout``.
"""

from __future__ import annotations

import json
import random
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from unstereo.errors import InputError
from unstereo.templates import fill_template

LABELS = ("natural", "unnatural")
RECIPE = Path("data/judge/recipe.json")
RUN_SENTENCES = Path("data/judge/run-sentences.csv")
RELEASE_FILE = "unstereo-eval/data/datasets/raw/USE-5.csv"  # inside the reference resource
COLUMNS = ["id", "sentence", "label", "source", "part", "origin"]

_END = re.compile(r"[.!?]+$")


def shuffle_words(sentence: str, order: Sequence[int]) -> str:
    """``sentence`` with its words (whitespace tokens; commas and the end mark dropped) in ``order`` (word i of the
    result is word ``order[i]``); the first word is lower-cased unless it is "I", the new first word is
    capitalised, and the sentence ends with its original end mark ("." if none)."""
    end = _END.search(sentence.strip())
    mark = end.group(0) if end else "."
    words = [w.strip(",;:") for w in _END.sub("", sentence.strip()).split()]
    words = [w for w in words if w]
    if sorted(order) != list(range(len(words))):
        raise ValueError(
            f"order {list(order)} is not a permutation of the {len(words)} words of {sentence!r}"
        )
    if words and words[0] != "I" and not words[0].isupper():
        words[0] = words[0][0].lower() + words[0][1:]
    text = " ".join(words[i] for i in order)
    return text[:1].upper() + text[1:] + mark


def random_order(n: int, rng: random.Random) -> list[int]:
    """A permutation of ``range(n)`` that moves at least half of the words (n >= 2), drawn from ``rng``."""
    if n < 2:
        raise ValueError("a shuffle needs at least two words")
    while True:
        order = list(range(n))
        rng.shuffle(order)
        if sum(i != j for i, j in enumerate(order)) * 2 >= n:
            return order


def swap_word(template: str, word: str, new: str) -> str | None:
    """``template`` with every whole-word occurrence of ``word`` (case-insensitive) replaced by ``new`` (capitalised
    where the occurrence was); None when ``word`` does not occur as a whole word."""
    pattern = re.compile(rf"(?<![\w'-]){re.escape(word)}(?![\w'-])", re.IGNORECASE)
    if not pattern.search(template):
        return None
    return pattern.sub(lambda m: new[0].upper() + new[1:] if m.group(0)[0].isupper() else new, template)


# ------------------------------------------------------------------------------------------------ recipe
def read_release(reference_dir: str | Path) -> pd.DataFrame:
    """Natural templates of the released USE-5 (pair_id ``USE-5:<row>``, template, seed_word) from the reference
    resource folder ``reference_dir``."""
    from unstereo.unstereoeval.benchmarks.readers.use_raw import read_use_raw

    path = Path(reference_dir) / RELEASE_FILE
    if not path.is_file():
        raise InputError(
            "the released USE-5 file is missing: fetch the reference resource (unstereo resources fetch reference)",
            path=path,
        )
    return read_use_raw(path, natural_only=True).set_index("pair_id", drop=False)


def make_recipe(
    release: pd.DataFrame, n_released: int = 240, n_shuffled: int = 120, n_swapped: int = 120, seed: int = 41
) -> dict[str, Any]:
    """Draw the released items: disjoint sets of templates for the natural, shuffled and swapped items (so that no
    template is on both sides of the split), a gender for each, a word order per shuffle and a replacement seed word
    (of another template, a different word) per swap. Deterministic in ``release`` and ``seed``."""
    rng = random.Random(seed)
    ids = sorted(release.index, key=lambda p: int(p.split(":")[1]))
    rng.shuffle(ids)
    words = sorted({str(w) for w in release["seed_word"].dropna()})
    items: list[dict[str, Any]] = []
    pos = 0

    def take(n: int, kind: str) -> None:
        nonlocal pos
        got = 0
        while got < n:
            if pos >= len(ids):
                raise InputError(f"the release has too few templates for {n} {kind} items")
            pid = ids[pos]
            pos += 1
            row = release.loc[pid]
            gender = rng.choice(("male", "female"))
            item: dict[str, Any] = {
                "id": f"{kind}-{got:03d}",
                "source": kind,
                "pair_id": pid,
                "gender": gender,
            }
            if kind == "shuffled":
                n_words = len(fill_template(row["template"], gender).split())
                if n_words < 3:
                    continue
                item["order"] = random_order(n_words, rng)
            elif kind == "swapped":
                new = rng.choice([w for w in words if w.lower() != str(row["seed_word"]).lower()])
                if swap_word(row["template"], str(row["seed_word"]), new) is None:
                    continue
                item["word"] = new
            items.append(item)
            got += 1

    take(n_released, "released")
    take(n_shuffled, "shuffled")
    take(n_swapped, "swapped")
    return {"release": RELEASE_FILE, "seed": seed, "items": items, "dropped": []}


def read_recipe(path: str | Path = RECIPE) -> dict[str, Any]:
    """The recipe JSON at ``path``."""
    try:
        recipe = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise InputError(f"cannot read the judge-set recipe: {exc}", path=path) from exc
    for key in ("seed", "items"):
        if key not in recipe:
            raise InputError(f"the judge-set recipe has no key {key!r}", path=path)
    return recipe


def recipe_sentence(item: dict[str, Any], release: pd.DataFrame) -> str:
    """The sentence of one released/shuffled/swapped recipe item."""
    if item["pair_id"] not in release.index:
        raise InputError(f"recipe item {item['id']}: no natural template {item['pair_id']} in the release")
    row = release.loc[item["pair_id"]]
    template = row["template"]
    if item["source"] == "swapped":
        template = swap_word(template, str(row["seed_word"]), item["word"])
        if template is None:
            raise InputError(f"recipe item {item['id']}: seed word {row['seed_word']!r} not in its template")
    sentence = fill_template(template, item["gender"])
    if item["source"] == "shuffled":
        sentence = shuffle_words(sentence, item["order"])
    return sentence


def read_run_sentences(path: str | Path = RUN_SENTENCES) -> pd.DataFrame:
    """The hand-labelled run sentences (sentence, label natural/unnatural/unsure, note)."""
    df = pd.read_csv(path, keep_default_na=False, dtype=str)
    for col in ("sentence", "label"):
        if col not in df.columns:
            raise InputError(f"needs a column {col!r}; has {list(df.columns)}", path=path)
    for i, label in enumerate(df["label"]):
        if label not in LABELS + ("unsure",):
            raise InputError(f"label {label!r} is not natural, unnatural or unsure", path=path, line=i + 2)
    return df


def split_parts(items: pd.DataFrame, seed: int, fraction: float = 0.5) -> pd.Series:
    """``calibration`` or ``heldout`` for each row of ``items`` (columns id, label, source): within each (label,
    source) stratum, ids sorted then shuffled with ``seed``; the first ceil(fraction * n) are calibration."""
    import math

    part = pd.Series("heldout", index=items.index)
    rng = random.Random(seed)
    for _, group in sorted(items.groupby(["label", "source"]), key=lambda kv: kv[0]):
        ids = sorted(group["id"])
        rng.shuffle(ids)
        chosen = set(ids[: math.ceil(fraction * len(ids))])
        part[group.index[group["id"].isin(chosen)]] = "calibration"
    return part


def build_set(
    reference_dir: str | Path,
    recipe: dict[str, Any] | str | Path = RECIPE,
    run_sentences: str | Path = RUN_SENTENCES,
) -> pd.DataFrame:
    """The labelled set: columns id, sentence, label, source, part (calibration/heldout), origin (the released pair
    id or the run file). Deterministic in the recipe, the run file and the release."""
    if not isinstance(recipe, dict):
        recipe = read_recipe(recipe)
    release = read_release(reference_dir)
    rows = []
    for item in recipe["items"]:
        label = "natural" if item["source"] == "released" else "unnatural"
        rows.append((item["id"], recipe_sentence(item, release), label, item["source"], item["pair_id"]))
    run = read_run_sentences(run_sentences)
    for i, rec in run.iterrows():
        if rec["label"] != "unsure":
            rows.append(
                (f"run-{i:03d}", rec["sentence"], rec["label"], "run", f"{Path(run_sentences).name}:{i + 2}")
            )
    df = pd.DataFrame(rows, columns=["id", "sentence", "label", "source", "origin"])
    dup = df["sentence"].duplicated(keep=False)
    if dup.any():
        raise InputError(f"the judge set has repeated sentences: {sorted(set(df.loc[dup, 'sentence']))[:5]}")
    df["part"] = split_parts(df, int(recipe["seed"]))
    return df[COLUMNS]
