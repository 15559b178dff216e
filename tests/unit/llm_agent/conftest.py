"""A local stand-in for the Anthropic Messages API (stdlib http.server on 127.0.0.1) and demo fixtures.

No key, no network: each POST /v1/messages takes the next scripted reply. Backoff sleeps are recorded,
never slept; only timeout cases wait, and their delays end as soon as the module's tests are done.
"""

from __future__ import annotations

import functools
import json
import threading
from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from agenttwin.demo import TWIN_FILE
from producers.agents.llm_planner import AnthropicConfig, AnthropicPlannerFactory
from twin_engine.documents import Scenario, load_suite, load_twin
from twin_engine.twin import Twin

TEST_MODEL = "claude-test-model"
TEST_KEY = "sk-ant-test-key"
ENV_VARS = (
    "ANTHROPIC_API_KEY",
    "AGENTTWIN_AGENT_API_KEY",
    "AGENTTWIN_AGENT_LLM_MODEL",
    "AGENTTWIN_AGENT_BASE_URL",
    "AGENTTWIN_AGENT_HTTP_TIMEOUT_S",
    "AGENTTWIN_DEMO_AGENT_MODEL",
    "DEMO_AGENT_MODEL",
)


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


def message(*content: dict[str, Any], stop_reason: str = "end_turn") -> Reply:
    return Reply(
        {
            "id": "msg_test",
            "type": "message",
            "role": "assistant",
            "model": TEST_MODEL,
            "content": list(content),
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": {"input_tokens": 12, "output_tokens": 7},
        }
    )


def tool_use(tool: str, arguments: dict[str, Any], call_id: str, text: str | None = None) -> Reply:
    blocks: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    blocks.append({"type": "tool_use", "id": call_id, "name": tool, "input": arguments})
    return message(*blocks, stop_reason="tool_use")


def final(text: str) -> Reply:
    return message({"type": "text", "text": text})


def api_error(status: int, kind: str, headers: dict[str, str] | None = None) -> Reply:
    body = {"type": "error", "error": {"type": kind, "message": f"{kind} (scripted)"}}
    return Reply(body, status, headers or {})


class FakeMessagesApi:
    """Plays POST /v1/messages from a script; unscripted requests get a 500."""

    def __init__(self) -> None:
        self.replies: deque[Reply] = deque()
        self.seen: list[Seen] = []
        self.release = threading.Event()
        api = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("content-length", "0")))
                api.seen.append(Seen(self.path, {k.lower(): v for k, v in self.headers.items()}, json.loads(raw)))
                reply = api.replies.popleft() if api.replies else api_error(500, "api_error")
                if reply.delay_s:
                    api.release.wait(reply.delay_s)
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


@pytest.fixture(scope="module")
def running_api() -> Iterator[FakeMessagesApi]:
    api = FakeMessagesApi()
    api.thread.start()
    yield api
    api.release.set()
    api.server.shutdown()
    api.server.server_close()
    api.thread.join(2)


@pytest.fixture
def api(running_api: FakeMessagesApi) -> FakeMessagesApi:
    running_api.replies.clear()
    running_api.seen.clear()
    return running_api


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    """No test depends on the developer's environment (a real key must never be used here)."""
    for name in ENV_VARS:
        monkeypatch.delenv(name, raising=False)


@dataclass
class Sleeps:
    waits: list[float] = field(default_factory=list)

    def __call__(self, seconds: float) -> None:
        self.waits.append(seconds)


def factory(api: FakeMessagesApi, sleeps: Sleeps | None = None, **config: Any) -> AnthropicPlannerFactory:
    settings = {"model": TEST_MODEL, "api_key": TEST_KEY, "base_url": api.url, "max_retries": 0, **config}
    return AnthropicPlannerFactory(AnthropicConfig(**settings), sleep=sleeps or Sleeps())


@functools.cache
def demo_world() -> tuple[Twin, tuple[Scenario, ...]]:
    twin = load_twin(TWIN_FILE)
    return twin, tuple(load_suite("demo", twin))


def demo_scenario(name: str) -> Scenario:
    return next(s for s in demo_world()[1] if s.name == name)
