"""Naturalness checks of generated sentences that do not ask the generator: a chat-reply detector and the
per-token log-likelihood under a second, offline language model.

- :func:`chat_reply`: the reason a sentence reads as an assistant's reply rather than a sentence of English, or
  None. Signs (case-insensitive unless said): the first-person singular subject "I" (I, I'm, I've, I'll, I'd; case
  sensitive: the assistant speaks as "I"; "me", "my", "we", "us" are allowed: 0.25% of the released natural USE-5
  templates have them, e.g. "{pronoun} reminds me of sunshine."), an apology ("sorry" opening the sentence,
  "apologise"), an assistant's opener ("Sure", "Certainly", "Of course", "Here is", "Here are", "Here's", "Okay",
  "Absolutely", "Note"), the task's vocabulary ("sentence(s)", "pronoun(s)", "task", "revised", "revision",
  "rewrite", "numbered", "gender-neutral", "as an AI", "language model"), a line break or markdown ``**``, and any
  4 consecutive words of a prompt of the pipeline (a quote of the task; :func:`task_ngrams`).
- :func:`repetition`: a degenerate answer, a word (not a function word) three times or more.
- :func:`token_logprob`: (ln p(sentence) - a fixed start cost) / scored tokens under a causal LM
  (:mod:`unstereo.scoring`); a pair is kept when both its sentences reach the configured threshold
  (``generate.naturalness.min_token_logprob``, ``start_logprob``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from unstereo.unstereoeval.prompts import PromptSet

NGRAM = 4
_FIRST_PERSON = re.compile(r"(?<![\w'])I(?:'(?:m|ve|ll|d))?(?![\w])")
_APOLOGY = re.compile(r"^\W*sorry\b|\bapologi[sz]", re.IGNORECASE)
_OPENER = re.compile(
    r"^\W*(?:sure|certainly|of course|here is|here are|here's|okay|ok|absolutely|note)\b", re.IGNORECASE
)
_TASK_WORDS = re.compile(
    r"\b(?:sentences?|pronouns?|task|revised|revision|rewrite|rewritten|numbered|gender[- ]neutral|as an ai|"
    r"language model)\b",
    re.IGNORECASE,
)
_FIELD = re.compile(r"\{\w+\}")
_WORD = re.compile(r"[a-z]+(?:'[a-z]+)?")


def _lower_words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def task_ngrams(prompts: PromptSet | Iterable[str], n: int = NGRAM) -> frozenset[tuple[str, ...]]:
    """Every run of ``n`` consecutive words of the prompts' texts that crosses no ``{field}`` (lower-cased)."""
    texts = (
        [prompts.generation.text, prompts.editing.text, prompts.semantic_filter.text]
        + [p.text for p in prompts.revision]
        if isinstance(prompts, PromptSet)
        else list(prompts)
    )
    grams: set[tuple[str, ...]] = set()
    for text in texts:
        for part in _FIELD.split(text):
            w = _lower_words(part)
            grams.update(tuple(w[i : i + n]) for i in range(len(w) - n + 1))
    return frozenset(grams)


def chat_reply(sentence: str, ngrams: frozenset[tuple[str, ...]] = frozenset()) -> str | None:
    """Why ``sentence`` reads as a chat reply ("first person: 'I'", "quotes the task: '...'"), or None."""
    checks = (
        ("first person", _FIRST_PERSON.search(sentence)),
        ("apology", _APOLOGY.search(sentence)),
        ("assistant opener", _OPENER.search(sentence)),
        ("task words", _TASK_WORDS.search(sentence)),
        ("line break", re.search(r"[\r\n]", sentence)),
        ("markdown", re.search(r"\*\*", sentence)),
    )
    for name, m in checks:
        if m:
            return f"{name}: {m.group(0).strip()!r}"
    if ngrams:
        w = _lower_words(sentence)
        for i in range(len(w) - NGRAM + 1):
            gram = tuple(w[i : i + NGRAM])
            if gram in ngrams:
                return f"quotes the task: {' '.join(gram)!r}"
    return None


# words a short sentence may repeat (function words)
_COMMON = frozenset("the a an and or of to in on at for with by from as is was be it its that this".split())


def repetition(sentence: str, times: int = 3) -> str | None:
    """A degenerate answer: a word other than a function word appears ``times`` times or more ("He bolted the
    bolted bolted bolted ...": repetition raises a language model's likelihood, so the log-likelihood filter lets it
    pass). Returns "repetition: '<word>' n times" or None."""
    counts: dict[str, int] = {}
    for w in _lower_words(sentence):
        if w not in _COMMON:
            counts[w] = counts.get(w, 0) + 1
    word, n = max(counts.items(), key=lambda x: x[1], default=("", 0))
    return f"repetition: {word!r} {n} times" if n >= times else None


def token_logprob(scorer: Any, sentences: list[str], start_logprob: float = 0.0) -> list[float]:
    """(ln p(s) - ``start_logprob``) / scored tokens of each sentence under ``scorer`` (a :mod:`unstereo.scoring`
    scorer: ``score(list) -> [(ln p, ntok)]``); -inf for a sentence with no scored token.

    ``start_logprob`` is the part of ln p that does not grow with the length (a sentence's first tokens are the
    least predictable): with 0 this is the plain per-token mean, which is much lower for short sentences (natural
    released USE sentences: median -7.4 at <= 6 tokens, -3.3 at > 30 under SmolLM2-135M); with the fitted value
    (``ln p ~ a * tokens + start_logprob``) the median is the same at every length (docs/methods.md)."""
    return [(lp - start_logprob) / n if n else float("-inf") for lp, n in scorer.score(list(sentences))]


def make_scorer(model: Any, cache: str | None, external_dir: str | None = None) -> Any:
    """A cached causal scorer for ``model``, loaded on the first uncached text; ``cache`` is a score-cache SQLite
    file (:class:`unstereo.scoring.cache.ScoreCache`), None for none. ``model`` is a
    :class:`~unstereo.models.request.ModelRequest` (taken whole; ``external_dir`` unused) or a model spec mapping or
    string, resolved here into one (against ``external_dir``)."""
    from unstereo.models.request import as_request
    from unstereo.scoring.cache import CachedScorer, ScoreCache
    from unstereo.scoring.registry import scorer_for

    request = as_request(model, key="generate.naturalness.model", external_dir=external_dir)
    run, factory = scorer_for(request)
    if cache is None:
        return factory()
    return CachedScorer(factory, ScoreCache(cache), run)
