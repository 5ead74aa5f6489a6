"""Write a large synthetic PILE-like corpus, with the counts it must give, for the counting benchmarks.

    python benchmarks/make_synthetic_corpus.py OUT_DIR [--gb 5] [--shards 5] [--seed 0] [--vocab 2000000]
        [--format jsonl.zst|jsonl]

Documents are JSON lines like the PILE's (``{"text": ..., "meta": {"pile_set_name": ...}}``, non-ASCII written as
``\\uXXXX`` escapes, paragraph breaks as ``\\n``), of Zipf-distributed words: spaCy's stop words and the target words
at their usual rates, a synthetic vocabulary of ``--vocab`` letter strings (1 to 40 bytes, a few with accented
letters and capitals), commas, full stops and capitalised sentence starts. The text is assembled as bytes with
numpy (no per-word Python), about 100 MB/s.

Besides the shards, ``OUT_DIR/expected.json`` holds what the counter must find, known from the generator alone:
``n_tokens`` (non-stop tokens), ``n_pairs`` (ordered pairs within the window, per document) and, per shard,
``unigrams_<shard>.parquet`` (word, count) — an independent check of exact totals.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.unstereoeval.corpus.naive import pairs_in_document
from unstereo.unstereoeval.lexicon import load_stopwords, load_targets

WINDOW = 10
BLOCK_WORDS = 1 << 20  # words assembled at once
MEAN_DOC_WORDS = 600  # PILE documents are ~5 KB
ACCENTS = ["\u00e9", "\u00ef", "\u00df", "\u00e6", "\u00f1", "\u0107", "\u03b1"]  # é ï ß æ ñ ć α


def vocabulary(n: int, rng: np.random.Generator, exclude: set[str]) -> list[str]:
    """n distinct lowercase letter strings not in ``exclude``, short ones first (they get the high frequencies)."""
    letters = np.frombuffer(b"etaoinshrdlcumwfgypbvkjxqz", np.uint8)
    weights = np.linspace(2.0, 0.2, 26)
    out: set[str] = set()
    while len(out) < n:
        k = n - len(out)
        lengths = np.clip(np.round(rng.gamma(4.0, 1.9, k)).astype(int), 1, 40)
        draws = rng.choice(letters, int(lengths.sum()), p=weights / weights.sum()).tobytes().decode()
        ends = np.cumsum(lengths).tolist()
        new = [draws[a:b] for a, b in zip([0, *ends[:-1]], ends, strict=True)]
        for i in rng.choice(k, k // 100, replace=False).tolist():  # a few accented words
            w = new[i]
            j = int(rng.integers(len(w)))
            new[i] = w[:j] + ACCENTS[int(rng.integers(len(ACCENTS)))] + w[j + 1 :]
        out.update(w for w in new if w not in exclude)
    return sorted(out, key=lambda w: (len(w), w))[:n]


def capitalised(w: str) -> str:
    """A sentence start (only for an ASCII first letter: "ß".upper() is "SS", which lowercases to "ss")."""
    return w[:1].upper() + w[1:] if w[:1].isascii() else w


def json_escape(s: str) -> bytes:
    """The JSON string body of s as the PILE writes it (ensure_ascii)."""
    return json.dumps(s)[1:-1].encode("ascii")


class Table:
    """Byte strings addressed by id, gathered into one buffer per block."""

    def __init__(self, items: list[bytes]):
        self.lengths = np.array([len(b) for b in items], np.int64)
        self.offsets = np.concatenate(([0], np.cumsum(self.lengths)[:-1]))
        self.data = np.frombuffer(b"".join(items), np.uint8)

    def gather(self, ids: np.ndarray) -> bytes:
        lens = self.lengths[ids]
        ends = np.cumsum(lens)
        within = np.arange(int(ends[-1])) - np.repeat(ends - lens, lens)
        return self.data[np.repeat(self.offsets[ids], lens) + within].tobytes()


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("--gb", type=float, default=5.0, help="total size of the shards, uncompressed")
    ap.add_argument("--shards", type=int, default=5)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vocab", type=int, default=2_000_000)
    ap.add_argument("--format", choices=["jsonl.zst", "jsonl"], default="jsonl.zst")
    args = ap.parse_args()
    import zstandard

    t0 = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    targets = load_targets()
    # the counter keeps targets even when they are stop words (he, she, his, ...)
    stop = sorted(w for w in load_stopwords("spacy") if w.isalpha() and w not in set(targets))
    # the word list (ids): stop words first (the most frequent), then targets, then the synthetic vocabulary
    lexicon = stop + targets + vocabulary(args.vocab, rng, set(stop) | set(targets))
    is_stop = np.zeros(len(lexicon), bool)
    is_stop[: len(stop)] = True
    # frequencies: stop words ~45 % of tokens, targets ~1.5 %, the rest Zipf(1.1) over the vocabulary
    n_stop, n_tgt, n_voc = len(stop), len(targets), len(lexicon) - len(stop) - len(targets)
    p = np.concatenate(
        [
            0.45 * (z := 1 / np.arange(1, n_stop + 1)) / z.sum(),
            np.full(n_tgt, 0.015 / n_tgt),
            0.535 * (z := 1 / np.arange(1, n_voc + 1) ** 1.1) / z.sum(),
        ]
    )
    cdf = np.cumsum(p)
    cdf /= cdf[-1]
    # entries of the byte table: each word lowercase and capitalised (a sentence start), then the separators
    entries = [json_escape(w) for w in lexicon] + [json_escape(capitalised(w)) for w in lexicon]
    seps = [b" ", b", ", b". ", b"\\n\\n"]
    doc_end = b'", "meta": {"pile_set_name": "Synthetic"}}\n{"text": "'
    table = Table(entries + seps + [doc_end])
    first_sep, doc_end_id = 2 * len(lexicon), 2 * len(lexicon) + len(seps)

    args.out.mkdir(parents=True, exist_ok=True)
    per_shard = int(args.gb * 1e9 / args.shards)
    expected = {"window": WINDOW, "vocab": len(lexicon), "shards": {}}
    total_tokens = total_pairs = 0
    for shard in range(args.shards):
        name = f"{shard:02d}.{args.format}"
        counts = np.zeros(len(lexicon), np.int64)
        n_pairs = n_docs = 0
        carry = 0  # words of the current document already written in earlier blocks (kept ones)
        comp = zstandard.ZstdCompressor(level=3) if args.format == "jsonl.zst" else None
        with open(args.out / name, "wb") as fh:
            head = b'{"text": "'
            fh.write(head if comp is None else comp.compress(head))
            written = len(head)
            while written < per_shard:
                ids = np.searchsorted(cdf, rng.random(BLOCK_WORDS), side="right")
                # separators: mostly spaces; a document ends after ~MEAN_DOC_WORDS words
                sep = rng.choice(len(seps), BLOCK_WORDS, p=[0.86, 0.07, 0.06, 0.01]) + first_sep
                ends = rng.random(BLOCK_WORDS) < 1 / MEAN_DOC_WORDS
                last_block = written + 7 * BLOCK_WORDS >= per_shard
                if last_block:
                    ends[-1] = False
                sep[ends] = doc_end_id
                # capitalise the word after a full stop or a paragraph break
                cap = np.concatenate(([False], (sep[:-1] == first_sep + 2) | (sep[:-1] == first_sep + 3)))
                seq = np.empty(2 * BLOCK_WORDS, np.int64)
                seq[0::2] = ids + cap * len(lexicon)
                seq[1::2] = sep
                if last_block:
                    seq = seq[:-1]
                data = table.gather(seq)
                if last_block:
                    data += b'", "meta": {"pile_set_name": "Synthetic"}}\n'
                fh.write(data if comp is None else comp.compress(data))
                written += len(data)
                # what the counter must find: kept tokens per document (documents cross block boundaries)
                kept = ~is_stop[ids]
                counts += np.bincount(ids[kept], minlength=len(lexicon))
                doc_of = np.concatenate(([0], np.cumsum(ends)[:-1]))
                per_doc = np.bincount(doc_of, weights=kept, minlength=int(ends.sum()) + 1).astype(np.int64)
                per_doc[0] += carry
                closed = per_doc[: int(ends.sum())]
                n_pairs += int(pairs_in_document(closed, WINDOW).sum())
                n_docs += closed.size
                carry = int(per_doc[-1])
                if last_block:
                    n_pairs += int(pairs_in_document(carry, WINDOW))
                    n_docs += 1
                    break
        nz = np.flatnonzero(counts)
        pd.DataFrame({"word": np.array(lexicon, dtype=object)[nz], "count": counts[nz]}).sort_values(
            "word"
        ).to_parquet(args.out / f"unigrams_{shard:02d}.parquet", index=False)
        expected["shards"][name] = {
            "bytes": written,
            "docs": n_docs,
            "n_tokens": int(counts.sum()),
            "n_pairs": n_pairs,
        }
        total_tokens += int(counts.sum())
        total_pairs += n_pairs
        print(
            f"{name}: {written / 1e6:.0f} MB, {n_docs} documents ({time.perf_counter() - t0:.0f} s)",
            flush=True,
        )
    expected.update(n_tokens=total_tokens, n_pairs=total_pairs)
    (args.out / "expected.json").write_text(json.dumps(expected, indent=1))
    print(f"wrote {args.out} in {time.perf_counter() - t0:.0f} s")


if __name__ == "__main__":
    main()
