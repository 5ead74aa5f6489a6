"""A real OpenAI-compatible server on 127.0.0.1 for the tests (http.server in a thread): ``/v1/chat/completions``
and the legacy text-completion endpoint ``/v1/completions``.

``ScriptedServer(responder)``: ``responder(body, index)`` returns a :class:`Reply` (status, text or raw body, delay,
headers, finish reason); a 200 reply is wrapped as a chat completion or a text completion after the request path. Every request is recorded (body, Authorization header, status sent) so tests can count calls.
Also: :func:`prompt_matcher` turns the project's prompt templates back into (prompt id, fields) for a request.
"""

from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Reply:
    text: str | None = None
    status: int = 200
    delay: float = 0.0
    raw: str | None = None
    headers: dict[str, str] = field(default_factory=dict)
    finish_reason: str = "stop"


def completion(text: str, prompt_tokens: int = 10, completion_tokens: int = 5) -> str:
    return json.dumps(
        {
            "id": "x",
            "object": "chat.completion",
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
            ],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        }
    )


def text_completion(
    text: str, finish_reason: str = "stop", prompt_tokens: int = 10, completion_tokens: int = 5
) -> str:
    """A response of the legacy ``/v1/completions`` endpoint."""
    return json.dumps(
        {
            "id": "x",
            "object": "text_completion",
            "choices": [{"index": 0, "text": text, "finish_reason": finish_reason, "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        }
    )


def is_text_completion(path: str) -> bool:
    return path.rstrip("/").endswith("/completions") and not path.rstrip("/").endswith("/chat/completions")


class ScriptedServer:
    def __init__(self, responder):
        self.responder = responder
        self.log: list[dict[str, Any]] = []
        self.lock = threading.Lock()
        self.in_flight = 0
        self.max_in_flight = 0
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: one connection per client thread

            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server.lock:
                    index = len(server.log)
                    entry = {"path": self.path, "body": body, "auth": self.headers.get("Authorization")}
                    server.log.append(entry)
                    server.in_flight += 1
                    server.max_in_flight = max(server.max_in_flight, server.in_flight)
                try:
                    reply = server.responder(body, index)
                    entry["status"] = reply.status
                    if reply.delay:
                        time.sleep(reply.delay)
                    payload = (
                        reply.raw
                        if reply.raw is not None
                        else (
                            (
                                text_completion(reply.text or "", reply.finish_reason)
                                if is_text_completion(self.path)
                                else completion(reply.text or "")
                            )
                            if reply.status == 200
                            else json.dumps({"error": reply.text})
                        )
                    )
                    data = payload.encode("utf-8")
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for k, v in reply.headers.items():
                        self.send_header(k, v)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    entry["status"] = "client gone"
                finally:
                    with server.lock:
                        server.in_flight -= 1

        class Server(ThreadingHTTPServer):
            request_queue_size = 256  # the default backlog of 5 resets connections under parallel load

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        host, port = self.httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def __enter__(self) -> ScriptedServer:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

    def ok_bodies(self) -> list[str]:
        """Canonical JSON of every request answered with 200 (to count repeated calls)."""
        return [json.dumps(e["body"], sort_keys=True) for e in self.log if e.get("status") == 200]


def user_text(body: dict) -> str:
    return body["messages"][-1]["content"]


def prompt_matcher(prompts):
    """A function text -> (prompt id, {field: value}) or (None, {}) built from a PromptSet's templates."""
    compiled = []
    for p in (prompts.generation, *prompts.revision, prompts.editing, prompts.semantic_filter):
        pattern, seen, pos = "", set(), 0
        for m in re.finditer(r"\{(\w+)\}", p.text):
            pattern += re.escape(p.text[pos : m.start()])
            name = m.group(1)
            pattern += f"(?P={name})" if name in seen else f"(?P<{name}>.*?)"
            seen.add(name)
            pos = m.end()
        pattern += re.escape(p.text[pos:])
        compiled.append((p.id, re.compile(pattern, re.DOTALL)))

    def match(text: str):
        for pid, rx in compiled:
            m = rx.fullmatch(text)
            if m:
                return pid, m.groupdict()
        return None, {}

    return match
