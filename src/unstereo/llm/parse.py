"""Reading LLM answers: numbered lists, single revised sentences, likely/unlikely verdicts; token checks."""

from __future__ import annotations

import re

# "1. x", "1) x", "(1) x", "1: x", "1 - x", "**1.** x", "- x", "* x", "• x"
_ITEM = re.compile(r"^\s*(?:\*\*)?(?:\(?\d{1,3}\s*[.):\]]|\d{1,3}\s+-|[-*•–])(?:\*\*)?\s+(?P<text>\S.*?)\s*$")
_REFUSAL = re.compile(
    r"^\W*(i'?m sorry|i am sorry|sorry, |i cannot|i can'?t|i can not|i won'?t|i apologi[sz]e|as an ai\b|"
    r"i'?m unable|i am unable|unfortunately,? i)",
    re.IGNORECASE,
)
_LABEL = re.compile(
    r"^\s*(?:(?:the\s+)?(?:revised|edited|rewritten|new|generated|output)\s*)?(?:sentence|version)\s*:\s*",
    re.IGNORECASE,
)
_WORDCOUNT = re.compile(r"\s*[(\[]\s*\d+\s+words?\s*[)\]]\s*$", re.IGNORECASE)
_QUOTES = "\"'“”‘’`"
_TOKEN = re.compile(r"[a-z]+")

PRONOUNS = {
    "male": ("he", "his", "him", "himself"),
    "female": ("she", "her", "hers", "herself"),
}
PRONOUN_GENDER = {"he": "male", "she": "female"}


def is_refusal(text: str) -> bool:
    """True when the answer opens like a refusal ("I'm sorry", "I cannot", "As an AI", ...)."""
    return bool(_REFUSAL.match(text.strip()))


def strip_quotes(text: str) -> str:
    """Remove quotes wrapping the whole sentence (also unbalanced leading/trailing ones), repeatedly."""
    prev = None
    while prev != text:
        prev = text
        text = text.strip()
        if len(text) >= 2 and text[0] in _QUOTES and text[-1] in _QUOTES:
            text = text[1:-1]
        elif text[:1] in _QUOTES and text.count(text[0]) == 1:
            text = text[1:]
        elif text[-1:] in _QUOTES and text[-1] not in "'’" and text.count(text[-1]) == 1:
            text = text[:-1]
    return text.strip()


def clean_sentence(text: str, strip_quotes_: bool = True) -> str:
    """Tidy one sentence: markdown emphasis, a trailing "(5 words)" note, wrapping quotes (if asked)."""
    text = text.strip()
    text = re.sub(r"^\*\*(.*)\*\*$", r"\1", text).strip()
    text = _WORDCOUNT.sub("", text)
    if strip_quotes_:
        text = strip_quotes(text)
    return text.strip()


def parse_numbered_list(text: str, strip_quotes_: bool = True) -> list[str]:
    """Sentences of a numbered (or bulleted) list; preambles, blank lines and closing remarks are dropped.

    A line without a number that follows an item not ending in sentence punctuation continues that item. Without any
    numbered line, two or more plain lines (not ending in ':') are taken as the list. A refusal gives [].
    """
    if is_refusal(text):
        return []
    items: list[str] = []
    plain: list[str] = []
    for line in text.replace("\r\n", "\n").split("\n"):
        if not line.strip():
            continue
        m = _ITEM.match(line)
        if m:
            items.append(m.group("text"))
        elif items and not re.search(r"[.!?\"'”’]\s*$", items[-1]):
            items[-1] = f"{items[-1]} {line.strip()}"
        elif not items:
            plain.append(line.strip())
    if not items:
        items = [p for p in plain if not p.endswith(":") and not is_refusal(p)]
        if len(items) < 2:
            return []
    out = [clean_sentence(s, strip_quotes_) for s in items]
    return [s for s in out if s]


def parse_single(text: str, strip_quotes_: bool = True) -> str | None:
    """The sentence in a "write only the revised sentence" answer: first non-empty line that is not a preamble,
    without a "Revised sentence:" label or list number; None for a refusal or an empty answer."""
    if is_refusal(text):
        return None
    for line in text.replace("\r\n", "\n").split("\n"):
        line = line.strip()
        if not line or (line.endswith(":") and len(line.split()) <= 8):
            continue
        line = _LABEL.sub("", line)
        m = _ITEM.match(line)
        if m:
            line = m.group("text")
        line = clean_sentence(line, strip_quotes_)
        return line or None
    return None


def parse_likelihood(text: str) -> str | None:
    """'likely' / 'unlikely' from a semantic-filter answer (case and punctuation ignored); None otherwise."""
    words = _TOKEN.findall(text.lower())
    for w in words[:3]:
        if w in ("likely", "unlikely"):
            return w
    if "unlikely" in words:
        return "unlikely"
    if "likely" in words:
        return "likely"
    return None


def tokens(sentence: str) -> list[str]:
    """Lower-cased alphabetic runs: "couldn't" -> couldn, t; "Hallo-ween" -> hallo, ween."""
    return _TOKEN.findall(sentence.lower())


def has_word(sentence: str, word: str) -> bool:
    """The exact seed word form is a token of the sentence (case-insensitive)."""
    return word.lower() in tokens(sentence)


def has_pronoun(sentence: str, pronoun: str, mode: str = "family") -> bool:
    """``pronoun`` (he/she) is present: ``exact`` = that token; ``family`` = any of he/his/him/himself
    (she/her/hers/herself), which is what the released USE data accepted."""
    toks = set(tokens(sentence))
    if mode == "exact":
        return pronoun in toks
    return bool(toks & set(PRONOUNS[PRONOUN_GENDER[pronoun]]))
