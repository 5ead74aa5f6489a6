"""Building model variants on a tiny random GPT-2: the record (base, intervention, strength, steps, seed, the digest
of the text trained on), the model entry that resolves to the folder, a resumed build equal to an uninterrupted one,
the control's text, and the perplexity table against the base."""

from __future__ import annotations

import json

import pytest
import torch
from _scoring_models import save_tiny_gpt2

from unstereo.config import load_section
from unstereo.errors import InputError
from unstereo.finetune.perplexity import perplexity
from unstereo.models.load import load_causal_lm
from unstereo.models.spec import ModelSpec, resolve_model
from unstereo.models.variant import read_variant, variant_base
from unstereo.tables import read_table, write_table
from unstereo.variants.build import build_variant
from unstereo.variants.perplexity import perplexity_table
from unstereo.variants.schemas import PERPLEXITY
from unstereo.variants.swap import augment, pairs_swapper
from unstereo.variants.text import digest, split_text

# the tiny tokenizer's words (tests/_scoring_models.py WORDS); 7 of the 12 sentences hold a gendered word
TEXT = [
    "she went to the store .",
    "he gave her a book yesterday .",
    "a dog barked because nobody asked him .",
    "mary said hi to the champion .",
    "i expected his dog to win the long race .",
    "the dog went to the city .",
    "nobody expected the champion of the city .",
    "she said hi to the dog .",
    "he went to the long race yesterday .",
    "a dog gave nobody a book .",
    "i asked her because she said hi .",
    "the store of the city barked .",
]
SEED = 3


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    return save_tiny_gpt2(tmp_path_factory.mktemp("base") / "tiny")


def section(tmp_path, base, **more):
    (tmp_path / "text.txt").write_text("\n".join(TEXT) + "\n")
    models = {
        "tiny-cda": {"base": {"path": str(base)}, "intervention": "cda", "strength": 0.5},
        "tiny-control": {"base": {"path": str(base)}, "intervention": "control"},
        "tiny-emb": {"base": {"path": str(base)}, "intervention": "embedding", "strength": 10.0},
    }
    values = {"models": models, "text": [str(tmp_path / "text.txt")], "heldout_sentences": 3, "max_sentences": 20,
              "steps": 3, "batch_size": 2, "lr": 1e-2, "max_length": 16, "checkpoint_every": 1, "device": "cpu",
              **more}  # fmt: skip
    return load_section("variants", values)


def params(folder):
    model, _ = load_causal_lm(str(folder), dtype="float32", device="cpu")
    return [p.detach() for p in model.parameters()]


def test_the_record_and_the_model_entry(tmp_path, base):
    sec = section(tmp_path, base)
    out = tmp_path / "variants" / "tiny-cda"
    record = build_variant(sec, "tiny-cda", out, seed=SEED)
    assert json.loads((out / "variant.json").read_text()) == json.loads(json.dumps(record))
    assert (
        record["name"] == "tiny-cda"
        and record["base"] == {"path": str(base)}
        and record["base_model"] == str(base)
    )
    assert (record["intervention"], record["strength"], record["steps"], record["seed"]) == (
        "cda",
        0.5,
        3,
        SEED,
    )
    # the text trained on: the 9 training sentences (12 less 3 held out), half of their gendered ones swapped
    split = split_text(sec, SEED)
    assert len(split.train) == 9 and len(split.heldout) == 3 and not set(split.train) & set(split.heldout)
    swapped, flags = augment(split.train, pairs_swapper(), 0.5, SEED)
    n_gendered = sum("she" in s.split() or "he" in s.split() or "her" in s.split() or "him" in s.split()
                     or "his" in s.split() for s in split.train)  # fmt: skip
    assert record["sentences"] == {"train": 9, "heldout": 3, "swapped": int(n_gendered * 0.5 + 0.5)} == {
        "train": 9, "heldout": 3, "swapped": sum(flags)}  # fmt: skip
    assert record["text_sha256"] == digest(swapped) != digest(split.train)
    assert record["heldout_sha256"] == digest(split.heldout)
    assert len(json.loads((out / "history.json").read_text())) == 3 and not (out / "checkpoint.pt").exists()
    # {variant: NAME} resolves to the folder, which loads as a model, and names its base
    spec = resolve_model({"variant": "tiny-cda"}, variants_dir=tmp_path / "variants")
    assert spec == ModelSpec(path=str(out), variant="tiny-cda") and spec.to_arg() == str(out)
    assert variant_base(spec) == str(base) and variant_base(resolve_model(str(base))) is None
    # its label (the LLM cache's key) carries the build's fingerprint, so a rebuild of other settings is another model
    assert spec.label == f"{out}#variant-{record['fingerprint'][:16]}" == resolve_model(str(out)).label
    assert resolve_model(str(base)).label == str(base)
    assert all(not torch.equal(a, b) for a, b in zip(params(out), params(base), strict=True))


def test_a_resumed_build_equals_an_uninterrupted_one(tmp_path, base):
    sec = section(tmp_path, base)
    whole = build_variant(sec, "tiny-cda", tmp_path / "a", seed=SEED)

    def kill(step):
        if step == 2:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        build_variant(sec, "tiny-cda", tmp_path / "b", seed=SEED, after_step=kill)
    assert (tmp_path / "b" / "checkpoint.pt").exists() and not (tmp_path / "b" / "variant.json").exists()
    resumed = build_variant(sec, "tiny-cda", tmp_path / "b", seed=SEED)
    assert resumed == whole
    hist = [json.loads((tmp_path / d / "history.json").read_text()) for d in "ab"]
    assert [h["step"] for h in hist[1]] == [1, 2, 3] and hist[1][-1]["loss"] == pytest.approx(
        hist[0][-1]["loss"]
    )
    # atol 1e-6: the reasons in tests/finetune/test_finetune_regularised.py (a resumed run's parameters)
    for a, b in zip(params(tmp_path / "a"), params(tmp_path / "b"), strict=True):
        assert torch.allclose(a, b, atol=1e-6)
    # a checkpoint of other settings is not resumed: another seed's build starts afresh, as its own run would
    with pytest.raises(KeyboardInterrupt):
        build_variant(sec, "tiny-cda", tmp_path / "c", seed=SEED, after_step=kill)
    other = build_variant(sec, "tiny-cda", tmp_path / "c", seed=SEED + 1)
    assert other == build_variant(sec, "tiny-cda", tmp_path / "d", seed=SEED + 1)
    assert other["fingerprint"] != whole["fingerprint"]


def test_the_control_trains_on_the_unswapped_text_and_the_regulariser_on_the_gendered(tmp_path, base):
    sec = section(tmp_path, base)
    split = split_text(sec, SEED)
    control = build_variant(sec, "tiny-control", tmp_path / "control", seed=SEED)
    assert control["strength"] == 0.0 and control["sentences"]["swapped"] == 0
    assert control["text_sha256"] == digest(split.train)
    emb = build_variant(sec, "tiny-emb", tmp_path / "emb", seed=SEED)
    gendered = [s for s in split.train if pairs_swapper().pattern.search(s)]
    assert emb["strength"] == 10.0 and emb["sentences"]["examples"] == len(gendered)
    assert emb["text_sha256"] == digest(gendered)
    assert {"loss", "lm", "fair"} <= set(json.loads((tmp_path / "emb" / "history.json").read_text())[0])


def test_perplexity_against_the_base(tmp_path, base):
    sec = section(tmp_path, base)
    folders = [tmp_path / "v" / n for n in ("tiny-cda", "tiny-control")]
    for f in folders:
        build_variant(sec, f.name, f, seed=SEED)
    df = perplexity_table(folders, sec, seed=SEED, device="cpu")
    write_table(df, tmp_path / "perplexity.parquet", PERPLEXITY)
    df = read_table(tmp_path / "perplexity.parquet", PERPLEXITY)
    heldout = split_text(sec, SEED).heldout
    gendered = [s for s in heldout if pairs_swapper().pattern.search(s)]
    model, tok = load_causal_lm(str(base), dtype="float32", device="cpu")
    assert list(df["variant"]) == ["tiny-cda", "tiny-control"] and set(df["base"]) == {str(base)}
    assert list(df["intervention"]) == ["cda", "control"] and list(df["strength"]) == [0.5, 0.0]
    assert df["ppl_base"].tolist() == pytest.approx([perplexity(model, tok, heldout)] * 2)
    assert df["ppl_gendered_base"].tolist() == pytest.approx([perplexity(model, tok, gendered)] * 2)
    variant, vtok = load_causal_lm(str(folders[1]), dtype="float32", device="cpu")
    assert df["ppl_variant"].iloc[1] == pytest.approx(perplexity(variant, vtok, heldout))
    assert df["ppl_ratio"].tolist() == pytest.approx((df["ppl_variant"] / df["ppl_base"]).tolist())
    assert (df["ppl_variant"] != df["ppl_base"]).all()
    assert (
        df["heldout_sentences"].tolist() == [3, 3] and df["heldout_gendered"].tolist() == [len(gendered)] * 2
    )
    # held-out sentences of another seed are not those the variants were built with
    with pytest.raises(InputError, match="variant.json.*rebuild the variant"):
        perplexity_table(folders, sec, seed=SEED + 1, device="cpu")


def test_records_are_checked(tmp_path):
    with pytest.raises(InputError, match="no variant record"):
        read_variant(tmp_path)
    (tmp_path / "variant.json").write_text('{"name": "x"}')
    with pytest.raises(InputError, match="lacks"):
        read_variant(tmp_path)


POLAR = [
    "she said the dog was good and happy .",
    "he said the store was terrible and bad .",
    "her book was wonderful .",
    "his race was awful and sad .",
    "she is great and kind .",
    "he is horrible and cruel .",
    "i love her dog .",
    "i hate his store .",
]


def test_the_sentiment_intervention_trains_its_head_on_classifier_labels(tmp_path, base):
    sec = section(tmp_path, base, heldout_sentences=1, head_steps=5)
    sec["models"]["tiny-sent"] = {"base": {"path": str(base)}, "intervention": "sentiment", "strength": 5.0}
    with pytest.raises(InputError, match="clear sentiment under 'vader'"):  # the neutral sentences of TEXT
        build_variant(sec, "tiny-sent", tmp_path / "neutral", seed=SEED)
    (tmp_path / "polar.txt").write_text("\n".join(POLAR) + "\n")
    sec["text"] = [str(tmp_path / "polar.txt")]
    record = build_variant(sec, "tiny-sent", tmp_path / "sent", seed=SEED)
    assert record["intervention"] == "sentiment" and record["strength"] == 5.0
    assert record["sentences"] == {"train": 7, "heldout": 1, "examples": 7}
    hist = json.loads((tmp_path / "sent" / "history.json").read_text())
    assert len(hist) == 3 and all(
        h["loss"] == pytest.approx(h["lm"] + 5.0 * h["fair"], rel=1e-5) for h in hist
    )
