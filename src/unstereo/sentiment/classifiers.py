"""Sentiment classifiers by name, each mapping a list of texts to scores in [0, 1] (0 negative, 1 positive).

| name | score in [0, 1] |
|---|---|
| ``vader`` | (compound + 1) / 2; VADER's compound is already in [-1, 1] |
| ``textblob`` | (polarity + 1) / 2; TextBlob's (pattern lexicon) polarity is in [-1, 1] |
| ``afinn`` | (s / sqrt(s^2 + 15) + 1) / 2 where s is the AFINN-165 sum of word valences (unbounded); the squash is
  VADER's normalisation with its alpha = 15, so one strong word (s = 3) gives 0.84 and s = 0 gives 0.5 |
| ``opinion`` | p / (p + n), p and n the counts of Hu & Liu (2004) positive and negative opinion words among the
  lower-cased word tokens; 0.5 when there is none (Huang et al. 2020, section 5) |
| a transformers text-classification model | sum over labels of P(label) x value(label): a label named like
  ``positive``/``pos`` is 1, ``negative``/``neg`` 0, ``neutral`` 0.5; ``LABEL_0``/``LABEL_1`` of a 2-label
  model are 0 and 1; other labels need an explicit ``labels: {LABEL: value}`` mapping |

:func:`make_classifier` builds one from a name (the four built-ins) or from a mapping ``{model: <model spec>,
labels: {...}}`` (a transformers classifier); the opinion classifier reads its lexicon from ``opinion_dir`` (the
``opinion-lexicon`` resource, see :mod:`unstereo.sentiment.lexicon`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from unstereo.errors import ConfigError, ResourceError

Classifier = Callable[[Sequence[str]], np.ndarray]
BUILTIN = ("vader", "textblob", "afinn", "opinion")
AFINN_ALPHA = 15.0
_WORD = re.compile(r"[a-z0-9][a-z0-9'+-]*")


def _need(module: str, name: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ResourceError(
            f"sentiment classifier {name!r} needs the Python package of module {module!r} "
            "(install the `sentiment` extra: pip install 'unstereo[sentiment]')"
        ) from exc


def vader() -> Classifier:
    """VADER (Hutto & Gilbert 2014): (compound + 1) / 2."""
    analyzer = _need("vaderSentiment.vaderSentiment", "vader").SentimentIntensityAnalyzer()
    return lambda texts: np.array(
        [(analyzer.polarity_scores(t)["compound"] + 1.0) / 2.0 for t in texts], dtype=float
    )


def textblob() -> Classifier:
    """TextBlob's pattern-lexicon polarity: (polarity + 1) / 2."""
    blob = _need("textblob", "textblob").TextBlob
    return lambda texts: np.array([(blob(t).sentiment.polarity + 1.0) / 2.0 for t in texts], dtype=float)


def afinn_squash(s: float, alpha: float = AFINN_ALPHA) -> float:
    """An unbounded valence sum mapped to [0, 1]: (s / sqrt(s^2 + alpha) + 1) / 2."""
    return (s / math.sqrt(s * s + alpha) + 1.0) / 2.0


def afinn() -> Classifier:
    """AFINN-165 valence sum, squashed with :func:`afinn_squash`."""
    model = _need("afinn", "afinn").Afinn(language="en")
    return lambda texts: np.array([afinn_squash(model.score(t)) for t in texts], dtype=float)


def tokens(text: str) -> list[str]:
    """Lower-cased word tokens (letters/digits, keeping inner ', + and - as the lexicon's entries do)."""
    return _WORD.findall(text.lower())


def opinion_score(text: str, positive: frozenset[str], negative: frozenset[str]) -> float:
    """p / (p + n) over the word tokens of ``text``; 0.5 without opinion words."""
    p = n = 0
    for w in tokens(text):
        p += w in positive
        n += w in negative
    return 0.5 if p + n == 0 else p / (p + n)


def opinion(lexicon_dir: str | Path | None) -> Classifier:
    """The opinion-word classifier with the Hu & Liu lexicon in ``lexicon_dir``."""
    from unstereo.sentiment.lexicon import load_opinion_lexicon

    if lexicon_dir is None:
        raise ResourceError(
            "the `opinion` classifier needs the Hu & Liu lexicon: fetch the `opinion-lexicon` resource "
            "(unstereo resources fetch opinion-lexicon) and pass its folder"
        )
    pos, neg = load_opinion_lexicon(lexicon_dir)
    return lambda texts: np.array([opinion_score(t, pos, neg) for t in texts], dtype=float)


_LABEL_VALUES = (("neutral", 0.5), ("negative", 0.0), ("neg", 0.0), ("positive", 1.0), ("pos", 1.0))


def label_values(id2label: Mapping[int, str], given: Mapping[str, float] | None = None) -> np.ndarray:
    """The sentiment value in [0, 1] of each label id of a classification model (see the module table)."""
    n = len(id2label)
    out = np.full(n, np.nan)
    for i in range(n):
        name = str(id2label[i])
        if given:
            if name not in given:
                raise ConfigError(
                    f"label {name!r} of the model has no value in `labels` (has {sorted(given)})"
                )
            out[i] = float(given[name])
            continue
        low = name.lower()
        for key, value in _LABEL_VALUES:
            if low == key or low.startswith(key):
                out[i] = value
                break
        else:
            if n == 2 and low in ("label_0", "label_1"):
                out[i] = float(low == "label_1")
    if np.isnan(out).any() or not ((out >= 0) & (out <= 1)).all():
        raise ConfigError(
            f"cannot map the labels {[id2label[i] for i in range(n)]} to sentiment values in [0, 1]: give "
            "`labels: {LABEL: value}` for the classifier"
        )
    return out


def transformers_classifier(
    model: Any,
    labels: Mapping[str, float] | None = None,
    external_dir: str | Path | None = None,
    batch_size: int = 32,
    device: str = "auto",
) -> Classifier:
    """A transformers sequence-classification model (any local model spec: folder or hub id): expected value of the
    label values under the model's softmax."""
    import torch

    from unstereo.models.load import load
    from unstereo.models.request import model_request

    request = model_request(
        {"model": model, "device": device}, key="sentiment.classifiers", external_dir=external_dir
    )
    if request.spec.is_remote or request.spec.gguf_file:
        raise ConfigError(
            "a transformers classifier is a hub id or a folder (not an endpoint or a GGUF file)"
        )
    dev = request.resolved_device
    net, tok = load(request, "classifier")
    values = torch.tensor(label_values(net.config.id2label, labels), dtype=torch.float32, device=dev)

    def score(texts: Sequence[str]) -> np.ndarray:
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch_size):
                enc = tok(list(texts[i : i + batch_size]), padding=True, truncation=True, return_tensors="pt")
                logits = net(**enc.to(dev)).logits.float()
                out.append((torch.softmax(logits, -1) @ values).cpu().numpy())
        return np.concatenate(out) if out else np.zeros(0)

    return score


def make_classifier(
    entry: str | Mapping[str, Any],
    *,
    opinion_dir: str | Path | None = None,
    external_dir: str | Path | None = None,
    device: str = "auto",
) -> Classifier:
    """A classifier from a built-in name or a ``{model: SPEC, labels: {...}}`` mapping (see the module table)."""
    if isinstance(entry, str):
        if entry == "opinion":
            return opinion(opinion_dir)
        builders = {"vader": vader, "textblob": textblob, "afinn": afinn}
        if entry not in builders:
            raise ConfigError(f"unknown sentiment classifier {entry!r}; built-in: {', '.join(BUILTIN)}")
        return builders[entry]()
    if "model" not in entry:
        raise ConfigError("a transformers classifier entry needs `model` (a model spec)")
    return transformers_classifier(
        entry["model"], entry.get("labels"), external_dir=external_dir, device=device
    )


def score_column(name: str) -> str:
    """The continuations-table column of classifier ``name``."""
    return f"score_{name}"
