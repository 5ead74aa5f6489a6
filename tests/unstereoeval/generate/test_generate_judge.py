"""The judge of sense (unstereo.unstereoeval.generate.judge): P(Yes) renormalised over {Yes, No} from the next-token logits after
the chat template's opened assistant turn; the prompt is the chat template's; the shared-prefix cache, padding and
batching do not change a score; the CLI writes the same numbers."""

from __future__ import annotations

import math
from types import SimpleNamespace

import pytest
import torch
from _float_tolerance import f32_prob_tol
from _scoring_models import word_tokenizer

from unstereo.errors import UnstereoError
from unstereo.unstereoeval.generate.judge import JudgeSettings, SenseJudge, common_prefix

# A chat template over the word-level test tokenizer (it lower-cases and splits punctuation).
TEMPLATE = (
    "{% for m in messages %}<s> {{ m['role'] }} : {{ m['content'] }} </s> {% endfor %}"
    "{% if add_generation_prompt %}<s> assistant :{% endif %}"
)
WORDS = (
    "system user assistant : is the following sentence natural , sensible english grammatical meaningful and "
    "something a native speaker could plausibly say or write ? answer with yes no only he she was bald tomorrow "
    "went to store . prefers dress felt border bowed sun"
).split()
QUESTION = "Is the following sentence natural ? Answer yes or no : {sentence}"


def chat_tokenizer():
    tok = word_tokenizer(words=WORDS)
    tok.chat_template = TEMPLATE
    return tok


class BagOfWordsLM(torch.nn.Module):
    """A causal 'LM' whose logits at position t are the sum of ``table[token]`` over the (unmasked) tokens up to t,
    so the logits after a prompt are worked out by hand. It takes a prefix cache (the running sum) like a
    transformers model: ``past_key_values`` in, ``past_key_values`` out with ``use_cache``."""

    class Cache:
        def __init__(self, total):
            self.total = total  # [batch, vocab]

        def batch_repeat_interleave(self, n):
            self.total = self.total.repeat_interleave(n, dim=0)

    def __init__(self, table):
        super().__init__()
        self.table = table
        self.device = torch.device("cpu")
        self.calls = []

    def forward(
        self, input_ids, attention_mask=None, past_key_values=None, use_cache=False, logits_to_keep=0, **kw
    ):
        self.calls.append(tuple(input_ids.shape))
        rows = self.table[input_ids]
        if (
            attention_mask is not None
        ):  # the mask covers the cached prefix too: its last columns are these tokens
            rows = rows * attention_mask[:, -input_ids.shape[1] :, None]
        sums = rows.cumsum(dim=1)
        if past_key_values is not None:
            sums = sums + past_key_values.total[:, None, :]
        cache = self.Cache(sums[:, -1]) if use_cache else None
        return SimpleNamespace(
            logits=sums[:, -logits_to_keep:] if logits_to_keep else sums, past_key_values=cache
        )


def bag_of_words(tok):
    """Only three words move the answer: 'store' adds ln 3 to 'yes' (and 10 to 'the', mass outside {yes, no} that
    must not count), 'tomorrow' adds ln 4 to 'no', and the padding token would add 5 to 'yes' if it were not masked."""
    vocab = tok.get_vocab()
    table = torch.zeros(len(tok), len(tok))
    table[vocab["store"], vocab["yes"]] = math.log(3)
    table[vocab["store"], vocab["the"]] = 10.0
    table[vocab["tomorrow"], vocab["no"]] = math.log(4)
    table[tok.pad_token_id, vocab["yes"]] = 5.0
    return BagOfWordsLM(table)


# P(Yes) = e^{l_yes} / (e^{l_yes} + e^{l_no}) with l_yes - l_no = ln 3 [store] - ln 4 [tomorrow]
HAND = {
    "He went to the store.": 3 / 4,  # ln 3: 3 / (3 + 1)
    "He was bald tomorrow.": 1 / 5,  # -ln 4: 1 / (1 + 4)
    "She went to the store tomorrow.": 3 / 7,  # ln 3/4: 3 / (3 + 4)
    "She felt the border.": 1 / 2,  # 0
}


@pytest.mark.parametrize("share_prefix", [True, False])
@pytest.mark.parametrize("batch_size", [1, 3, 16])
def test_p_yes_worked_out_by_hand(share_prefix, batch_size):
    tok = chat_tokenizer()
    lm = bag_of_words(tok)
    judge = SenseJudge(
        lm,
        tok,
        JudgeSettings(question=QUESTION, batch_size=batch_size, threshold=0.5),
        share_prefix=share_prefix,
    )
    got = judge.p_yes(list(HAND))
    # the table is fp32: the logits ln 3, ln 4 (< 2) are rounded once each, the softmax of two of them once more
    assert got == pytest.approx(list(HAND.values()), abs=f32_prob_tol(2.0))
    shapes = lm.calls
    if share_prefix:  # one pass over the shared prefix, then only the sentences' own tokens
        prefix_len = common_prefix([judge.prompt_ids(s) for s in HAND])
        assert shapes[0] == (1, prefix_len) and prefix_len == 14  # "<s> user : is the ... or no :"
        assert all(width <= 12 for _, width in shapes[1:])
    assert sum(n for n, _ in shapes[1 if share_prefix else 0 :]) == len(HAND)
    assert [k for _, k in judge.judge(list(HAND))] == [True, False, False, True]  # P(Yes) >= 0.5 passes


def test_threshold():
    tok = chat_tokenizer()
    judge = SenseJudge(bag_of_words(tok), tok, JudgeSettings(question=QUESTION, threshold=0.75))
    assert [k for _, k in judge.judge(list(HAND))] == [True, False, False, False]  # 3/4 >= 0.75 passes
    with pytest.raises(UnstereoError, match="threshold"):
        JudgeSettings(threshold=1.5)
    with pytest.raises(UnstereoError, match=r"\{sentence\}"):
        JudgeSettings(question="Is it natural?")


def test_the_prompt_is_the_chat_template_with_the_assistant_turn_opened():
    tok = chat_tokenizer()
    judge = SenseJudge(bag_of_words(tok), tok, JudgeSettings(question=QUESTION, system="You judge English."))
    sentence = "He was bald tomorrow."
    messages = [
        {"role": "system", "content": "You judge English."},
        {"role": "user", "content": QUESTION.format(sentence=sentence)},
    ]
    want = tok.apply_chat_template(messages, tokenize=False, add_generation_prompt=True)
    assert judge.prompt(sentence) == want
    assert want == (
        "<s> system : You judge English. </s> <s> user : Is the following sentence natural ? Answer yes or no : "
        "He was bald tomorrow. </s> <s> assistant :"
    )
    assert judge.prompt_ids(sentence) == tok(want, add_special_tokens=False)["input_ids"]
    tok.chat_template = None
    with pytest.raises(UnstereoError, match="chat template"):
        SenseJudge(bag_of_words(tok), tok)


def test_answers_must_be_single_tokens():
    tok = chat_tokenizer()
    with pytest.raises(UnstereoError, match="'Yes please' is 2 tokens"):
        SenseJudge(bag_of_words(tok), tok, JudgeSettings(yes=("Yes please",)))


def test_common_prefix():
    assert common_prefix([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]]) == 2
    assert common_prefix([[1, 2, 3], [1, 2, 3]]) == 2  # each row keeps one token of its own
    assert common_prefix([[7], [7, 8]]) == 0
    assert common_prefix([]) == 0


def tiny_qwen2(tok):
    import transformers as tf

    torch.manual_seed(0)
    config = tf.Qwen2Config(
        hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
        max_position_embeddings=256, initializer_range=0.3, vocab_size=len(tok), bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
    )  # fmt: skip
    return tf.Qwen2ForCausalLM(config).eval()


SENTENCES = [
    "He was bald tomorrow.",
    "She prefers a bald dress.",
    "He bowed to the sun.",
    "He went to the store.",
]


# P(Yes) of tiny_qwen2 computed two ways (padded, shared-prefix batches; one plain pass): float32's error of a
# probability from two logits, which are below 5 in size for these sentences (8 as the bound; tests/_float_tolerance.py)
P_TOL = f32_prob_tol(8.0)


def by_hand(lm, judge, sentence):
    """P(Yes) from the logits of one plain forward pass over the whole prompt (no cache, no padding)."""
    ids = torch.tensor([judge.prompt_ids(sentence)])
    with torch.no_grad():
        logits = lm(input_ids=ids).logits[0, -1].double()
    (y,), (n,) = judge.yes_ids, judge.no_ids
    return math.exp(logits[y]) / (math.exp(logits[y]) + math.exp(logits[n]))


def test_a_real_architecture_matches_the_plain_forward_pass():
    """A random 2-layer Qwen2: the judge's shared-prefix, left-padded batches give the P(Yes) computed by hand from
    one unpadded forward pass per prompt, whatever the batch size."""
    tok = chat_tokenizer()
    lm = tiny_qwen2(tok)
    judge = SenseJudge(lm, tok, JudgeSettings(question=QUESTION, batch_size=3))
    want = [by_hand(lm, judge, s) for s in SENTENCES]
    assert max(want) - min(want) > 1e-3  # the sentences matter (a constant would pass for the wrong reason)
    tol = P_TOL
    assert judge.p_yes(SENTENCES) == pytest.approx(want, abs=tol)
    for share_prefix in (True, False):
        other = SenseJudge(lm, tok, JudgeSettings(question=QUESTION, batch_size=1), share_prefix=share_prefix)
        assert other.p_yes(SENTENCES) == pytest.approx(want, abs=tol)
    assert judge.p_yes(SENTENCES[::-1]) == pytest.approx(want[::-1], abs=tol)


def test_cli_judge_writes_the_library_scores(tmp_path):
    import pandas as pd

    from unstereo.cli import main

    tok = chat_tokenizer()
    lm = tiny_qwen2(tok)
    folder = tmp_path / "tiny-qwen2"
    lm.save_pretrained(folder)
    tok.save_pretrained(folder)
    judge = SenseJudge(lm, tok, JudgeSettings(question=QUESTION))
    want = judge.p_yes(SENTENCES)
    (tmp_path / "s.txt").write_text("\n".join(SENTENCES) + "\n\n")
    out = tmp_path / "judged.csv"
    # keeps the two highest: midway between the 2nd and 3rd values, so that float32 rounding of the CLI's batches
    # (batch size 2 here, the library's default above; another CPU kind) cannot move a value across it
    low, high = sorted(want)[1:3]
    assert high - low > 1e-3
    threshold = (low + high) / 2
    main(["generate", "judge", str(folder), str(tmp_path / "s.txt"), "-o", str(out), "--question", QUESTION,
          "--threshold", repr(threshold), "--device", "cpu", "--batch-size", "2"])  # fmt: skip
    df = pd.read_csv(out)
    assert list(df.columns) == ["sentence", "p_yes", "keep"]
    assert list(df["sentence"]) == SENTENCES
    assert list(df["p_yes"]) == pytest.approx(want, abs=P_TOL)
    assert list(df["keep"]) == [p >= threshold for p in want] and df["keep"].sum() == 2
    # a table input names its column
    pd.DataFrame({"text": SENTENCES}).to_csv(tmp_path / "s.csv", index=False)
    with pytest.raises(SystemExit) as exc:
        main(
            [
                "generate",
                "judge",
                str(folder),
                str(tmp_path / "s.csv"),
                "-o",
                str(out),
                "--column",
                "sentence",
            ]
        )
    assert exc.value.code == 1
