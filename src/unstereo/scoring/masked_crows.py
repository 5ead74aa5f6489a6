"""CrowS-Pairs' sentence score of a masked LM (Nangia et al. 2020, section 3): the unmodified tokens given the
modified ones.

For a pair (S1, S2) let U be the tokens the two sentences share and M_i the tokens only S_i has. The score of S_i is
sum over u in U of ln p(u | U without u, M_i, the model's parameters): each shared token is masked in turn (one masked
copy per token), the modified tokens stay visible, and their own probability is never scored, so a frequent and a
rare group term are compared on the same tokens. The shared tokens are found as the authors' code finds them: a
``difflib.SequenceMatcher`` over the two sentences' token ids (special tokens included, default arguments), its
``equal`` blocks; special tokens ([CLS], [SEP]) are never masked or scored.

A text to score carries its partner sentence after :data:`PARTNER` (:func:`with_partner`), so the text scorer can see
both sentences of the pair.
"""

from __future__ import annotations

import difflib
from typing import Any

from ..errors import InputError
from .causal import run_metadata
from .masked import MaskedScorer

PARTNER = "\u241e"  # SYMBOL FOR RECORD SEPARATOR: not a character of any sentence we score


def with_partner(sentence: str, partner: str) -> str:
    """The text that :class:`CrowsPairsScorer` scores as ``sentence`` of the pair (``sentence``, ``partner``)."""
    return f"{sentence}{PARTNER}{partner}"


def split_partner(text: str) -> tuple[str, str]:
    """(sentence, partner) of a :func:`with_partner` text; an InputError without exactly one separator."""
    parts = text.split(PARTNER)
    if len(parts) != 2:
        raise InputError(f"text {text!r}: the CrowS-Pairs score needs 'sentence{PARTNER}partner'")
    return parts[0], parts[1]


def shared_positions(ids: list[int], other: list[int]) -> list[int]:
    """Positions in ``ids`` of the tokens in the ``equal`` blocks of ``difflib`` between ``ids`` and ``other``."""
    matcher = difflib.SequenceMatcher(None, [str(x) for x in ids], [str(x) for x in other])
    return [i for op, i1, i2, _, _ in matcher.get_opcodes() if op == "equal" for i in range(i1, i2)]


class CrowsPairsScorer(MaskedScorer):
    """:meth:`score` of a :func:`with_partner` text: (sum of ln p over the sentence's shared tokens, each masked in
    turn, number of them)."""

    kind = "masked-crows-pairs"

    def score(self, texts: list[str]) -> list[tuple[float, int]]:
        pairs = [split_partner(t) for t in texts]
        enc = self.tokenizer([s for s, _ in pairs], add_special_tokens=True, return_special_tokens_mask=True)
        other = self.tokenizer([o for _, o in pairs], add_special_tokens=True)["input_ids"]
        positions = []
        for text, ids, special, o in zip(
            texts, enc["input_ids"], enc["special_tokens_mask"], other, strict=True
        ):
            pos = [p for p in shared_positions(ids, o) if not special[p]]
            if not pos:
                raise InputError(f"text {text!r}: the two sentences share no token to score")
            positions.append(pos)
        return self.masked_sums(enc["input_ids"], positions)

    def metadata(self) -> dict[str, Any]:
        return run_metadata(self, "none")
