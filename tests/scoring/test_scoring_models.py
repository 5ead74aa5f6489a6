"""Acceptance: on the offline models the scorer agrees with a plain forward pass per sentence
(docs/methods.md#scoring-and-metrics).

For SmolLM2-135M-Instruct and Gemma-3-270M (GGUF, dequantised to fp32 on CPU), the scorer's ln p(s) on each scoring
path (tree, padded, full) for batch sizes 1, 7 and 32 over mixed-length sentences must match, within 2e-3 per sentence, an independent computation: one
sentence per forward pass, no padding and no attention mask, BOS prepended by hand, fp64 log_softmax.
(fp32 forward passes on CPU differ by up to ~2e-3 per sentence with the padded length alone on SmolLM2.)
"""

from __future__ import annotations

import pytest
import torch
from _float_tolerance import approx_scores, f32_sum_tol
from transformers import AutoTokenizer

from unstereo.models.gguf_tokenizer import needs_bpe_repair
from unstereo.models.load import ModelSpec, load_causal_lm, load_tokenizer
from unstereo.scoring import CausalScorer

pytestmark = [pytest.mark.slow, pytest.mark.models]

MODELS = {"smollm2": "SmolLM2-135M-Instruct.Q4_1.gguf", "gemma3": "gemma-3-270m-q4_k_m.gguf"}

# Mixed lengths: 1 to ~40 words, with pronouns, punctuation, quotes, numbers and a non-ASCII word.
SENTENCES = [
    "She",
    "He smiled.",
    "Her dog barked loudly.",
    "He gave him the keys to the car.",
    'She said "no" and left the room without a word.',
    "His brother bought 3 apples, 2 pears and a melon at the market on Sunday.",
    "Nobody expected her to win the long race against the reigning champion of the city.",
    "The nurse told him that the results would be ready tomorrow morning.",
    "He cooked dinner for his family every evening after work.",
    "She fixed the broken sink herself.",
    "Despite the heavy rain, he walked to the café to meet his old friend from university.",
    "Her research on protein folding was cited by hundreds of papers in the following decade, and she "
    "received several awards for it, including one from the national academy.",
    "He is a teacher.",
    "Is she coming?",
    "They asked him whether he had ever seen the northern lights, and he said that he had, once, as a child "
    "in a small village far to the north where his grandmother used to live.",
    "She painted the fence blue.",
    "His favourite book is about a sailor who loses his way at sea and finds an island.",
    "He laughed.",
    "After the meeting she wrote a long email to the whole team explaining the new schedule.",
    "Her answer surprised everyone.",
    "He plays the violin in an orchestra.",
    "She runs five kilometres every morning before breakfast, rain or shine.",
    "The manager thanked him for his help.",
    "She did it.",
    "He read the letter twice, folded it carefully, and put it back in the drawer of his desk.",
    "Her cat sleeps all day.",
    "When the train finally arrived, he had already been waiting on the cold platform for nearly two hours.",
    "She speaks three languages.",
    "He forgot his umbrella at the office again.",
    "The children followed her through the museum, asking questions about every painting they saw on the walls "
    "of the long gallery.",
    "Did he call?",
    "She planted tomatoes in the garden.",
    "His sister is an engineer at a small company that builds bridges.",
    "He won.",
    "She opened the window to let the fresh air in.",
    "He never liked coffee.",
    "Her neighbour lent him a ladder.",
]


@pytest.fixture(scope="module")
def loaded(resource):
    """name -> (model, tokenizer as unstereo.models.load.load gives it, tokenizer as transformers gives it);
    each model loaded once per module."""
    cache = {}

    def get(name):
        if name not in cache:
            path = str(resource(name) / MODELS[name])
            model, tok = load_causal_lm(path, dtype="float32", device="cpu")
            # the tokenizer transformers builds from the GGUF file itself (for Gemma: the Unigram one)
            raw = AutoTokenizer.from_pretrained(resource(name), gguf_file=MODELS[name])
            cache[name] = (model, tok, raw)
        return cache[name]

    return get


def independent_logprob(model, tokenizer, sentence: str) -> float:
    """ln p(s): one forward pass on [BOS] + tokens, no padding, fp64 log_softmax, summed over the sentence."""
    ids = [tokenizer.bos_token_id, *tokenizer(sentence, add_special_tokens=False)["input_ids"]]
    with torch.no_grad():
        logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
    lp = torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1))
    return float(lp.sum())


@pytest.mark.parametrize("name", sorted(MODELS))
def test_scorer_matches_plain_forward_pass(loaded, name):
    model, tokenizer, _ = loaded(name)
    assert tokenizer.bos_token_id is not None
    want = [independent_logprob(model, tokenizer, s) for s in SENTENCES]
    lengths = [len(tokenizer(s, add_special_tokens=False)["input_ids"]) for s in SENTENCES]
    assert min(lengths) <= 2 and max(lengths) >= 35  # mixed lengths indeed
    report = {}
    for path in ("auto", "padded", "full"):
        for batch_size in (1, 7, 32):
            scorer = CausalScorer(model, tokenizer, device="cpu", batch_size=batch_size, path=path)
            got = scorer.score(SENTENCES)
            assert scorer.path == (
                "tree" if path == "auto" else path
            )  # both models pass the fast paths' check
            assert [n for _, n in got] == lengths
            diffs = [abs(g - w) for (g, _), w in zip(got, want, strict=True)]
            report[path, batch_size] = max(diffs)
            # each sentence within float32's rounding of its n log-probs (tests/_float_tolerance.py)
            over = [
                (d, f32_sum_tol(w, n))
                for d, w, n in zip(diffs, want, lengths, strict=True)
                if d > f32_sum_tol(w, n)
            ]
            assert not over, (name, path, batch_size, over)
    print(
        f"\n{name}: max |scorer - plain forward| per sentence by path and batch size: "
        + ", ".join(f"{p} {b}: {d:.2e}" for (p, b), d in report.items())
    )


def test_gemma_gguf_tokenizer_is_repaired(loaded, resource):
    """transformers turns Gemma's SentencePiece BPE tokenizer into a Unigram one when reading a GGUF file; the
    repaired BPE tokenizer splits text into whole words and the model finds it far more likely."""
    model, fixed, broken = loaded("gemma3")
    s = "She went to the store and fixed her bike herself."
    assert fixed.convert_ids_to_tokens(fixed(s, add_special_tokens=False)["input_ids"]) == [
        "She",
        "▁went",
        "▁to",
        "▁the",
        "▁store",
        "▁and",
        "▁fixed",
        "▁her",
        "▁bike",
        "▁herself",
        ".",
    ]
    assert len(broken(s, add_special_tokens=False)["input_ids"]) > 11  # the Unigram model splits words
    for text in SENTENCES:  # lossless round trip
        assert fixed.decode(fixed(text, add_special_tokens=False)["input_ids"]) == text
    # the converted folder holds the repaired tokenizer: plain transformers (or lm-eval) loading it tokenizes alike
    folder = load_tokenizer(ModelSpec.parse(str(resource("gemma3") / MODELS["gemma3"])))
    assert not needs_bpe_repair(model, folder)
    for text in SENTENCES:
        assert folder(text)["input_ids"] == fixed(text)["input_ids"]
    sample = SENTENCES[::3]
    lp_fixed = sum(lp for lp, _ in CausalScorer(model, fixed, batch_size=16).score(sample))
    lp_broken = sum(lp for lp, _ in CausalScorer(model, broken, batch_size=16).score(sample))
    print(f"\ngemma3: total ln p of {len(sample)} sentences: BPE {lp_fixed:.1f}, Unigram {lp_broken:.1f}")
    assert lp_fixed > lp_broken + 5 * len(sample)


@pytest.mark.parametrize("name", sorted(MODELS))
def test_converted_folder_scores_in_plain_transformers(loaded, resource, name):
    """Any consumer of the converted folder (plain transformers here; lm-eval loads it the same way) gets the
    scorer's scores: its tokenizer as saved, the model as saved, BOS as the tokenizer adds it (prepended by hand
    when it does not), a plain fp64 log_softmax. For Gemma this fails with the Unigram tokenizer of the GGUF file."""
    from transformers import AutoModelForCausalLM

    folder = ModelSpec.parse(str(resource(name) / MODELS[name])).converted_dir
    tok = AutoTokenizer.from_pretrained(folder)
    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32).eval()
    sample = SENTENCES[::4]
    plain = []
    for s in sample:
        ids = tok(s)["input_ids"]
        ids = ids if ids[0] == tok.bos_token_id else [tok.bos_token_id, *ids]
        with torch.no_grad():
            logits = model(input_ids=torch.tensor([ids])).logits[0, :-1].double()
        plain.append(
            float(torch.log_softmax(logits, -1).gather(-1, torch.tensor(ids[1:]).unsqueeze(-1)).sum())
        )
    scorer_model, scorer_tok, _ = loaded(name)
    ours = CausalScorer(scorer_model, scorer_tok, batch_size=8).score(sample)
    diff = max(abs(a - b) for a, (b, _) in zip(plain, ours, strict=True))
    print(f"\n{name}: max |plain transformers on the folder - scorer| = {diff:.2e}")
    # float32's rounding of each sentence's sum (tests/_float_tolerance.py)
    assert plain == approx_scores(ours)
