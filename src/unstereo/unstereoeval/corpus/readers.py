"""Streaming readers for corpus shards: ``.jsonl``, ``.jsonl.zst`` (the PILE's format) and plain ``.txt``.

A document is one line: a JSON object with its text under ``text_key`` (JSONL), or the line itself (plain text).
Documents come out in batches of about ``chunk_bytes`` of input so that the counter works on large arrays: lists of
texts, or for the compiled counter (``raw_json``) the batch buffer itself, written from the raw JSON by a compiled
kernel without a Python str per document: the text values found by a compiled scan of the lines (else by msgspec);
any chunk they are not sure of goes the str way, which decides.

Bad input (malformed JSON, invalid UTF-8, a missing or non-string text key, a truncated ``.zst`` stream, an empty
file) raises :class:`~unstereo.errors.InputError` naming ``file:line``; with ``on_bad_line="skip"`` the line is
skipped, logged and counted in :class:`ReadStats` instead. Blank lines hold no document and are counted apart.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from unstereo.errors import InputError
from unstereo.log import get_logger
from unstereo.unstereoeval.corpus.tokenize import EncodedBatch

log = get_logger("unstereoeval.corpus.readers")

BLOCK = 1 << 18  # compressed bytes read per call: zstd output stays in cache (1 MB: ~0.3 s/GB slower)
MAX_LOGGED = 20  # bad lines logged one by one per file; the rest only counted


@dataclass
class ReadStats:
    """What a reader saw: counted per run and written to the shard's stats.json."""

    files: int = 0
    lines: int = 0
    docs: int = 0
    blank_lines: int = 0
    bad_lines: int = 0
    empty_files: int = 0
    truncated_files: int = 0
    bytes_in: int = 0  # bytes of (decompressed) input
    bad_examples: list[str] = field(default_factory=list)

    def as_dict(self) -> dict:
        return asdict(self)


def input_kind(path: str | Path) -> str:
    """``jsonl``, ``jsonl.zst`` or ``txt`` from the file name; anything else is an error."""
    name = Path(path).name
    for kind in ("jsonl.zst", "jsonl", "txt"):
        if name.endswith("." + kind):
            return kind
    if name.endswith(".json.zst"):
        return "jsonl.zst"
    raise InputError("unsupported corpus file (use .jsonl, .jsonl.zst or .txt)", path=path)


def _zst_blocks(path: Path) -> Iterator[bytes]:
    """Decompressed blocks of a (multi-frame) zstd file; InputError('truncated') when the last frame is cut."""
    import zstandard

    with open(path, "rb") as fh:
        dobj = zstandard.ZstdDecompressor().decompressobj()
        in_frame = False
        while True:
            blk = fh.read(BLOCK)
            if not blk:
                break
            while blk:
                try:
                    out = dobj.decompress(blk)
                except zstandard.ZstdError as exc:
                    raise _Truncated(f"corrupt zstd stream: {exc}") from exc
                in_frame = True
                if out:
                    yield out
                if dobj.eof:  # a frame ended: the rest belongs to the next frame
                    blk = dobj.unused_data
                    dobj = zstandard.ZstdDecompressor().decompressobj()
                    in_frame = False
                else:
                    blk = b""
        if in_frame:
            raise _Truncated("truncated zstd stream (the last frame is incomplete)")


class _Truncated(Exception):
    pass


def _raw_blocks(path: Path) -> Iterator[bytes]:
    with open(path, "rb") as fh:
        while blk := fh.read(BLOCK):
            yield blk


def iter_chunks(path: str | Path, chunk_bytes: int) -> Iterator[tuple[int, bytes, np.ndarray]]:
    """Yield ``(first_line_number, chunk, newlines)``: about ``chunk_bytes`` of complete lines, newlines kept (only
    the last line of a file may lack its newline), and the offsets of its newlines. Each chunk is one copy of the
    blocks read (no per-line objects).

    A truncated ``.zst`` raises ``_Truncated`` after the complete lines before the cut have been yielded; the
    incomplete last line (if any) is carried in the exception as ``partial``.
    """
    path = Path(path)
    blocks = _zst_blocks(path) if input_kind(path) == "jsonl.zst" else _raw_blocks(path)
    lineno = 1
    pending: list = []  # memoryviews of complete lines
    carry: list = []  # the start of a line not complete yet
    size = 0

    def flush() -> tuple[int, bytes, np.ndarray]:
        nonlocal lineno, pending, size
        chunk = b"".join(pending)
        first = lineno
        newlines = np.flatnonzero(np.frombuffer(chunk, np.uint8) == 10)
        lineno += newlines.size + (not chunk.endswith(b"\n"))
        pending, size = [], 0
        return first, chunk, newlines

    try:
        for blk in blocks:
            cut = blk.rfind(b"\n") + 1
            if not cut:
                carry.append(blk)
                continue
            view = memoryview(blk)
            pending += carry
            pending.append(view[:cut])
            size += cut + sum(map(len, carry))
            carry = [view[cut:]] if cut < len(blk) else []
            if size >= chunk_bytes:
                yield flush()
    except _Truncated as exc:
        if pending:
            yield flush()
        exc.partial = b"".join(carry)  # type: ignore[attr-defined]
        exc.lineno = lineno  # type: ignore[attr-defined]
        raise
    pending += carry
    if pending:
        yield flush()


def chunk_lines(chunk: bytes) -> list[bytes]:
    """The lines of a chunk of :func:`iter_chunks`, newlines stripped."""
    lines = chunk.split(b"\n")
    if chunk.endswith(b"\n"):
        lines.pop()
    return lines


_SPACE = np.zeros(256, bool)
_SPACE[list(b" \t\n\r\x0b\x0c")] = True  # bytes.isspace


def _has_blank_line(chunk: bytes, newlines: np.ndarray) -> bool:
    """Does a line of the chunk hold nothing or only whitespace? (A look at the first byte of every line first: a
    well-formed JSONL chunk has no line starting with whitespace.)"""
    arr = np.frombuffer(chunk, np.uint8)
    firsts = arr[newlines[newlines + 1 < arr.size] + 1]
    if (arr.size and _SPACE[arr[0]]) or _SPACE[firsts].any():
        return any(not ln or ln.isspace() for ln in chunk_lines(chunk))
    return False


def _text_decoder(key: str, raw: bool = False):
    """A msgspec decoder of JSON objects that keeps only ``key``: a string, or with ``raw`` the value undecoded
    (``msgspec.Raw``: its JSON text, checked for structure only); None without msgspec.

    It is a fast path only: any batch it rejects (bad line, lone surrogate escapes, ...) is parsed again with the
    standard json module, line by line where needed, which decides what is valid and names the bad line."""
    try:
        import msgspec
    except ImportError:  # pragma: no cover - optional accelerator
        return None
    doc = msgspec.defstruct("Doc", [("text", msgspec.Raw if raw else str)], rename={"text": key})
    return msgspec.json.Decoder(doc)


def _decode_lines(decoder, chunk: bytes, newlines: np.ndarray) -> list | None:
    """The chunk's documents decoded by ``decoder`` at once, or None unless that gives one document per line and no
    line is blank (msgspec skips blank lines and would read two values on one line) and raises no error (bad line,
    lone surrogate escape, ...)."""
    nlines = newlines.size + (not chunk.endswith(b"\n"))
    try:
        docs = decoder.decode_lines(chunk)
    except (ValueError, TypeError):  # msgspec errors (and UnicodeDecodeError) are ValueErrors
        return None
    return docs if len(docs) == nlines and not _has_blank_line(chunk, newlines) else None


def _raw_path(key: str):
    """The raw decoder of the raw JSONL path, or None where numba or msgspec is missing."""
    from unstereo.unstereoeval.corpus import jit

    decoder = _text_decoder(key, raw=True)
    return decoder if jit.AVAILABLE else None


class DocumentReader:
    """Batches of document texts from corpus files, with bad-line handling.

    Iterate ``reader.batches(path)`` for lists of texts; ``reader.stats`` accumulates over every file read. With
    ``raw_json`` (for the compiled counter; ignored without numba or msgspec) a JSONL batch comes as a
    :class:`~unstereo.unstereoeval.corpus.tokenize.EncodedBatch` where the compiled JSON kernel accepts the whole chunk: no
    Python str per document (decoding ``\\uXXXX`` escapes into str and encoding back was most of the reading), nor
    a parser's object per line where the line scan (:func:`~unstereo.unstereoeval.corpus.jsonl_scan.json_lines`) is sure of them.
    """

    def __init__(
        self,
        text_key: str = "text",
        on_bad_line: str = "error",
        chunk_bytes: int = 1 << 20,
        raw_json: bool = False,
    ):
        if on_bad_line not in ("error", "skip"):
            raise ValueError(f"on_bad_line must be 'error' or 'skip', not {on_bad_line!r}")
        self.text_key = text_key
        self.on_bad_line = on_bad_line
        self.chunk_bytes = max(1, int(chunk_bytes))
        self.stats = ReadStats()
        self._file_bad = 0
        self._decoder = _text_decoder(text_key)
        self._raw_decoder = _raw_path(text_key) if raw_json else None
        # the key as the line scan compares it: only a key JSON writes as it is (printable ASCII, no quote or
        # backslash); any other goes through msgspec
        plain = text_key.isascii() and text_key.isprintable() and not set(text_key) & set('"\\')
        self._line_key = text_key.encode() if plain else None

    def _bad(self, path: Path, line: int, message: str) -> None:
        if self.on_bad_line == "error":
            raise InputError(message, path=path, line=line)
        self.stats.bad_lines += 1
        self._file_bad += 1
        where = f"{path}:{line}: {message}"
        if len(self.stats.bad_examples) < MAX_LOGGED:
            self.stats.bad_examples.append(where)
        if self._file_bad <= MAX_LOGGED:
            log.warning("skipped bad line %s", where)

    def _parse_jsonl(self, path: Path, first: int, chunk: bytes, newlines: np.ndarray) -> list[str]:
        # Fast path: msgspec decodes the chunk's lines at once, text field only (see _decode_lines); otherwise the
        # json module decides line by line and names the line.
        key = self.text_key
        docs = None if self._decoder is None else _decode_lines(self._decoder, chunk, newlines)
        if docs is not None:
            return [d.text for d in docs]
        lines = chunk_lines(chunk)
        body = [ln for ln in lines if ln and not ln.isspace()]
        if len(body) != len(lines):
            self.stats.blank_lines += len(lines) - len(body)
        if not body:
            return []
        try:
            docs = json.loads(b"[" + b",".join(body) + b"]")
            if len(docs) == len(body):
                texts = [d[key] for d in docs]
                if all(type(t) is str for t in texts):
                    return texts
        except (ValueError, KeyError, TypeError, IndexError):
            pass
        texts = []
        for i, ln in enumerate(lines):
            if not ln or ln.isspace():
                continue
            lineno = first + i
            try:
                ln.decode("utf-8")
            except UnicodeDecodeError as exc:
                self._bad(path, lineno, f"invalid UTF-8 at byte {exc.start}")
                continue
            try:
                doc = json.loads(ln)
            except ValueError as exc:
                self._bad(path, lineno, f"malformed JSON: {exc}")
                continue
            if not isinstance(doc, dict):
                self._bad(path, lineno, f"expected a JSON object, got {type(doc).__name__}")
                continue
            if key not in doc:
                self._bad(path, lineno, f"missing text key {key!r} (keys: {sorted(doc)[:10]})")
                continue
            if not isinstance(doc[key], str):
                self._bad(path, lineno, f"text key {key!r} is {type(doc[key]).__name__}, not a string")
                continue
            texts.append(doc[key])
        return texts

    def _parse_jsonl_raw(self, path: Path, first: int, chunk: bytes, newlines: np.ndarray):
        """An :class:`EncodedBatch` of the chunk when the raw path is sure of it (one JSON object a line, no blank
        line, every text a string the kernel accepts), else :meth:`_parse_jsonl`'s texts (it decides validity and
        names bad lines)."""
        from unstereo.unstereoeval.corpus.json_strings import encode_json_batch
        from unstereo.unstereoeval.corpus.jsonl_scan import encode_json_lines

        if self._line_key is not None:  # the lines scanned by a kernel, no parser objects
            batch = encode_json_lines(chunk, newlines, self._line_key)
            if batch is not None:
                return batch
        docs = _decode_lines(self._raw_decoder, chunk, newlines)
        if docs is not None:
            batch = encode_json_batch([d.text for d in docs])
            if batch is not None:
                return batch
        return self._parse_jsonl(path, first, chunk, newlines)

    def _parse_txt(self, path: Path, first: int, chunk: bytes, newlines: np.ndarray) -> list[str]:
        try:
            texts = chunk.decode("utf-8").split("\n")
            if chunk.endswith(b"\n"):
                texts.pop()
        except UnicodeDecodeError:
            texts = []
            for i, ln in enumerate(chunk_lines(chunk)):
                try:
                    texts.append(ln.decode("utf-8"))
                except UnicodeDecodeError as exc:
                    self._bad(path, first + i, f"invalid UTF-8 at byte {exc.start}")
        body = [t for t in texts if t.strip()]
        self.stats.blank_lines += len(texts) - len(body)
        return body

    def batches(self, path: str | Path) -> Iterator[list[str] | EncodedBatch]:
        """Lists of document texts (or encoded batches, see ``raw_json``) from one file (about ``chunk_bytes`` of
        input each)."""
        path = Path(path)
        kind = input_kind(path)
        if not path.is_file():
            raise InputError("corpus file not found", path=path)
        parse = self._parse_jsonl_raw if self._raw_decoder is not None else self._parse_jsonl
        parse = self._parse_txt if kind == "txt" else parse
        self.stats.files += 1
        self._file_bad = 0
        nlines = 0
        truncated = False
        try:
            for first, chunk, newlines in iter_chunks(path, self.chunk_bytes):
                lines = newlines.size + (not chunk.endswith(b"\n"))
                nlines += lines
                self.stats.lines += lines
                self.stats.bytes_in += len(chunk) + (not chunk.endswith(b"\n"))
                texts = parse(path, first, chunk, newlines)
                self.stats.docs += len(texts)
                if texts:
                    yield texts
        except _Truncated as exc:
            line = exc.lineno  # type: ignore[attr-defined]
            partial = exc.partial  # type: ignore[attr-defined]
            self.stats.truncated_files += 1
            truncated = True
            what = f"{exc}; input ends inside line {line}" if partial else f"{exc} after line {line - 1}"
            self._bad(path, line, what)
        if nlines == 0 and not truncated:
            if self.on_bad_line == "error":
                raise InputError("empty file: no documents", path=path, line=1)
            self.stats.empty_files += 1
            log.warning("%s: empty file (no documents); skipped", path)
        if self._file_bad > MAX_LOGGED:
            log.warning("%s: %d bad lines skipped in all", path, self._file_bad)
