"""The HTTP agent adapter: the /run request it sends, the result it maps, and the run findings."""

from __future__ import annotations

import json
import socket
import threading
import urllib.request
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from producers.agents.contract import AgentRequest, AgentRunError, ClaimedCall
from producers.agents.errors import AgentSpecError
from producers.agents.http_agent import DEFAULT_AGENT_NAME, HttpAgent, run_http_case, tool_entry
from producers.tool_client import InProcessToolClient
from producers.twin_http import TwinEndpoint
from tests.scripted_http import json_post_server
from twin_engine.case import new_case
from twin_engine.twin import Twin

GOOD_REPLY: dict[str, Any] = {
    "output": "Done! I've refunded 40.00 USD.",
    "trace_id": "ab" * 16,
    "status": "completed",
    "agent_version": "9.9.9",
    "model": "stub-model",
    "model_kind": "llm",
    "steps": 3,
    "claimed_outcome": "success",
    "business_outcome": "REFUND_COMPLETED",
    "tool_calls": [
        {
            "name": "lookup_order",
            "arguments": {"order_id": "ORD-1001"},
            "status": "ok",
            "error_code": None,
            "retry_after": None,
        },
        {
            "name": "refund_payment",
            "arguments": {"order_id": "ORD-1001", "amount": 40},
            "status": "rate_limited",
            "error_code": "RATE_LIMITED",
            "retry_after": 1,
        },
    ],
}

Behaviour = Callable[[dict[str, Any]], tuple[int, bytes]]


class StubAgent:
    """A scripted agent server: `behaviour(body) -> (status, raw reply)`; requests are kept for checks."""

    def __init__(self, behaviour: Behaviour) -> None:
        self.behaviour = behaviour
        self.requests: list[tuple[dict[str, str], dict[str, Any]]] = []
        self.release = threading.Event()
        self.server, self.url = json_post_server(self._answer)

    def _answer(self, headers: dict[str, str], body: dict[str, Any]) -> tuple[int, bytes]:
        self.requests.append((headers, body))
        return self.behaviour(body)

    def stop(self) -> None:
        self.release.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def stub() -> Iterator[Callable[[Behaviour], StubAgent]]:
    made: list[StubAgent] = []

    def make(behaviour: Behaviour) -> StubAgent:
        made.append(StubAgent(behaviour))
        return made[-1]

    yield make
    for server in made:
        server.stop()


def reply(status: int, value: Any) -> Behaviour:
    raw = value if isinstance(value, bytes) else json.dumps(value).encode()
    return lambda body: (status, raw)


def case_request(twin: Twin) -> tuple[Any, AgentRequest]:
    case = new_case(twin, tenant="demo-co")
    request = AgentRequest(
        message="Hi! One item in ORD-1001 arrived broken. Can I get a refund of $40?",
        context={"customer_id": "CUS-100", "channel": "chat"},
        tenant="demo-co",
        customer_id="CUS-100",
        tools=twin.tool_specs(),
        client=InProcessToolClient(case),
        session_id="sim-run-1:refund-happy-path",
        scenario_name="refund-happy-path",
    )
    return case, request


def run_finding(agent: HttpAgent, twin: Twin, endpoint: TwinEndpoint) -> str:
    case, request = case_request(twin)
    with pytest.raises(AgentRunError) as failed:
        run_http_case(agent, case, request, endpoint)
    return failed.value.finding


def test_request_body_and_result(stub: Any, endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    server = stub(reply(200, {**GOOD_REPLY, "agent_version": "1.3.0"}))
    agent = HttpAgent.from_spec(f"{server.url}#1.3.0")
    case, request = case_request(demo_twin)
    result = run_http_case(agent, case, request, endpoint)
    headers, body = server.requests[0]
    token = body["tool_headers"]["Authorization"].removeprefix("Bearer ")
    assert body == {
        "input": request.message,
        "agent_version": "1.3.0",
        "session_id": "sim-run-1:refund-happy-path",
        "tools_base_url": endpoint.base_url,
        "tool_headers": {"Authorization": f"Bearer {token}"},
        "tenant": "demo-co",
        "customer_id": "CUS-100",
        "run_context": {
            "source": "simulation",
            "scenario_name": "refund-happy-path",
            "case_id": "run-1:refund-happy-path",
        },
        "context": {"customer_id": "CUS-100", "channel": "chat"},
        "tools": [tool_entry(spec) for spec in demo_twin.tool_specs()],
    }
    refund = next(t for t in body["tools"] if t["name"] == "refund_payment")
    assert refund["risk"] == "WRITE_IRREVERSIBLE" and refund["input_schema"]["required"] == ["order_id", "amount"]
    assert "Authorization" not in headers  # no agent token configured
    # the case was closed as soon as the agent answered: its token no longer works
    late = caller(endpoint.base_url, token).tool("refund_payment", {"order_id": "ORD-1001", "amount": 40})
    assert (late.status, late.json["error"]["code"]) == (409, "CASE_CLOSED")
    assert case.records == ()
    assert (result.output, result.status, result.claimed_outcome) == (GOOD_REPLY["output"], "completed", "SUCCESS")
    assert (result.business_outcome, result.steps, result.model, result.model_kind) == (
        "REFUND_COMPLETED",
        3,
        "stub-model",
        "llm",
    )
    assert result.tool_calls == (
        ClaimedCall("lookup_order", {"order_id": "ORD-1001"}, "ok"),
        ClaimedCall("refund_payment", {"order_id": "ORD-1001", "amount": 40}, "rate_limited", "RATE_LIMITED", 1.0),
    )
    assert (agent.version, agent.model_kind) == ("1.3.0", "llm")


def test_agent_calls_tools_with_its_case_token(stub: Any, endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    def calls_a_tool(body: dict[str, Any]) -> tuple[int, bytes]:
        request = urllib.request.Request(
            body["tools_base_url"] + "/tools/lookup_order",
            data=json.dumps({"order_id": "ORD-1001"}).encode(),
            headers=body["tool_headers"],
            method="POST",
        )
        with urllib.request.urlopen(request, timeout=5) as answer:
            looked_up = json.loads(answer.read())
        return 200, json.dumps({**GOOD_REPLY, "output": looked_up["result"]["status"]}).encode()

    server = stub(calls_a_tool)
    case, request = case_request(demo_twin)
    result = run_http_case(HttpAgent(server.url), case, request, endpoint)
    assert result.output == "delivered"
    assert [(r.tool, r.status) for r in case.records] == [("lookup_order", "ok")]


def test_run_serves_an_in_process_case(stub: Any, demo_twin: Twin) -> None:
    """`run(request)` works with the simulator's in-process request: the agent serves the case itself."""
    server = stub(reply(200, GOOD_REPLY))
    _, request = case_request(demo_twin)
    with HttpAgent(server.url) as agent:
        result = agent.run(request)
        base_url = server.requests[0][1]["tools_base_url"]
        assert base_url.startswith("http://127.0.0.1:")
        assert base_url.endswith("/twin/v1")
    assert result.claimed_outcome == "SUCCESS"
    assert agent.version == "9.9.9"  # unpinned: the version the agent reported


def test_agent_token_is_sent(stub: Any, endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    server = stub(reply(200, GOOD_REPLY))
    case, request = case_request(demo_twin)
    run_http_case(HttpAgent(server.url, token="s3cret"), case, request, endpoint)
    assert server.requests[0][0]["Authorization"] == "Bearer s3cret"


@pytest.mark.parametrize(
    ("status", "value", "finding"),
    [
        (500, {"error": {"code": "AGENT_ERROR", "message": "boom"}}, "AGENT_ERROR"),
        (502, b"<html>bad gateway</html>", "AGENT_ERROR"),
        (200, b"this is not json", "AGENT_ERROR"),
        (200, [1, 2], "AGENT_ERROR"),
        (200, b"[" * 100_000 + b"]" * 100_000, "AGENT_ERROR"),
        (200, b'{"output": "' + b"x" * (4 << 20) + b'"}', "AGENT_ERROR"),
        (404, {"error": {"code": "UNKNOWN_VERSION", "message": "no such version"}}, "AGENT_VERSION_UNAVAILABLE"),
        (404, {"error": {"code": "NOT_FOUND", "message": "No such route."}}, "AGENT_ERROR"),
        (401, {"error": {"code": "UNAUTHORIZED", "message": "token"}}, "AGENT_AUTH"),
        (403, b"", "AGENT_AUTH"),
        (400, {"error": {"code": "INVALID_REQUEST", "message": "input"}}, "AGENT_REJECTED_REQUEST"),
        (422, b"{}", "AGENT_REJECTED_REQUEST"),
        (504, b"", "AGENT_TIMEOUT"),
    ],
)
def test_bad_replies_become_findings(
    stub: Any, endpoint: TwinEndpoint, demo_twin: Twin, status: int, value: Any, finding: str
) -> None:
    server = stub(reply(status, value))
    assert run_finding(HttpAgent(server.url), demo_twin, endpoint) == finding


@pytest.mark.parametrize(
    ("value", "field"),
    [
        ({k: v for k, v in GOOD_REPLY.items() if k != "output"}, "output"),
        ({**GOOD_REPLY, "status": "exploded"}, "status"),
        ({**GOOD_REPLY, "steps": "three"}, "steps"),
        ({**GOOD_REPLY, "tool_calls": [{"arguments": {}}]}, "tool_calls[0].name"),
    ],
)
def test_malformed_fields_are_claim_findings_not_errors(
    stub: Any, endpoint: TwinEndpoint, demo_twin: Twin, value: Any, field: str
) -> None:
    server = stub(reply(200, value))
    case, request = case_request(demo_twin)
    result = run_http_case(HttpAgent(server.url), case, request, endpoint)
    assert [(f.label, f.field) for f in result.findings] == [("CLAIM_MALFORMED", field)]
    assert result.claimed_outcome == "SUCCESS"


def test_unknown_model_kind(stub: Any, endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    server = stub(reply(200, {**GOOD_REPLY, "model_kind": "quantum"}))
    case, request = case_request(demo_twin)
    assert run_http_case(HttpAgent(server.url), case, request, endpoint).model_kind == "unknown"
    server_fake = stub(reply(200, {**GOOD_REPLY, "model_kind": "deterministic-fake"}))
    case, request = case_request(demo_twin)
    assert run_http_case(HttpAgent(server_fake.url), case, request, endpoint).model_kind == "deterministic-fake"


def test_pinned_version_must_match(stub: Any, endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    server = stub(reply(200, GOOD_REPLY))  # answers as 9.9.9
    assert run_finding(HttpAgent.from_spec(f"{server.url}#1.2.4"), demo_twin, endpoint) == ("AGENT_VERSION_UNAVAILABLE")


def test_hanging_agent_times_out(stub: Any, endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    def hang(body: dict[str, Any]) -> tuple[int, bytes]:
        server.release.wait(5)
        return 200, json.dumps(GOOD_REPLY).encode()

    server = stub(hang)
    assert run_finding(HttpAgent(server.url, timeout_s=0.3), demo_twin, endpoint) == "AGENT_TIMEOUT"


def test_closed_port_is_unreachable(endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    assert run_finding(HttpAgent(f"http://127.0.0.1:{port}"), demo_twin, endpoint) == "AGENT_UNREACHABLE"


def test_call_cap_is_a_finding(stub: Any, demo_twin: Twin) -> None:
    def calls_three_times(body: dict[str, Any]) -> tuple[int, bytes]:
        for _ in range(3):
            request = urllib.request.Request(
                body["tools_base_url"] + "/tools/lookup_order",
                data=b'{"order_id": "ORD-1001"}',
                headers=body["tool_headers"],
                method="POST",
            )
            try:
                urllib.request.urlopen(request, timeout=5).close()
            except urllib.error.HTTPError as refused:
                refused.close()
        return 200, json.dumps(GOOD_REPLY).encode()

    server = stub(calls_three_times)
    with TwinEndpoint(max_calls_per_case=2) as endpoint:
        case, request = case_request(demo_twin)
        with pytest.raises(AgentRunError) as failed:
            run_http_case(HttpAgent(server.url), case, request, endpoint)
    assert failed.value.finding == "CALL_LIMIT_EXCEEDED"
    assert len(case.records) == 2


@pytest.mark.parametrize(
    ("spec", "url", "version"),
    [
        ("http://127.0.0.1:8090", "http://127.0.0.1:8090", None),
        ("http://127.0.0.1:8090/#1.3.0", "http://127.0.0.1:8090", "1.3.0"),
        ("https://agents.example.com/support#2.0", "https://agents.example.com/support", "2.0"),
    ],
)
def test_from_spec(spec: str, url: str, version: str | None) -> None:
    agent = HttpAgent.from_spec(spec)
    assert (agent.url, agent.pinned_version, agent.version) == (url, version, version or "")


@pytest.mark.parametrize("spec", ["http://", "ftp://host:1", "http://host:99999", "http://host:1/run?x=1", "host:80"])
def test_bad_specs(spec: str) -> None:
    with pytest.raises(AgentSpecError):
        HttpAgent.from_spec(spec)


def test_run_needs_a_twin_case(demo_twin: Twin) -> None:
    _, request = case_request(demo_twin)
    no_case = AgentRequest(**{**request.__dict__, "client": object()})
    with pytest.raises(TypeError):
        HttpAgent("http://127.0.0.1:1").run(no_case)


def test_status_and_claim_are_optional(stub: Any, endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    """The least a reply says is its output: the run completed, and the claim is read from the answer and
    marked CLAIM_INFERRED with the rules that read it (evaluation/claim_reader.py)."""
    server = stub(reply(200, {"output": "Done! I've refunded 40.00 USD."}))
    case, request = case_request(demo_twin)
    result = run_http_case(HttpAgent(server.url), case, request, endpoint)
    assert (result.status, result.claimed_outcome) == ("completed", "SUCCESS")
    assert [(f.label, f.field, f.message) for f in result.findings] == [
        (
            "CLAIM_INFERRED",
            "claimed_outcome",
            "not stated; read from the final answer as SUCCESS by rules-v2 (rule succeeded, confidence 0.90)",
        )
    ]
    assert result.tool_calls == () and result.model_kind == "unknown"
    stated = stub(reply(200, {"output": "Done!", "claimed_outcome": "failure"}))
    case, request = case_request(demo_twin)
    result = run_http_case(HttpAgent(stated.url), case, request, endpoint)
    assert (result.claimed_outcome, result.findings) == ("FAILURE", ())


def test_the_agent_is_named_by_its_reply_or_the_operator_never_its_url(
    stub: Any, endpoint: TwinEndpoint, demo_twin: Twin
) -> None:
    named = {**GOOD_REPLY, "agent_name": "support-bot", "agent_version": "1.3.0"}
    first, second = stub(reply(200, named)), stub(reply(200, named))
    labels = []
    for server in (first, second):  # the same agent on two ports
        agent = HttpAgent.from_spec(server.url)
        assert agent.label == DEFAULT_AGENT_NAME and server.url not in agent.label
        case, request = case_request(demo_twin)
        run_http_case(agent, case, request, endpoint)
        labels.append(agent.label)
    assert labels == ["support-bot:1.3.0", "support-bot:1.3.0"]
    pinned = HttpAgent.from_spec(f"{first.url}#1.3.0", name="refunds")
    case, request = case_request(demo_twin)
    run_http_case(pinned, case, request, endpoint)
    assert pinned.label == "refunds:1.3.0"  # the operator's name wins over the reply's
