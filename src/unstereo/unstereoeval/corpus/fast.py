"""The fast counter (:class:`FastCounter`): the counts defined in :mod:`.naive`, held to its reference counter.

The fast counter works on batches of documents as byte arrays (see tokenize.py), maps tokens to integer ids with a
hash table over 64-bit keys (one Python string per distinct word, not per token), counts the windows around target
positions, and keeps memory bounded by spilling partial counts to runs (:mod:`~unstereo.unstereoeval.corpus.runs`: the words,
and co-occurrences by integer word id) that are summed partition by partition, in the job or, with
``runs=True``, by the merge of all jobs. Two paths do the per-token work: compiled kernels (numba, :mod:`.jit`;
the counting loop :mod:`.count_loop` makes one pass over the bytes; the default where numba is installed) and numpy
(vectorised passes); the tests hold both to the naive reference.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from unstereo.log import get_logger
from unstereo.unstereoeval.corpus import tokenize as tk
from unstereo.unstereoeval.corpus.naive import Counts, _arrow_tables, pairs_in_document

log = get_logger("unstereoeval.corpus.count")  # the logger's name as before the counter had its own module


class HashCollisionError(RuntimeError):
    """Two different words got the same 64-bit key (never seen; rerun with ``--engine naive`` if it happens)."""


class _Grow:
    """A growable 1-d numpy array (amortised doubling)."""

    def __init__(self, dtype, fill=0):
        self.a = np.full(1024, fill, dtype=dtype)
        self.fill = fill
        self.n = 0

    def ensure(self, n: int) -> None:
        if n > self.a.size:
            new = np.full(max(n, 2 * self.a.size), self.fill, dtype=self.a.dtype)
            new[: self.n] = self.a[: self.n]
            self.a = new

    @property
    def view(self) -> np.ndarray:
        return self.a[: self.n]


def _word_keys(words: list[str], compiled: bool = False, with_checks: bool = False):
    """Keys of single alphabetic words, as the fast counter computes them for tokens (numpy, or with ``compiled``
    :func:`~unstereo.unstereoeval.corpus.hashing.word_keys`: their keys of words longer than 32 bytes differ); with
    ``with_checks``, (keys, check hashes)."""
    if not words:
        empty = np.empty(0, np.uint64)
        return (empty, empty) if with_checks else empty
    buf, n = tk.encode_batch([w.lower() for w in words])
    starts, ends = tk.token_spans(np.frombuffer(buf, np.uint8), n)
    if starts.size != len(words):
        raise ValueError("every word must be one alphabetic token")
    if not compiled:
        keys, long_idx, check = tk.token_keys(buf, starts, ends)
        checks = np.zeros(len(words), np.uint64)
        checks[long_idx] = check
    else:
        from unstereo.unstereoeval.corpus.hashing import word_keys

        keys, checks = np.empty(len(words), np.uint64), np.empty(len(words), np.uint64)
        word_keys(np.frombuffer(buf, "<u8", count=len(buf) // 8), starts, ends, keys, checks)
    return (keys, checks) if with_checks else keys


def _decode_spans(arr: np.ndarray, s: np.ndarray, e: np.ndarray, compiled: bool = False) -> list[str]:
    """The strings ``arr[s[i]:e[i]]`` (UTF-8), gathered (by a compiled kernel with ``compiled``) and decoded in one
    go."""
    if compiled:
        from unstereo.unstereoeval.corpus.token_edges import join_spans

        return join_spans(arr, s, e).tobytes().decode("utf-8", "surrogatepass").split("\x01")
    lens = e - s
    inword = np.arange(int(lens.sum())) - np.repeat(np.cumsum(lens) - lens, lens)
    out_off = np.cumsum(lens + 1) - (lens + 1)  # one \x01 (never part of a word) after each word
    joined = np.ones(int(out_off[-1] + lens[-1]), np.uint8)
    joined[np.repeat(out_off, lens) + inword] = arr[np.repeat(s, lens) + inword]
    return joined.tobytes().decode("utf-8", "surrogatepass").split("\x01")


class _KeyTable:
    """Hash table 64-bit key -> id with vectorised lookup (pandas' Int64HashTable; a dict where it is missing)."""

    def __init__(self):
        try:
            from pandas._libs.hashtable import Int64HashTable

            self._t = Int64HashTable()
        except ImportError:  # pragma: no cover - private pandas API moved
            self._t = None
            self._d: dict[int, int] = {}

    def lookup(self, keys: np.ndarray) -> np.ndarray:
        """Ids of ``keys`` (uint64), -1 where unknown."""
        if self._t is not None:
            return self._t.lookup(keys.view(np.int64)).astype(np.int64, copy=False)
        get = self._d.get
        return np.fromiter((get(k, -1) for k in keys.tolist()), np.int64, keys.size)

    def add(self, keys: np.ndarray, ids: np.ndarray) -> None:
        if self._t is not None:
            self._t.map_keys_to_values(np.ascontiguousarray(keys).view(np.int64), ids)
        else:
            self._d.update(zip(keys.tolist(), ids.tolist(), strict=True))


class FastCounter:
    """Streaming counter: feed batches of texts with :meth:`add`, then :meth:`finish` (or :meth:`counts`).

    Memory stays bounded: once the run holds ``spill_types`` distinct words or ``spill_rows`` sparse co-occurrence
    rows, the run is written to ``spill_dir`` (:func:`~unstereo.unstereoeval.corpus.runs.write_run`) and started afresh;
    :meth:`finish` sums the runs (:func:`~unstereo.unstereoeval.corpus.runs.merge_runs`). Per run: about 150 bytes per distinct
    word (hash table, string, arrays), a dense ``dense_rows x len(targets)`` int64 array for the co-occurrences of
    the first words seen (the frequent ones; up to 161 MB at the defaults and 77 targets, mapped as the vocabulary
    grows) and 16 bytes per sparse co-occurrence row beyond it.
    """

    def __init__(
        self,
        targets: Iterable[str],
        stopwords: Iterable[str],
        window: int = 10,
        spill_dir: str | Path | None = None,
        spill_types: int = 2_000_000,
        spill_rows: int = 20_000_000,
        dense_rows: int = 1 << 18,
        compiled: bool | None = None,
        expected_words: int = 0,
    ):
        if window < 1:
            raise ValueError("window must be >= 1")
        from unstereo.unstereoeval.corpus import jit

        if compiled and not jit.AVAILABLE:
            raise RuntimeError("compiled counting needs numba (pip install numba)")
        # the compiled kernels when numba is there (None: auto), else the numpy path
        self._compiled = bool(jit.AVAILABLE if compiled is None else compiled)
        self.targets = sorted(set(targets))
        self._tindex = {t: i for i, t in enumerate(self.targets)}
        self.stopwords = frozenset(stopwords) - set(self.targets)
        self.window = int(window)
        # keys of the stop words (those that can be a token at all: alphabetic) plus the separator's key 0
        self._stop_keys = np.append(
            _word_keys(sorted(w for w in self.stopwords if w.isalpha())), np.uint64(0)
        )
        self._target_keys = _word_keys(self.targets)
        self._target_ids = np.arange(len(self.targets), dtype=np.int16)
        d = np.arange(1, self.window, dtype=np.int64)
        self._offsets = np.concatenate([d, -d])
        self.spill_types = int(spill_types)
        self.spill_rows = int(spill_rows)
        self.dense_rows = int(dense_rows)
        # compiled path: the hash table starts with room for this many words (capped at spill_types), so a large
        # input does not rehash its vocabulary again and again as it grows
        self.expected_words = min(int(expected_words), self.spill_types)
        self._spill_dir = Path(spill_dir) if spill_dir else None
        self._own_spill_dir: Path | None = None
        self.runs: list[Path] = []
        self.n_tokens = 0
        self.n_pairs = 0
        self._reset()

    @property
    def accelerator(self) -> str:
        """``numba`` (compiled kernels) or ``numpy``."""
        return "numba" if self._compiled else "numpy"

    # -- state of the current run
    def _reset(self) -> None:
        self._gid = _KeyTable()  # numpy path: key -> id
        self._words: list[str] = []
        if self._compiled:
            self._reset_table()
        self._uni = _Grow(np.int64)
        self._stop = _Grow(bool, False)
        self._tid = _Grow(np.int16, -1)
        self._check = _Grow(np.uint64)  # check hash of long words by id (0 = not seen yet)
        # c(w, g) at g * dense_rows + w for word ids below dense_rows (target-major: the frequent words of a target
        # share cache lines); allocated whole but zero pages are only mapped when touched (calloc), so memory grows
        # with the vocabulary without the copies of a growing array
        self._dense = np.zeros(self.dense_rows * len(self.targets), np.int64)
        # compiled path: c(w, g) of the words beyond the dense rows, summed in a hash table as they come
        self._sp = np.zeros(2 << 16, np.uint64)
        self._nsp = 0
        self._co_keys: list[
            np.ndarray
        ] = []  # numpy path: codes and counts of the words beyond the dense rows
        self._co_vals: list[np.ndarray] = []
        self._co_len = 0
        self._co_compact = 0

    def _new_words(self, keys: np.ndarray, reps: np.ndarray, arr: np.ndarray, starts, ends, chk) -> None:
        """Register words first seen in this batch: their bytes are gathered and decoded in one go."""
        words = _decode_spans(arr, starts[reps], ends[reps])
        first = len(self._words)
        n = first + len(words)
        self._gid.add(keys, np.arange(first, n, dtype=np.int64))
        self._words.extend(words)
        for g in (self._uni, self._stop, self._tid, self._check):
            g.ensure(n)
            g.n = n
        self._check.a[first:n] = chk[reps]  # check hash of long words (0 for short ones)
        # stop words, the separator and targets are flagged through their keys: no per-word Python work
        gid = self._gid.lookup(self._stop_keys)
        self._stop.a[gid[gid >= first]] = True
        gid = self._gid.lookup(self._target_keys)
        hit = gid >= first
        self._tid.a[gid[hit]] = self._target_ids[hit]

    def add(self, texts: list[str] | tk.EncodedBatch) -> None:
        """Count one batch of documents: texts, or (compiled path only) a batch already encoded."""
        if not texts:
            return
        if self._compiled:
            self._add_compiled(texts)
        elif isinstance(texts, tk.EncodedBatch):
            raise TypeError("an encoded batch needs the compiled counter (read without raw_json)")
        else:
            self._add_numpy(texts)
        if len(self._words) >= self.spill_types or self._co_len >= self.spill_rows:
            self._spill()

    def _reset_table(self) -> None:
        """Compiled path: an empty hash table holding the stop words and the targets (ids 0, 1, ... in that order)."""
        from unstereo.unstereoeval.corpus.word_table import SLOT, insert

        stop = sorted(w for w in self.stopwords if w.isalpha())
        words = stop + self.targets
        keys, checks = _word_keys(words, compiled=True, with_checks=True)
        ids = np.arange(len(words), dtype=np.uint64)
        tid = np.concatenate(
            [np.zeros(len(stop), np.uint64), np.arange(1, len(self.targets) + 1, dtype=np.uint64)]
        )
        stop_flag = (ids < len(stop)).astype(np.uint64)
        bits = max(16, (4 * len(words)).bit_length(), (2 * self.expected_words).bit_length())
        self._table = np.zeros(SLOT << bits, np.uint64)
        bad = insert(self._table, keys, checks, ids | tid << np.uint64(32) | stop_flag << np.uint64(48))
        if bad >= 0:  # pragma: no cover - two of the given words share a 64-bit key
            raise HashCollisionError(f"hash collision of {words[bad]!r} with another stop word or target")
        self._words = words

    def _add_compiled(self, texts: list[str] | tk.EncodedBatch) -> None:
        from unstereo.unstereoeval.corpus import count_loop, token_edges, word_table

        if isinstance(texts, tk.EncodedBatch):
            buf, n = texts.buffer, texts.n
        else:
            buf, n = tk.encode_batch(texts, compiled=True)
        arr = np.frombuffer(buf, dtype=np.uint8)
        edges, k = token_edges.edges(arr, n, tk.alpha_table())
        ntok = k // 2
        new_tok, kept = np.empty(ntok, np.int64), np.empty(ntok, np.uint64)
        words = np.frombuffer(buf, "<u8", count=len(buf) // 8)
        t = m = 0
        T = len(self.targets)
        while True:  # count stops when the hash table is half full: grow it, go on
            t, nnew, m, n_tokens, n_pairs, self._sp, self._nsp, bad, bad_t = count_loop.count(
                words, edges, ntok, t, self._table, len(self._words), new_tok, kept, m,
                self._dense, self.dense_rows, T, self.window, self._sp, self._nsp,
            )  # fmt: skip
            self.n_tokens += int(n_tokens)
            self.n_pairs += int(n_pairs)
            self._co_len = int(self._nsp)
            if nnew:
                first = 2 * new_tok[:nnew]  # token i spans edges[2 * i]:edges[2 * i + 1]
                self._words += _decode_spans(arr, edges[first], edges[first + 1], compiled=True)
            if bad >= 0:
                raise HashCollisionError(
                    f"hash collision between {self._words[bad]!r} and "
                    f"{bytes(arr[edges[2 * bad_t] : edges[2 * bad_t + 1]]).decode('utf-8', 'surrogatepass')!r}; "
                    "rerun with --engine naive"
                )
            if t >= ntok:
                break
            table = np.zeros(2 * self._table.size, np.uint64)
            word_table.rehash(self._table, table)
            self._table = table

    def _unigram_counts(self) -> np.ndarray:
        """Unigram counts by word id of the current run."""
        if not self._compiled:
            return self._uni.view
        from unstereo.unstereoeval.corpus.word_table import unigrams

        uni = np.zeros(len(self._words), np.int64)
        unigrams(self._table, uni)
        return uni

    def _add_sparse(self, codes: np.ndarray) -> None:
        """Co-occurrences ``w * T + g`` of words beyond the dense rows (one code per occurrence)."""
        pair_codes, pair_keys = pd.factorize(codes)
        self._co_keys.append(pair_keys)
        self._co_vals.append(np.bincount(pair_codes).astype(np.int64))
        self._co_len += pair_keys.size
        if self._co_len > max(4_000_000, 2 * self._co_compact):
            self._compact()

    def _add_numpy(self, texts: list[str]) -> None:
        buf, n = tk.encode_batch(texts)
        arr = np.frombuffer(buf, dtype=np.uint8)
        starts, ends = tk.token_spans(arr, n, separators=True)
        if starts.size == 0:
            return
        keys, long_idx, check = tk.token_keys(buf, starts, ends)
        # token -> run-wide word id through the hash table; only unseen words are factorized and decoded
        gids = self._gid.lookup(keys)
        new_tok = np.flatnonzero(gids < 0)
        if new_tok.size:
            codes, uniq = pd.factorize(keys[new_tok])
            rep = np.empty(uniq.size, np.int64)  # first occurrence of each new word (the last write wins)
            rep[codes[::-1]] = new_tok[::-1]
            chk = np.zeros(keys.size, np.uint64)
            chk[long_idx] = check
            first = len(self._words)
            self._new_words(uniq, rep, arr, starts, ends, chk)
            gids[new_tok] = first + codes
        if long_idx.size:
            bad = np.flatnonzero(self._check.a[gids[long_idx]] != check)
            if bad.size:
                i = long_idx[bad[0]]
                raise HashCollisionError(
                    f"hash collision between {self._words[gids[i]]!r} and "
                    f"{buf[starts[i] : ends[i]].decode('utf-8', 'surrogatepass')!r}; rerun with --engine naive"
                )
        # stop words (and the separators) out; documents end where the separators (key 0) were
        keep = np.flatnonzero(~self._stop.a[gids])
        kg = gids[keep]
        m = kg.size
        self.n_tokens += m
        ends = np.searchsorted(keep, np.flatnonzero(keys == 0))  # kept tokens before each document end
        per_doc = np.diff(ends, prepend=0, append=m)
        self.n_pairs += int(pairs_in_document(per_doc, self.window).sum())
        np.add.at(self._uni.a, kg, 1)
        # co-occurrence: all offsets around the target positions at once, same document only
        tids = self._tid.a[kg]
        pos = np.flatnonzero(tids >= 0)
        if pos.size == 0:
            return
        T = len(self.targets)
        # the window of a target stays inside its document: [first kept token of the document, its end)
        bounds = np.concatenate(([0], ends, [m]))
        doc = np.searchsorted(ends, pos, side="right")
        j = pos[:, None] + self._offsets[None, :]
        ok = (j >= bounds[doc][:, None]) & (j < bounds[doc + 1][:, None])
        j, p = j[ok], np.broadcast_to(pos[:, None], ok.shape)[ok]
        wg, wt = kg[j], tids[p].astype(np.int64)
        # dense counts for the first `dense_rows` word ids (frequent words come first), sparse beyond
        dense = wg < self.dense_rows
        np.add.at(self._dense, wt[dense] * self.dense_rows + wg[dense], 1)
        if not dense.all():
            self._add_sparse(wg[~dense] * T + wt[~dense])

    def _compact(self) -> None:
        if len(self._co_keys) > 1:
            keys = np.concatenate(self._co_keys)
            vals = np.concatenate(self._co_vals)
            uk, inv = np.unique(keys, return_inverse=True)
            self._co_keys = [uk]
            self._co_vals = [np.bincount(inv, weights=vals, minlength=uk.size).astype(np.int64)]
            self._co_len = uk.size
        self._co_compact = self._co_len

    def _co_rows(self) -> tuple[np.ndarray, np.ndarray]:
        """The run's co-occurrences: (distinct codes ``w * T + g``, counts), in no particular order. The dense
        array's counts move out (a fresh array maps no page until used)."""
        T = len(self.targets)
        # only the rows of words seen: untouched pages stay unmapped
        seen = min(len(self._words), self.dense_rows)
        if self._compiled:
            from unstereo.unstereoeval.corpus.count_loop import co_items

            # the sparse table's codes are words beyond the dense rows, so the two parts never share a code
            keys, vals = co_items(self._dense, T, self.dense_rows, seen, self._sp, self._nsp)
            self._dense = np.zeros(self._dense.size, np.int64)
            self._sp, self._nsp = np.zeros(2 << 16, np.uint64), 0
            return keys, vals
        used = self._dense.reshape(T, self.dense_rows)[:, :seen]
        g, w = np.nonzero(used)
        keys, vals = w.astype(np.int64) * T + g, used[g, w]
        del g, w, used
        self._dense = np.zeros(self._dense.size, np.int64)
        self._co_keys.append(keys)
        self._co_vals.append(vals)
        self._compact()
        if not self._co_keys:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        return self._co_keys[0], self._co_vals[0]

    def _run_tables(self, ordered: bool = True):
        """The run's tables (arrow), sorted by word (and target) when ``ordered``; a spilled run need not be (the
        merge sorts), which saves sorting millions of strings and rows per spill."""
        T = len(self.targets)
        keys, vals = self._co_rows()
        # sort once by word and reuse the ranks for the co-occurrence rows. Arrow sorts by UTF-8 bytes, which is
        # code point order, i.e. Python's string order (words are letters only: no surrogates).
        import pyarrow as pa
        import pyarrow.compute as pc

        all_words = pa.array(self._words, type=pa.string())
        if not ordered:  # rows by word id as they are
            co_word = keys // T
            co_target = keys - co_word * T
            del keys
            return _arrow_tables(all_words, self._unigram_counts(), co_word, self.targets, co_target, vals)
        order = pc.sort_indices(all_words).to_numpy().astype(np.int64, copy=False)
        rank = np.empty_like(order)
        rank[order] = np.arange(order.size)
        # temporaries freed as soon as possible: a shard's table has millions of rows and this is the peak of the
        # count's memory
        if self._compiled:  # a counting sort, O(rows)
            from unstereo.unstereoeval.corpus.row_sort import sorted_rows

            co_word, co_target, vals = sorted_rows(keys, vals, rank, T)
            del keys, rank
        else:
            co_word = rank[keys // T]
            del rank
            co_target = keys % T
            del keys
            co_order = np.argsort(co_word * T + co_target)  # codes are distinct
            co_word, co_target, vals = co_word[co_order], co_target[co_order], vals[co_order]
            del co_order
        return _arrow_tables(
            all_words.take(pa.array(order)),
            self._unigram_counts()[order],
            co_word,
            self.targets,
            co_target,
            vals,
        )

    def _spill(self) -> None:
        """Write the run as it is (:func:`~unstereo.unstereoeval.corpus.runs.write_run`: integer word ids, no string per
        co-occurrence row) and start a fresh one."""
        from unstereo.unstereoeval.corpus.runs import write_run

        if self._spill_dir is None:
            self._own_spill_dir = Path(tempfile.mkdtemp(prefix="unstereo-spill-"))
            self._spill_dir = self._own_spill_dir
        run = self._spill_dir / f"run-{len(self.runs):05d}"
        keys, vals = self._co_rows()
        write_run(run, self._words, self._unigram_counts(), keys, vals, len(self.targets))
        self.runs.append(run)
        log.info(
            "spilled run %d: %d words, %d co-occurrence rows", len(self.runs), len(self._words), len(vals)
        )
        del keys, vals
        self._reset()

    def counts(self) -> Counts:
        """All counts in memory (only when nothing was spilled; use :meth:`finish` for large inputs)."""
        if self.runs:
            raise RuntimeError("counts were spilled to disk; use finish(out_dir)")
        uni, co = self._run_tables()
        return Counts(uni.to_pandas(), co.to_pandas(), self.n_tokens, self.n_pairs)

    def finish_runs(self, out_dir: str | Path, meta: dict) -> Path:
        """Leave the counts as runs: the current run spilled too (into ``spill_dir``, which should lie in
        ``out_dir``), then ``stats.json`` listing the runs relative to ``out_dir`` (last: its presence means
        complete). :func:`~unstereo.unstereoeval.corpus.merge.merge_count_dirs` sums such a directory by integer word id; no
        merge here."""
        from unstereo.io import write_json
        from unstereo.unstereoeval.corpus.parts import STATS

        self._spill()  # even an empty run: a directory of runs always lists one
        out = Path(out_dir)
        runs = [Path(os.path.relpath(r, out)).as_posix() for r in self.runs]
        write_json(out / STATS, {**meta, "n_tokens": self.n_tokens, "n_pairs": self.n_pairs, "runs": runs})
        return out

    def finish(
        self, out_dir: str | Path, meta: dict, partitions: int | None = None, ordered: bool = True
    ) -> Path:
        """Write ``unigrams.parquet``, ``cooccurrence.parquet`` and ``stats.json`` to ``out_dir``; the rows in
        (word, target) order, or with ``ordered=False`` (a shard the merge sums and sorts anyway) unsorted when
        nothing was spilled (in the order of the word ids; spilled runs are merged, hence sorted)."""
        from unstereo.unstereoeval.corpus.merge import write_counts
        from unstereo.unstereoeval.corpus.runs import merge_runs

        meta = {**meta, "n_tokens": self.n_tokens, "n_pairs": self.n_pairs}
        try:
            if not self.runs:
                uni, co = self._run_tables(ordered)
                write_counts(out_dir, uni, co, meta, distinct=True)
            else:
                if self._words:
                    self._spill()
                merge_runs(self.runs, out_dir, self.targets, meta, partitions=partitions)
        finally:
            if self._own_spill_dir is not None:
                shutil.rmtree(self._own_spill_dir, ignore_errors=True)
        return Path(out_dir)
