"""A local stand-in for the Anthropic Messages API (stdlib http.server on 127.0.0.1) and demo fixtures.

No key, no network: each POST /v1/messages takes the next scripted reply. Backoff sleeps are recorded,
never slept; only timeout cases wait, and their delays end as soon as the module's tests are done.
"""

from __future__ import annotations

import functools
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from agenttwin.demo import TWIN_FILE
from producers.agents.llm_planner import AnthropicConfig, AnthropicPlannerFactory
from tests.scripted_http import Reply, ScriptedServer
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


class FakeMessagesApi(ScriptedServer):
    """Plays POST /v1/messages from a script; unscripted requests get a 500."""

    def __init__(self) -> None:
        super().__init__(lambda: api_error(500, "api_error"))


@pytest.fixture(scope="module")
def running_api() -> Iterator[FakeMessagesApi]:
    yield from FakeMessagesApi().running()


@pytest.fixture
def api(running_api: FakeMessagesApi) -> FakeMessagesApi:
    return running_api.reset()


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
