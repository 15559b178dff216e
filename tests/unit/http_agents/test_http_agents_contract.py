"""The agent contract's JSON Schemas describe what is really sent and read, and the preflight's verdicts."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest
from jsonschema import Draft202012Validator

from producers.agents.demo_server import DemoAgentServer
from producers.agents.http_agent import HttpAgent, run_body
from producers.agents.preflight import AgentMisconfiguredError, preflight, preflight_body
from producers.twin_http import TwinEndpoint
from twin_engine.case import new_case
from twin_engine.twin import Twin

from .test_http_agents_adapter import GOOD_REPLY, case_request, reply, stub  # noqa: F401 - the stub fixture

JSON_DIR = Path(__file__).resolve().parents[3] / "schemas" / "json"


def schema(name: str) -> Draft202012Validator:
    return Draft202012Validator(json.loads((JSON_DIR / f"{name}.v1.schema.json").read_text(encoding="utf-8")))


def errors(validator: Draft202012Validator, value: Any) -> list[str]:
    return [e.message for e in validator.iter_errors(value)]


def test_what_is_sent_satisfies_the_request_schema(demo_twin: Twin) -> None:
    _, request = case_request(demo_twin)
    body = run_body(request, tools_base_url="http://127.0.0.1:1/twin/v1", token="t", version="1.3.0")
    assert errors(schema("agent-run-request"), body) == []
    assert errors(schema("agent-run-request"), preflight_body(HttpAgent("http://127.0.0.1:1"))) == []
    assert errors(schema("agent-run-request"), {"session_id": "s"})  # the schema can say no
    assert errors(schema("agent-run-request"), {**preflight_body(HttpAgent("http://127.0.0.1:1")), "input": "hi"})
    from dataclasses import replace

    from producers.agents.contract import Turn

    later = replace(request, turn=2, conversation=(Turn("Refund ORD-1001 please", "How much?"),))
    body = run_body(
        later, tools_base_url="http://127.0.0.1:1/twin/v1", token="t", version=None, mcp_url="http://127.0.0.1:2/mcp"
    )
    assert errors(schema("agent-run-request"), body) == []
    assert body["conversation"][1] == {"role": "assistant", "content": "How much?"}


def test_the_demo_agents_reply_satisfies_the_reply_schema(endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    with DemoAgentServer(port=0) as server:
        _, request = case_request(demo_twin)
        handle = endpoint.open_case(new_case(demo_twin, tenant="demo-co"))
        body = run_body(request, tools_base_url=handle.base_url, token=handle.token, version="1.2.4")
        answered = httpx.post(f"{server.url}/run", json=body, timeout=30).json()
        endpoint.close_case(handle.token)
    assert errors(schema("agent-run-reply"), answered) == []
    assert errors(schema("agent-run-reply"), GOOD_REPLY) == []
    assert errors(schema("agent-run-reply"), {"output": "Done!"}) == []  # the least a reply says
    assert errors(schema("agent-run-reply"), {"status": "completed"})  # no output: not a reply


def closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.mark.parametrize(
    ("status", "value", "words"),
    [
        (404, {"error": {"code": "NOT_FOUND", "message": "No such route."}}, "answered 404 to POST: no agent there"),
        (405, b"Method Not Allowed", "answered 405 to POST"),
        (200, b"<html>hello</html>", "answered 200 with a reply that is not a JSON object"),
        (200, b"[1, 2]", "not a JSON object"),
        (404, {"error": {"code": "UNKNOWN_VERSION", "message": "no"}}, "has no version 2.0"),
    ],
)
def test_preflight_refuses_what_is_no_agent(stub: Any, status: int, value: Any, words: str) -> None:  # noqa: F811
    server = stub(reply(status, value))
    with pytest.raises(AgentMisconfiguredError) as refused:
        preflight(HttpAgent.from_spec(f"{server.url}#2.0"), "candidate")
    message = str(refused.value)
    assert message.startswith(f"the candidate agent at {server.url}/run ") and words in message, message
    assert "\n" not in message
    _, sent = server.requests[0]
    # the stub serves no GET /healthz, so the POST form asked: no customer message, nothing to run on
    assert sent == {"preflight": True, "run_context": {"source": "preflight"}, "agent_version": "2.0"}


def test_preflight_refuses_a_closed_port() -> None:
    url = f"http://127.0.0.1:{closed_port()}"
    with pytest.raises(AgentMisconfiguredError, match=r"the baseline agent at .* cannot be reached"):
        preflight(HttpAgent(url), "baseline")


@pytest.mark.parametrize("status", [400, 401, 403, 422, 500, 502, 504])
def test_preflight_lets_a_behaving_agent_through(stub: Any, status: int) -> None:  # noqa: F811
    """Refusing, failing or picky is behaviour, graded per case: the preflight only notes it."""
    server = stub(reply(status, {"error": {"code": "X", "message": "y"}}))
    result = preflight(HttpAgent(server.url), "candidate")
    assert result.status == status and result.note is not None and str(status) in result.note


def test_preflight_reads_the_agents_name(stub: Any) -> None:  # noqa: F811
    server = stub(reply(200, {"output": "hi", "agent_name": "support-bot", "agent_version": "1.3.0"}))
    result = preflight(HttpAgent(server.url))
    assert (result.status, result.agent_name, result.agent_version, result.note) == (200, "support-bot", "1.3.0", None)


def test_preflight_of_a_slow_agent_goes_on(stub: Any) -> None:  # noqa: F811
    def hang(body: dict[str, Any]) -> tuple[int, bytes]:
        server.release.wait(5)
        return 200, b"{}"

    server = stub(hang)
    result = preflight(HttpAgent(server.url, timeout_s=0.3))
    assert result.status is None and result.note is not None and "in time" in result.note
