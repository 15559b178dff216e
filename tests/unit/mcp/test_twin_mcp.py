"""The twin as an MCP server, driven by the official `mcp` SDK's client: same records, faults as MCP sees them."""

from __future__ import annotations

import asyncio
import json
import re
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError
from mcp_types import CONNECTION_CLOSED, INTERNAL_ERROR, INVALID_REQUEST, REQUEST_TIMEOUT

from agenttwin.demo import SCENARIO_DIR
from producers.agents.http_tool_client import HttpToolClient
from producers.tool_client import InProcessToolClient
from producers.twin_http import TwinEndpoint
from producers.twin_mcp import FAULT_FAMILIES, HEADERS_META_KEY, HTTP_META_KEY, KB_TOOL, TwinMcpServer
from tests.docs_text import documentation
from tests.unit.mcp.conftest import new_case
from twin_engine.faults import FAULT_TYPES
from twin_engine.twin import Twin

README = Path(__file__).resolve().parents[3] / "README.md"
MODES = ("auto", "legacy")  # the 2026-07-28 stateless era and the handshake era


def run(url: str, body: Callable[[Client], Awaitable[Any]], *, mode: str = "auto", timeout: float = 10) -> Any:
    async def go() -> Any:
        async with Client(url, mode=mode, read_timeout_seconds=timeout) as client:
            return await body(client)

    return asyncio.run(go())


# A call sequence touching replays, faults that change state, a duplicate delivery and the knowledge base.
FAULTS = [
    {"target": "refund_payment", "when": {"callNumber": 1}, "behavior": {"type": "timeout_after_mutation"}},
    {"target": "send_email", "when": {"callNumber": 1}, "behavior": {"type": "message_duplication"}},
    {"target": "lookup_order", "when": {"callNumber": 3}, "behavior": {"type": "http_429", "retryAfterSeconds": 2}},
]
CALLS: list[tuple[str, dict[str, Any], dict[str, str] | None]] = [
    ("lookup_order", {"order_id": "ORD-1001"}, None),
    ("refund_payment", {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "k-1"}, None),
    ("refund_payment", {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "k-1"}, None),
    ("lookup_order", {"order_id": "ORD-2001"}, None),  # another tenant's order
    ("lookup_order", {"order_id": "ORD-1001"}, None),
    ("send_email", {"customer_id": "CUS-100", "template": "refund_confirmation"}, {"Idempotency-Key": "e-1"}),
    (KB_TOOL, {"query": "refund policy", "limit": 2}, None),
    (KB_TOOL, {"query": "refund", "limit": "two"}, None),  # refused, and recorded, on every path
    ("no_such_tool", {}, None),
    ("refund_payment", {"order_id": "ORD-1001", "amount": "forty"}, None),
]


def evidence(case: Any) -> dict[str, Any]:
    return {
        "records": [r.to_dict() for r in case.records],
        "retrievals": [r.to_dict() for r in case.retrievals],
        "state_hash": case.state_hash(),
    }


def test_an_mcp_call_leaves_the_records_of_the_same_call_in_process_and_over_http(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer
) -> None:
    in_process = new_case(demo_twin, FAULTS)
    client = InProcessToolClient(in_process)
    for tool, arguments, headers in CALLS:
        if tool == KB_TOOL:
            client.search_kb(arguments["query"], arguments["limit"])
        else:
            client.call(tool, arguments, headers)

    over_http = new_case(demo_twin, FAULTS)
    handle = endpoint.open_case(over_http)
    with HttpToolClient(handle.base_url, headers={"Authorization": f"Bearer {handle.token}"}) as http:
        for tool, arguments, headers in CALLS:
            if tool == KB_TOOL:
                http.search_kb(arguments["query"], arguments["limit"])
            else:
                http.call(tool, arguments, headers)
    endpoint.close_case(handle.token)

    over_mcp = new_case(demo_twin, FAULTS)
    handle = endpoint.open_case(over_mcp)

    async def calls(c: Client) -> list[Any]:
        seen = []
        for tool, arguments, headers in CALLS:
            meta = {HEADERS_META_KEY: headers} if headers else None
            seen.append(await c.call_tool(tool, arguments, meta=meta))
        return seen

    results = run(mcp_server.case_url(handle), calls)
    endpoint.close_case(handle.token)

    assert evidence(over_mcp) == evidence(in_process) == evidence(over_http)
    assert [r.status for r in over_mcp.records][:5] == ["ok", "timeout", "ok", "denied", "rate_limited"]
    # what the MCP client saw: the reply body, its status and headers
    assert results[1].is_error and results[1].meta[HTTP_META_KEY]["status"] == 504
    assert results[2].structured_content["result"]["status"] == "succeeded"
    assert results[3].structured_content["error"]["code"] == "ACCESS_DENIED"
    assert results[4].meta[HTTP_META_KEY] == {"status": 429, "headers": {"Retry-After": "2"}}
    assert next(d["id"] for d in results[6].structured_content["result"]["documents"]) == "kb-refund-policy"
    assert results[7].is_error and results[7].structured_content["error"]["code"] == "INVALID_QUERY"
    assert results[8].structured_content["error"]["code"] == "UNKNOWN_TOOL"
    assert [r.refused for r in over_mcp.retrievals] == [None, "INVALID_QUERY"]


@pytest.mark.parametrize("mode", MODES)
def test_the_tools_are_the_twins_with_their_input_schemas_narrowed_to_allowed_tools(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer, mode: str
) -> None:
    case = new_case(demo_twin, allowedTools=["lookup_order", "refund_payment"])
    handle = endpoint.open_case(case)

    async def listing(c: Client) -> Any:
        return (await c.list_tools()).tools

    tools = {t.name: t for t in run(mcp_server.case_url(handle), listing, mode=mode)}
    endpoint.close_case(handle.token)
    assert sorted(tools) == ["lookup_order", "refund_payment", KB_TOOL]
    spec = demo_twin.tools["refund_payment"]
    assert tools["refund_payment"].description == spec.description
    assert tools["refund_payment"].input_schema == spec.input_schema


def test_the_bearer_token_binds_a_case_like_the_url_capability(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer
) -> None:
    case = new_case(demo_twin)
    handle = endpoint.open_case(case)

    async def go() -> Any:
        from mcp.client.streamable_http import streamable_http_client

        http = httpx.AsyncClient(headers={"Authorization": f"Bearer {handle.token}"})
        async with http, Client(streamable_http_client(mcp_server.url, http_client=http)) as c:
            return await c.call_tool("lookup_order", {"order_id": "ORD-1001"})

    assert asyncio.run(go()).structured_content["result"]["order_id"] == "ORD-1001"
    # The raw wire: an MCP request with the bearer token is served; without one, 401 before any MCP is read.
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {}}
    accept = {
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": "2026-07-28",
        "Mcp-Method": "tools/list",
    }
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    body["params"] = {"_meta": meta}
    ok = httpx.post(mcp_server.url, json=body, headers={**accept, "Authorization": f"Bearer {handle.token}"})
    missing = httpx.post(mcp_server.url, json=body, headers=accept)
    wrong = httpx.post(mcp_server.url, json=body, headers={**accept, "Authorization": "Bearer nope"})
    wrong_url = httpx.post(f"{mcp_server.base_url}/mcp/c/nope", json=body, headers=accept)
    endpoint.close_case(handle.token)
    assert ok.status_code == 200, ok.text
    assert "lookup_order" in ok.text
    assert (missing.status_code, missing.json()["error"]["code"]) == (401, "TWIN_CREDENTIAL_REQUIRED")
    assert (wrong.status_code, wrong.json()["error"]["code"]) == (401, "TWIN_CREDENTIAL_INVALID")
    assert (wrong_url.status_code, wrong_url.json()["error"]["code"]) == (401, "TWIN_CREDENTIAL_INVALID")
    assert [r.tool for r in case.records] == ["lookup_order"]  # the refused requests left none


def test_a_closed_case_and_the_call_cap_are_json_rpc_errors_without_a_record(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer
) -> None:
    case = new_case(demo_twin)
    handle = endpoint.open_case(case)

    async def over_the_cap(c: Client) -> MCPError:
        for _ in range(endpoint.max_calls_per_case):
            await c.call_tool("lookup_order", {"order_id": "ORD-1001"})
        with pytest.raises(MCPError) as refused:
            await c.call_tool("lookup_order", {"order_id": "ORD-1001"})
        return refused.value

    refused = run(mcp_server.case_url(handle), over_the_cap)
    usage = endpoint.close_case(handle.token)
    assert (refused.code, refused.data["code"]) == (INVALID_REQUEST, "CALL_LIMIT_EXCEEDED")
    assert len(case.records) == endpoint.max_calls_per_case
    assert usage.refused_over_limit == 1

    async def after_close(c: Client) -> MCPError:
        with pytest.raises(MCPError) as closed:
            await c.call_tool("lookup_order", {"order_id": "ORD-1001"})
        return closed.value

    closed = run(mcp_server.case_url(handle), after_close)
    assert (closed.code, closed.data["code"]) == (INVALID_REQUEST, "CASE_CLOSED")
    assert len(case.records) == endpoint.max_calls_per_case


# ---------------------------------------------------------------- one test per fault family


@pytest.mark.parametrize("mode", MODES)
def test_fault_family_error_result(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer, mode: str
) -> None:
    faults = [{"target": "refund_payment", "behavior": {"type": "http_429", "retryAfterSeconds": 3}}]
    case = new_case(demo_twin, faults)
    handle = endpoint.open_case(case)
    result = run(
        mcp_server.case_url(handle),
        lambda c: c.call_tool("refund_payment", {"order_id": "ORD-1001", "amount": 5}),
        mode=mode,
    )
    endpoint.close_case(handle.token)
    assert result.is_error
    assert result.structured_content == {"error": {"code": "RATE_LIMITED", "message": "Too many requests."}}
    assert json.loads(result.content[0].text) == result.structured_content
    assert result.meta[HTTP_META_KEY] == {"status": 429, "headers": {"Retry-After": "3"}}
    assert [(r.status, r.fault) for r in case.records] == [("rate_limited", "http_429")]


@pytest.mark.parametrize("mode", MODES)
def test_fault_family_protocol_error(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer, mode: str
) -> None:
    case = new_case(demo_twin, [{"target": "lookup_order", "behavior": {"type": "malformed_json"}}])
    handle = endpoint.open_case(case)

    async def body(c: Client) -> MCPError:
        with pytest.raises(MCPError) as caught:
            await c.call_tool("lookup_order", {"order_id": "ORD-1001"})
        return caught.value

    error = run(mcp_server.case_url(handle), body, mode=mode)
    endpoint.close_case(handle.token)
    assert (error.code, error.data["code"]) == (INTERNAL_ERROR, "MALFORMED_RESPONSE")
    assert [(r.status, r.fault) for r in case.records] == [("malformed", "malformed_json")]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("fault", ["dropped_connection", "partial_response"])
def test_fault_family_dropped_stream(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer, mode: str, fault: str
) -> None:
    faults = [{"target": "refund_payment", "when": {"callNumber": 1}, "behavior": {"type": fault}}]
    case = new_case(demo_twin, faults)
    handle = endpoint.open_case(case)

    async def body(c: Client) -> tuple[MCPError, Any]:
        with pytest.raises(MCPError) as caught:
            await c.call_tool("refund_payment", {"order_id": "ORD-1001", "amount": 5})
        # the session survives the cut stream: the next call is answered
        return caught.value, await c.call_tool("lookup_order", {"order_id": "ORD-1001"})

    error, after = run(mcp_server.case_url(handle), body, mode=mode)
    endpoint.close_case(handle.token)
    assert error.code == CONNECTION_CLOSED
    assert "without a response" in error.message
    assert after.structured_content["result"]["order_id"] == "ORD-1001"
    status = "dropped" if fault == "dropped_connection" else "partial"
    assert [(r.tool, r.status) for r in case.records] == [("refund_payment", status), ("lookup_order", "ok")]
    # partial_response applied the refund before the cut; a dropped connection never reached the tool
    assert after.structured_content["result"]["refund_count"] == (1 if fault == "partial_response" else 0)


@pytest.mark.parametrize("mode", MODES)
def test_fault_family_delay(demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer, mode: str) -> None:
    faults = [
        {"target": "lookup_order", "when": {"callNumber": 1}, "behavior": {"type": "delay", "delayMs": 400}},
        {"target": "lookup_order", "when": {"callNumber": 2}, "behavior": {"type": "delay", "delayMs": 3000}},
    ]
    case = new_case(demo_twin, faults)
    handle = endpoint.open_case(case)

    async def body(c: Client) -> tuple[float, Any, MCPError]:
        started = time.monotonic()
        slow = await c.call_tool("lookup_order", {"order_id": "ORD-1001"})
        elapsed = time.monotonic() - started
        with pytest.raises(MCPError) as too_slow:  # a client with a 1 s read timeout gives up on a 3 s delay
            await c.call_tool("lookup_order", {"order_id": "ORD-1001"}, read_timeout_seconds=1.0)
        return elapsed, slow, too_slow.value

    elapsed, slow, too_slow = run(mcp_server.case_url(handle), body, mode=mode)
    endpoint.close_case(handle.token)
    assert elapsed >= 0.4  # held at least delayMs (no upper bound: a loaded machine may be slower)
    assert slow.structured_content["result"]["order_id"] == "ORD-1001" and not slow.is_error
    assert too_slow.code == REQUEST_TIMEOUT
    assert [(r.status, r.delay_ms) for r in case.records] == [("ok", 400), ("ok", 3000)]


def test_every_fault_type_has_an_mcp_mapping_and_the_readme_lists_it() -> None:
    assert set(FAULT_FAMILIES) == set(FAULT_TYPES)
    section = documentation().split("## Evaluate an MCP agent", 1)[1].split("\n## ", 1)[0]
    for fault, family in FAULT_FAMILIES.items():
        row = re.search(rf"^\|[^\n]*`{fault}`[^\n]*$", section, re.MULTILINE)
        assert row is not None, f"{fault} is not in the README's MCP fault table"
        assert family in row.group(0), f"{fault}: the README does not say '{family}'"


def test_a_case_over_stdio_leaves_its_records(tmp_path: Path) -> None:
    out = tmp_path / "evidence.json"
    scenario = SCENARIO_DIR / "refund-timeout-after-mutation.yaml"
    params = StdioServerParameters(
        command=sys.executable,
        args=["-m", "agenttwin.cli", "twin", "mcp", "demo", "--scenario", str(scenario), "--out", str(out)],
        cwd=str(README.parent),
    )

    async def go() -> Any:
        # generous: the subprocess imports the whole CLI first, and this machine may be loaded
        async with Client(params, read_timeout_seconds=300) as c:
            names = [t.name for t in (await c.list_tools()).tools]
            timed_out = await c.call_tool("refund_payment", {"order_id": "ORD-1001", "amount": 40})
            return names, timed_out

    names, timed_out = asyncio.run(go())
    assert "refund_payment" in names and KB_TOOL in names
    assert timed_out.is_error and timed_out.meta[HTTP_META_KEY]["status"] == 504
    deadline = time.monotonic() + 300
    while not out.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    evidence = json.loads(out.read_text(encoding="utf-8"))
    assert [(r["tool"], r["status"], r["fault"]) for r in evidence["records"]] == [
        ("refund_payment", "timeout", "timeout_after_mutation")
    ]
    assert evidence["final_state"]["orders"]["ORD-1001"]["refund_count"] == 1


def test_sessions_are_capped_per_case_and_end_with_their_case(
    demo_twin: Twin, endpoint: TwinEndpoint, mcp_server: TwinMcpServer
) -> None:
    from producers.twin_mcp import MAX_SESSIONS_PER_CASE

    initialize = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}},
    }
    accept = {"Accept": "application/json, text/event-stream"}
    greedy, other = endpoint.open_case(new_case(demo_twin)), endpoint.open_case(new_case(demo_twin))
    url = mcp_server.case_url(greedy)
    opened = [httpx.post(url, json=initialize, headers=accept) for _ in range(MAX_SESSIONS_PER_CASE)]
    assert [r.status_code for r in opened] == [200] * MAX_SESSIONS_PER_CASE
    assert len({r.headers["mcp-session-id"] for r in opened}) == MAX_SESSIONS_PER_CASE
    refused = httpx.post(mcp_server.case_url(greedy), json=initialize, headers=accept)
    assert (refused.status_code, refused.json()["error"]["code"]) == (429, "TOO_MANY_SESSIONS")
    mine = httpx.post(mcp_server.case_url(other), json=initialize, headers=accept)  # another case is unaffected
    assert mine.status_code == 200 and mcp_server.mcp.session_count(other.token) == 1
    assert mcp_server.mcp.session_count(greedy.token) == MAX_SESSIONS_PER_CASE

    endpoint.close_case(greedy.token)
    manager = mcp_server.mcp.server.session_manager
    assert manager is not None
    deadline = time.monotonic() + 30
    while any(r.headers["mcp-session-id"] in manager._server_instances for r in opened):
        assert time.monotonic() < deadline, "the closed case's sessions are still open"
        time.sleep(0.05)
    assert mcp_server.mcp.session_count(greedy.token) == 0
    assert mcp_server.mcp.session_count(other.token) == 1  # only the closed case's sessions ended
    endpoint.close_case(other.token)
