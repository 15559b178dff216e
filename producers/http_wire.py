"""Small standard-library HTTP server pieces shared by the twin endpoint and the demo agent server.

JSON in, JSON out, HTTP/1.1 with an explicit Content-Length on every reply. A client that hangs up
early (it timed out) is not an error of the server: writes to a closed socket are dropped quietly.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping
from http.server import BaseHTTPRequestHandler, HTTPServer, ThreadingHTTPServer
from typing import Any, Generic, Self, TypeVar
from urllib.parse import urlsplit

from twin_engine.canonical import canonical_bytes

JSON = Any
JSON_TYPE = "application/json"
A = TypeVar("A")


class BodyError(Exception):
    """A request body the server will not take; answered as `status` + `{"error": {code, message}}`."""

    def __init__(self, message: str, *, status: int = 400, code: str = "INVALID_BODY") -> None:
        super().__init__(message)
        self.status, self.code, self.message = status, code, message


def error_body(code: str, message: str) -> dict[str, JSON]:
    return {"error": {"code": code, "message": message}}


def read_json_object(body: bytes) -> dict[str, JSON]:
    """An empty body is `{}`; anything but a JSON object is refused."""
    if not body.strip():
        return {}
    try:
        value = json.loads(body)
    except (UnicodeDecodeError, ValueError):
        raise BodyError("The body is not valid JSON.") from None
    if not isinstance(value, dict):
        raise BodyError("The body must be a JSON object.")
    return value


class BackgroundServer:
    """A bound HTTP server served on a daemon thread: `start()`/`stop()` or a `with` block.

    Subclasses bind `self._server` in their __init__ and may name the thread."""

    _server: HTTPServer
    _thread: threading.Thread | None = None
    thread_name = "agenttwin-http"

    @property
    def address(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    def start(self) -> Self:
        if self._thread is None:
            self._thread = threading.Thread(
                target=self._server.serve_forever, args=(0.05,), name=self.thread_name, daemon=True
            )
            self._thread.start()
        return self

    def serve_forever(self) -> None:
        self._server.serve_forever()

    def stop(self) -> None:
        if self._thread is not None:
            self._server.shutdown()
            self._thread.join(timeout=5)
            self._thread = None
        self._server.server_close()

    def __enter__(self) -> Self:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class AppServer(ThreadingHTTPServer, Generic[A]):
    """A threaded server whose handlers reach the object that answers them as `self.server.app`."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: A, handler: type[BaseHTTPRequestHandler]) -> None:
        self.app = app
        super().__init__(address, handler)


class JsonHandler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # headers and body go out as separate writes; do not hold the second
    max_body_bytes = 64 * 1024
    server_version = "AgentTwin"
    sys_version = ""

    def log_message(self, format: str, *args: Any) -> None:
        """Request logging is off: servers run inside tests and the CLI, which report on their own."""

    def read_body(self) -> bytes:
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            self.close_connection = True
            raise BodyError(
                "Chunked bodies are not supported; send Content-Length.", status=411, code="LENGTH_REQUIRED"
            )
        raw_length = self.headers.get("Content-Length") or "0"
        try:
            length = int(raw_length)
        except ValueError:
            self.close_connection = True
            raise BodyError("Content-Length is not a number.") from None
        if length < 0:
            self.close_connection = True
            raise BodyError("Content-Length is negative.")
        if length > self.max_body_bytes:
            self.close_connection = True  # the unread body would poison the connection
            raise BodyError(f"The body is larger than {self.max_body_bytes} bytes.", status=413, code="BODY_TOO_LARGE")
        return self.rfile.read(length) if length else b""

    def send_raw(
        self,
        status: int,
        body: bytes,
        headers: Mapping[str, str] | None = None,
        *,
        content_length: int | None = None,
    ) -> None:
        try:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Type", JSON_TYPE)
            self.send_header("Content-Length", str(len(body) if content_length is None else content_length))
            self.end_headers()
            self.wfile.write(body)
            self.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True  # the caller gave up (e.g. its read timeout): nobody to answer

    def send_json(self, status: int, value: JSON, headers: Mapping[str, str] | None = None) -> None:
        self.send_raw(status, canonical_bytes(value), headers)

    def route(self, *paths: str) -> str | None:
        """The request's path when it is one of `paths`; otherwise it is answered 404 here and this is None."""
        path = urlsplit(self.path).path
        if path in paths:
            return path
        self.send_error_json(404, "NOT_FOUND", "No such route.")
        return None

    def send_error_json(self, status: int, code: str, message: str) -> None:
        headers = {"WWW-Authenticate": "Bearer"} if status == 401 else None
        self.send_json(status, error_body(code, message), headers)
