"""SQLite cache of LLM calls (chat completions and text continuations): one row per finished call, committed as soon as the call returns.

WAL mode lets several threads (and a second process) read while one writes; a lock serialises this process's
writes on its single connection. Rows hold the request (messages and parameters, never credentials) for inspection.
"""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from unstereo.io import open_sqlite
from unstereo.llm.types import ChatResult, LLMRequest

_SCHEMA = """
CREATE TABLE IF NOT EXISTS completions (
    key TEXT PRIMARY KEY,
    backend TEXT NOT NULL,
    model TEXT NOT NULL,
    request TEXT NOT NULL,
    response TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class ChatCache:
    """On-disk cache keyed by :meth:`ChatRequest.cache_key`; ``path=None`` keeps it in memory (tests, one-offs)."""

    def __init__(self, path: str | Path | None):
        self.path = None if path is None else Path(path)
        self._lock = threading.Lock()
        self._conn = open_sqlite(self.path, (_SCHEMA,))

    def get(self, key: str) -> ChatResult | None:
        with self._lock:
            row = self._conn.execute("SELECT response FROM completions WHERE key = ?", (key,)).fetchone()
        return None if row is None else ChatResult.from_json(row[0], cached=True)

    def put(self, key: str, backend: str, model: str, request: LLMRequest, result: ChatResult) -> None:
        req = json.dumps({**request.payload(), "params": request.params()}, ensure_ascii=False)
        with self._lock:
            self._conn.execute(
                "INSERT OR REPLACE INTO completions VALUES (?, ?, ?, ?, ?, ?)",
                (key, backend, model, req, result.to_json(), time.time()),
            )
            self._conn.commit()

    def __len__(self) -> int:
        with self._lock:
            return self._conn.execute("SELECT COUNT(*) FROM completions").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._conn.close()
