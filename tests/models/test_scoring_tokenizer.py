"""The SentencePiece BPE merges rebuilt for Gemma GGUF tokenizers, on a hand-made vocabulary."""

from __future__ import annotations

from unstereo.models.gguf_tokenizer import sentencepiece_bpe_merges


def test_merges_follow_scores_and_skip_specials():
    # Pieces (score): a b c (0), ab (-1), bc (-2), abc (-3), <s> (0, special).
    # ab = a+b (score -1), bc = b+c (-2), abc = ab+c or a+bc (-3; ties ordered by the ids of the halves:
    # ab is id 3, a is id 0 -> (a, bc) first). Single characters and specials give no merge.
    vocab = [("a", 0.0), ("b", 0.0), ("c", 0.0), ("ab", -1.0), ("bc", -2.0), ("abc", -3.0), ("<s>", 0.0)]
    assert sentencepiece_bpe_merges(vocab, exclude={"<s>"}) == [
        ("a", "b"),
        ("b", "c"),
        ("a", "bc"),
        ("ab", "c"),
    ]


def test_bpe_tokenizer_from_merges_prefers_whole_words():
    # Scores as in Gemma's GGUF (minus the merge rank). A Unigram model maximises the sum of scores: "▁t" + "he"
    # = 0 - 5 = -5 beats "▁the" = -12 (what the GGUF conversion did). BPE merges by score instead:
    # ▁ t h e -> (▁, t) -> ▁t h e -> (h, e) -> ▁t he -> (▁t, he) -> ▁the.
    # "▁he▁t": (▁, t) is tried first but ▁ h comes first in the string: ▁ h e ▁ t -> ▁ h e ▁t -> ▁ he ▁t; no "▁he".
    from tokenizers import Tokenizer, models

    vocab = [
        ("▁", 0.0),
        ("t", 0.0),
        ("h", 0.0),
        ("e", 0.0),
        ("▁t", 0.0),
        ("he", -5.0),
        ("▁th", -8.0),
        ("▁the", -12.0),
    ]
    merges = sentencepiece_bpe_merges(vocab, exclude=set())
    bpe = Tokenizer(models.BPE({p: i for i, (p, _) in enumerate(vocab)}, merges))
    assert bpe.encode("▁the").tokens == ["▁the"]
    assert bpe.encode("▁he▁t").tokens == ["▁", "he", "▁t"]


def test_needs_bpe_repair_only_for_gemma_with_a_unigram_backend():
    # a Gemma model type with a Unigram backend (what transformers builds from the GGUF file) needs the repair;
    # a BPE or word-level backend, or another model type, does not.
    from types import SimpleNamespace

    from _scoring_models import word_tokenizer
    from tokenizers import Tokenizer, models
    from transformers import PreTrainedTokenizerFast

    from unstereo.models.gguf_tokenizer import needs_bpe_repair

    unigram = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.Unigram([("<unk>", 0.0), ("a", -1.0)], 0))
    )
    bpe = PreTrainedTokenizerFast(
        tokenizer_object=Tokenizer(models.BPE({"a": 0, "b": 1, "ab": 2}, [("a", "b")]))
    )
    gemma, llama = (SimpleNamespace(config=SimpleNamespace(model_type=t)) for t in ("gemma3_text", "llama"))
    assert needs_bpe_repair(gemma, unigram)
    assert not needs_bpe_repair(gemma, bpe)
    assert not needs_bpe_repair(gemma, word_tokenizer())
    assert not needs_bpe_repair(llama, unigram)
