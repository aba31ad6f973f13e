"""A scripted OpenAI-compatible chat server on 127.0.0.1: real HTTP, every success and failure shape.

Each request takes the next `Step` of the script (the last one repeats), or the step a callable
chooses from the request body. The server records what it received, so tests can count requests
and check what was sent.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

VALID_SLOTS = {
    "conclusion": "httpx.Client created with timeout=None blocks forever on a stalled upstream; "
    "with timeout=30 the request raises httpx.ReadTimeout instead.",
    "applies_when": "a job calls a slow upstream API through httpx.Client",
    "fails_when": "the upstream keeps sending bytes slowly, so no single read ever waits long enough to time out",
    "topics": ["network", "python"],
    "task_type": "debug",
    "confidence": 0.8,
}


@dataclass(frozen=True)
class Step:
    """How to answer one request."""

    kind: str  # content | status | hang | broken | broken_chunked | close | raw
    content: str = ""
    status: int = 200
    body: bytes = b""
    usage: dict | None = None
    delay_s: float = 0.0


def slots(**overrides) -> Step:
    """A valid answer with the fixed slots (fields overridden as given)."""
    return Step("content", json.dumps({**VALID_SLOTS, **overrides}))


def content(text: str, **kw) -> Step:
    """Answer 200 with this message content (prose, empty, truncated JSON, anything)."""
    return Step("content", text, **kw)


def status(code: int, message: str = "error") -> Step:
    """An HTTP error before any output: 401, 403, 429 (quota), 500, 503."""
    return Step("status", status=code, body=json.dumps({"error": {"message": message, "code": code}}).encode())


def hang() -> Step:
    """Accept the request and never answer (until the server stops)."""
    return Step("hang")


def broken(content_text: str = json.dumps(VALID_SLOTS)) -> Step:
    """Promise a full body, send half of it, then drop the connection."""
    return Step("broken", content_text)


def broken_chunked(content_text: str = json.dumps(VALID_SLOTS)) -> Step:
    """A chunked (streamed) body that stops after the first chunk."""
    return Step("broken_chunked", content_text)


def close() -> Step:
    """Read the request and close without a status line."""
    return Step("close")


def raw(body: bytes, code: int = 200) -> Step:
    """Answer with this exact body (for responses that are not chat completions)."""
    return Step("raw", status=code, body=body)


def completion(text: str, model: str = "scripted", usage: dict | None = None) -> bytes:
    payload = {
        "id": "chatcmpl-scripted",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
    }
    if usage is not None:
        payload["usage"] = usage
    return json.dumps(payload).encode("utf-8")


@dataclass
class Received:
    path: str
    headers: dict
    body: dict


@dataclass
class ScriptedServer:
    """Start with `with ScriptedServer([...]) as srv:`; point an endpoint at `srv.url`."""

    script: Sequence[Step] | Callable[[dict], Step] = field(default_factory=lambda: [slots()])
    received: list[Received] = field(default_factory=list)

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._release = threading.Event()
        self._server: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def url(self) -> str:
        assert self._server is not None, "server not started"
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def _next(self, body: dict) -> Step:
        with self._lock:
            if callable(self.script):
                return self.script(body)
            i = min(len(self.received) - 1, len(self.script) - 1)
            return self.script[i]

    def start(self) -> ScriptedServer:
        server_ref = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:  # keep pytest output clean
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw_body = self.rfile.read(length)
                try:
                    body = json.loads(raw_body)
                except ValueError:
                    body = {}
                with server_ref._lock:
                    server_ref.received.append(Received(self.path, dict(self.headers), body))
                step = server_ref._next(body)
                if step.delay_s:
                    time.sleep(step.delay_s)
                self.close_connection = True
                if step.kind == "hang":
                    server_ref._release.wait(60)
                    return
                if step.kind == "close":
                    return
                if step.kind == "status" or step.kind == "raw":
                    self._send(step.status, step.body)
                    return
                payload = completion(step.content, usage=step.usage)
                if step.kind == "content":
                    self._send(200, payload)
                elif step.kind == "broken":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    self.end_headers()
                    self.wfile.write(payload[: len(payload) // 2])
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)
                elif step.kind == "broken_chunked":
                    self.send_response(200)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Transfer-Encoding", "chunked")
                    self.end_headers()
                    half = payload[: len(payload) // 2]
                    self.wfile.write(f"{len(half):x}\r\n".encode() + half + b"\r\n")
                    self.wfile.flush()
                    self.connection.shutdown(socket.SHUT_RDWR)

            def _send(self, code: int, payload: bytes) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._release.set()
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()

    def __enter__(self) -> ScriptedServer:
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


def refused_url() -> str:
    """A base URL on 127.0.0.1 where nothing listens (connection refused)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
