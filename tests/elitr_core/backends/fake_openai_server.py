"""A real, scripted OpenAI-compatible HTTP server on 127.0.0.1 for tests and benchmarks.

It serves ``POST /v1/chat/completions`` in OpenAI's JSON format from a ``ThreadingHTTPServer``
running in a background thread (no extra packages), so the real ``openai`` client talks to it
over real HTTP. Behaviour is scripted:

- ``reply``: a function ``messages -> text`` (default: echo the last user message's first words),
  sent as its words joined by single spaces, or exactly as given with ``exact_reply`` (any
  character, a NUL or a lone surrogate included: JSON writes them as escapes, ``"\\ud800"``);
- ``failures``: the HTTP statuses the first attempts of each conversation get (for example
  ``[429, 500]``: attempt 1 gets 429, attempt 2 gets 500, attempt 3 succeeds), with an optional
  ``Retry-After`` header on 429/503, and ``error_message`` as the error's message;
- ``latency``: seconds every request takes (or a function ``messages -> seconds``);
- ``reject_params``: body fields the server refuses with a 400, like a strict server that does
  not know ``prompt_cache_key``;
- a simulated prefix cache (vLLM-style hashed blocks of ``block_size`` whitespace tokens) that
  fills ``usage.prompt_tokens_details.cached_tokens`` with the longest prefix already *completed*
  by an earlier request.

Everything it sees is recorded (:class:`RequestRecord`), with the maximum number of requests in
flight at once.
"""

from __future__ import annotations

import hashlib
import json
import socket
import sys
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Reply = Callable[[list[dict[str, str]]], str]
Latency = float | Callable[[list[dict[str, str]]], float]


def echo_reply(messages: list[dict[str, str]]) -> str:
    """Default reply: ``"echo: "`` plus the first eight words of the last user message."""
    last = next((m["content"] for m in reversed(messages) if m.get("role") == "user"), "")
    return "echo: " + " ".join(last.split()[:8])


def conversation_key(messages: list[dict[str, str]]) -> str:
    """Identity of one conversation state: a hash of its messages (retries share it)."""
    return hashlib.sha256(json.dumps(messages, sort_keys=True).encode()).hexdigest()


@dataclass
class RequestRecord:
    """One HTTP request as the server saw it (times from ``time.monotonic``)."""

    body: dict[str, Any]
    started: float
    attempt: int
    status: int = 0
    finished: float = 0.0
    cached_tokens: int = 0

    @property
    def messages(self) -> list[dict[str, str]]:
        return list(self.body.get("messages", []))

    @property
    def last_user(self) -> str:
        users = [m["content"] for m in self.messages if m.get("role") == "user"]
        return users[-1] if users else ""


@dataclass
class ServerScript:
    """What the server does; tests may change fields between calls."""

    reply: Reply = echo_reply
    exact_reply: bool = False
    failures: Sequence[int] = ()
    error_message: str | None = None
    retry_after: str | None = None
    latency: Latency = 0.0
    reject_params: frozenset[str] = frozenset()
    api_key: str | None = None
    block_size: int = 1
    model: str = "fake-model"


@dataclass
class ServerState:
    """Counters and records, guarded by ``lock`` (handlers run in many threads)."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    records: list[RequestRecord] = field(default_factory=list)
    attempts: dict[str, int] = field(default_factory=dict)
    in_flight: int = 0
    max_in_flight: int = 0
    cache: set[bytes] = field(default_factory=set)
    completed: int = 0


def _tokens(messages: list[dict[str, str]]) -> list[str]:
    """Whitespace 'tokens' of the rendered conversation (role markers included)."""
    tokens: list[str] = []
    for message in messages:
        tokens.append(f"<|{message.get('role', '')}|>")
        tokens.extend(str(message.get("content", "")).split())
    return tokens


def _block_hashes(tokens: list[str], block_size: int) -> list[bytes]:
    """Chained hashes of full blocks, as vLLM's automatic prefix caching keys its KV blocks."""
    hashes: list[bytes] = []
    previous = b""
    for start in range(0, len(tokens) - block_size + 1, block_size):
        block = "\x1f".join(tokens[start : start + block_size])
        previous = hashlib.sha256(previous + b"\x1e" + block.encode()).digest()
        hashes.append(previous)
    return hashes


class _Handler(BaseHTTPRequestHandler):
    server: _FakeHTTPServer
    protocol_version = "HTTP/1.1"

    def setup(self) -> None:
        super().setup()
        # Headers and body leave in two writes: without TCP_NODELAY, Nagle's algorithm and the
        # client's delayed ACK add ~40 ms to every keep-alive response.
        self.connection.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib signature
        """Silence the per-request stderr lines."""

    def _send_json(self, status: int, payload: dict[str, Any], headers: dict[str, str]) -> None:
        data = json.dumps(payload).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        for name, value in headers.items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        payload = {"error": {"message": message, "type": "fake_error", "code": status}}
        self._send_json(status, payload, headers or {})

    def do_POST(self) -> None:  # noqa: N802 - stdlib name
        length = int(self.headers.get("Content-Length", "0"))
        body = json.loads(self.rfile.read(length) or b"{}")
        if self.path.rstrip("/") != "/v1/chat/completions":
            self._error(404, f"no route {self.path}")
            return
        owner = self.server.owner
        record = owner.begin(body)
        try:
            status, payload, headers = owner.answer(record, self.headers.get("Authorization", ""))
        finally:
            owner.end(record)
        record.status = status
        self._send_json(status, payload, headers)


class _FakeHTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    # The default backlog of 5 would make a burst of 32 connections wait for SYN retransmits.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that cancelled its request closed the socket: expected, not a failure.
        if not isinstance(sys.exc_info()[1], ConnectionError):
            super().handle_error(request, client_address)

    owner: FakeOpenAIServer


class FakeOpenAIServer:
    """The loopback server; use :func:`running_server` or ``start``/``stop``.

    Parameters
    ----------
    script : ServerScript, optional
        Scripted behaviour; ``self.script`` may be edited while the server runs.
    """

    def __init__(self, script: ServerScript | None = None) -> None:
        self.script = script or ServerScript()
        self.state = ServerState()
        self._httpd: _FakeHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle ------------------------------------------------------------------------
    def start(self) -> FakeOpenAIServer:
        """Bind a free port on 127.0.0.1 and serve from a daemon thread."""
        httpd = _FakeHTTPServer(("127.0.0.1", 0), _Handler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving and close the socket."""
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._httpd = None

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT/v1``, what ``OpenAIBackend(base_url=...)`` takes."""
        if self._httpd is None:
            raise RuntimeError("server not started")
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    # -- views for assertions -------------------------------------------------------------
    @property
    def records(self) -> list[RequestRecord]:
        with self.state.lock:
            return list(self.state.records)

    @property
    def max_in_flight(self) -> int:
        with self.state.lock:
            return self.state.max_in_flight

    def successful(self) -> list[RequestRecord]:
        """Records answered with 200, in arrival order."""
        return [r for r in self.records if r.status == 200]

    def reset(self) -> None:
        """Forget records, attempts, counters and the prefix cache."""
        with self.state.lock:
            self.state.records.clear()
            self.state.attempts.clear()
            self.state.cache.clear()
            self.state.max_in_flight = 0
            self.state.completed = 0

    # -- request handling (called from handler threads) -----------------------------------
    def begin(self, body: dict[str, Any]) -> RequestRecord:
        key = conversation_key(body.get("messages", []))
        with self.state.lock:
            attempt = self.state.attempts.get(key, 0) + 1
            self.state.attempts[key] = attempt
            record = RequestRecord(body=body, started=time.monotonic(), attempt=attempt)
            self.state.records.append(record)
            self.state.in_flight += 1
            self.state.max_in_flight = max(self.state.max_in_flight, self.state.in_flight)
        return record

    def end(self, record: RequestRecord) -> None:
        with self.state.lock:
            self.state.in_flight -= 1
            record.finished = time.monotonic()

    def answer(
        self, record: RequestRecord, authorization: str
    ) -> tuple[int, dict[str, Any], dict[str, str]]:
        """Status, JSON payload and headers for one request, following the script."""
        script = self.script
        # Cache hits are decided at arrival (prefill), the cache filled at completion: requests
        # of a cold meeting that overlap all miss, as with a real server's KV blocks.
        tokens = _tokens(record.messages)
        hashes = _block_hashes(tokens, script.block_size)
        with self.state.lock:
            hits = next((i for i, h in enumerate(hashes) if h not in self.state.cache), len(hashes))
        record.cached_tokens = hits * script.block_size
        latency = script.latency(record.messages) if callable(script.latency) else script.latency
        if latency > 0:
            time.sleep(latency)
        if script.api_key is not None and authorization != f"Bearer {script.api_key}":
            return 401, _error_payload(401, "Incorrect API key provided"), {}
        rejected = sorted(script.reject_params & record.body.keys())
        if rejected:
            message = f"Unrecognized request argument supplied: {rejected[0]}"
            return 400, _error_payload(400, message), {}
        if record.attempt <= len(script.failures):
            status = script.failures[record.attempt - 1]
            headers = {"Retry-After": script.retry_after} if script.retry_after else {}
            message = script.error_message or f"scripted failure {status}"
            return status, _error_payload(status, message), headers
        return 200, self._completion(record, tokens, hashes), {}

    def _completion(self, record: RequestRecord, tokens: list[str],
                    hashes: list[bytes]) -> dict[str, Any]:
        messages = record.messages
        text = self.script.reply(messages)
        words = text.split()
        max_tokens = record.body.get("max_tokens")
        finish = "stop"
        if isinstance(max_tokens, int) and len(words) > max_tokens:
            words, finish = words[:max_tokens], "length"
        if finish == "length" or not self.script.exact_reply:
            text = " ".join(words)
        with self.state.lock:
            self.state.cache.update(hashes)
            self.state.completed += 1
            number = self.state.completed
        return {
            "id": f"chatcmpl-{number}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": record.body.get("model", self.script.model),
            "choices": [
                {
                    "index": 0,
                    "message": {"role": "assistant", "content": text},
                    "finish_reason": finish,
                }
            ],
            "usage": {
                "prompt_tokens": len(tokens),
                "completion_tokens": len(words),
                "total_tokens": len(tokens) + len(words),
                "prompt_tokens_details": {"cached_tokens": record.cached_tokens},
            },
        }


def _error_payload(status: int, message: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": "fake_error", "code": status}}


@contextmanager
def running_server(script: ServerScript | None = None) -> Iterator[FakeOpenAIServer]:
    """Start a :class:`FakeOpenAIServer` for the ``with`` block and always shut it down."""
    server = FakeOpenAIServer(script).start()
    try:
        yield server
    finally:
        server.stop()
