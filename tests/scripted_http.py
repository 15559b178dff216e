"""A local HTTP server playing a model provider from a script (stdlib, 127.0.0.1): each POST takes the next
reply and is recorded as seen. Used by the judge adapters' tests and the LLM agent's tests."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Self


@dataclass
class Reply:
    body: Any
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


@dataclass
class Seen:
    path: str
    headers: dict[str, str]
    body: Any


class ScriptedServer:
    """Each request takes the next scripted reply; once the script is spent, `unscripted()` answers."""

    def __init__(self, unscripted: Callable[[], Reply]) -> None:
        self.replies: deque[Reply] = deque()
        self.seen: list[Seen] = []
        self.release = threading.Event()  # set when the tests are done: delayed replies end at once
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                headers = {k.lower(): v for k, v in self.headers.items()}
                scripted.seen.append(Seen(self.path, headers, json.loads(raw)))
                reply = scripted.replies.popleft() if scripted.replies else unscripted()
                if reply.delay_s:
                    scripted.release.wait(reply.delay_s)
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("content-type", "application/json")
                    self.send_header("content-length", str(len(data)))
                    for name, value in reply.headers.items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(data)
                except OSError:
                    pass  # the client gave up (timeout cases)

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, args=(0.01,), daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def running(self) -> Iterator[Self]:
        """Serve for the duration of a (module-scoped) fixture that yields from this."""
        self.thread.start()
        yield self
        self.release.set()
        self.server.shutdown()
        self.server.server_close()
        self.thread.join(2)

    def reset(self) -> Self:
        self.replies.clear()
        self.seen.clear()
        return self


def json_post_server(answer: Callable[[dict[str, str], Any], tuple[int, bytes]]) -> tuple[ThreadingHTTPServer, str]:
    """A started server on 127.0.0.1 answering each POST's JSON body with `answer(headers, body)`:
    (status, raw reply). Returns the server (shut it down when done) and its URL."""

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            status, raw = answer(dict(self.headers), body)
            try:
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)
            except OSError:
                pass  # the client gave up (timeout cases)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"
