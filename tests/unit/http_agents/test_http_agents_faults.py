"""Transport faults on the wire (spec §3.2) as a plain stdlib agent sees them, and the HTTP tool client."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import time
from typing import Any

import pytest

from producers.agents.contract import (
    TRANSPORT_BROKEN,
    TRANSPORT_DROPPED,
    TRANSPORT_MALFORMED,
    TRANSPORT_TIMEOUT,
    TRANSPORT_UNREACHABLE,
    ToolReply,
)
from producers.agents.http_tool_client import HttpToolClient
from producers.tool_client import InProcessToolClient
from producers.twin_http import TwinEndpoint
from twin_engine.canonical import canonical_json
from twin_engine.case import new_case
from twin_engine.twin import Twin

ORDER = {"order_id": "ORD-1001"}


def fault_on_lookup(behavior: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"target": "lookup_order", "when": {"callNumber": 1}, "behavior": behavior}]


def open_faulty_case(endpoint: TwinEndpoint, twin: Twin, make_scenario: Any, behavior: dict[str, Any]) -> Any:
    case = new_case(twin, scenario=make_scenario(fault_on_lookup(behavior)), tenant="demo-co")
    return case, endpoint.open_case(case)


def raw_post(base_url: str, token: str, path: str, body: bytes) -> bytes:
    """Send one request on a bare socket and return every byte until the server closes."""
    host, port = base_url.split("//")[1].split("/")[0].split(":")
    prefix = "/" + base_url.split("//")[1].split("/", 1)[1]
    with socket.create_connection((host, int(port)), timeout=5) as sock:
        head = (
            f"POST {prefix}{path} HTTP/1.1\r\nHost: {host}\r\nAuthorization: Bearer {token}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body)}\r\n\r\n"
        )
        sock.sendall(head.encode() + body)
        received = b""
        while chunk := sock.recv(65536):
            received += chunk
        return received


def test_dropped_connection_closes_without_a_response(
    endpoint: TwinEndpoint, demo_twin: Twin, make_scenario: Any
) -> None:
    case, handle = open_faulty_case(endpoint, demo_twin, make_scenario, {"type": "dropped_connection"})
    assert raw_post(handle.base_url, handle.token, "/tools/lookup_order", json.dumps(ORDER).encode()) == b""
    record = case.records[0]
    assert (record.status, record.http_status, record.response) == ("dropped", 0, None)


def test_partial_response_sends_half_a_body(endpoint: TwinEndpoint, demo_twin: Twin, make_scenario: Any) -> None:
    case, handle = open_faulty_case(endpoint, demo_twin, make_scenario, {"type": "partial_response"})
    host, port = handle.base_url.split("//")[1].split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    try:
        conn.request(
            "POST",
            "/twin/v1/tools/lookup_order",
            body=json.dumps(ORDER),
            headers={"Authorization": f"Bearer {handle.token}"},
        )
        response = conn.getresponse()
        assert response.status == 200
        with pytest.raises(http.client.IncompleteRead) as cut:
            response.read()
    finally:
        conn.close()
    whole = canonical_json(new_case(demo_twin, tenant="demo-co").call("lookup_order", ORDER).body).encode()
    assert cut.value.partial == whole[: len(whole) // 2]
    assert case.records[0].status == "partial"


def test_malformed_json_keeps_the_status(
    endpoint: TwinEndpoint, demo_twin: Twin, make_scenario: Any, caller: Any
) -> None:
    case, handle = open_faulty_case(endpoint, demo_twin, make_scenario, {"type": "malformed_json"})
    answer = caller(handle.base_url, handle.token).tool("lookup_order", ORDER)
    assert answer.status == 200
    assert int(answer.headers["Content-Length"]) == len(answer.raw) > 0
    with pytest.raises(json.JSONDecodeError):
        json.loads(answer.raw)
    assert case.records[0].status == "malformed"


def test_delay_is_slept(endpoint: TwinEndpoint, demo_twin: Twin, make_scenario: Any, caller: Any) -> None:
    case, handle = open_faulty_case(endpoint, demo_twin, make_scenario, {"type": "delay", "delayMs": 150})
    agent = caller(handle.base_url, handle.token)
    started = time.perf_counter()
    answer = agent.tool("lookup_order", ORDER)
    assert time.perf_counter() - started >= 0.15
    assert answer.status == 200
    assert answer.json["result"]["order_id"] == "ORD-1001"
    assert agent.tool("lookup_order", ORDER).status == 200  # the rule fires on call 1 only
    assert [r.delay_ms for r in case.records] == [150, 0]


def test_delay_is_capped(demo_twin: Twin, make_scenario: Any, caller: Any) -> None:
    with TwinEndpoint(max_fault_delay_ms=50) as endpoint:
        case, handle = open_faulty_case(endpoint, demo_twin, make_scenario, {"type": "delay", "delayMs": 5000})
        started = time.perf_counter()
        assert caller(handle.base_url, handle.token).tool("lookup_order", ORDER).status == 200
        took = time.perf_counter() - started
    assert 0.05 <= took < 1.0
    assert case.records[0].delay_ms == 5000  # the record keeps the delay the scenario asked for


def test_delay_does_not_hold_the_case(
    endpoint: TwinEndpoint, demo_twin: Twin, make_scenario: Any, caller: Any
) -> None:
    case, handle = open_faulty_case(endpoint, demo_twin, make_scenario, {"type": "delay", "delayMs": 1000})
    slow = threading.Thread(target=lambda: caller(handle.base_url, handle.token).tool("lookup_order", ORDER))
    slow.start()
    deadline = time.perf_counter() + 5
    while not case.records and time.perf_counter() < deadline:  # the slow call is now sleeping
        time.sleep(0.01)
    started = time.perf_counter()
    assert caller(handle.base_url, handle.token).tool("get_refund_policy", ORDER).status == 200
    assert time.perf_counter() - started < 0.7
    slow.join(timeout=5)
    assert [r.tool for r in case.records] == ["lookup_order", "get_refund_policy"]


# --- the HTTP tool client sees what the in-process client sees ---------------------------------------

REFUND = {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "refund-ORD-1001-40.00"}
FAULTS: list[dict[str, Any]] = [
    {"type": "http_429", "retryAfterSeconds": 2},
    {"type": "rate_limit", "retryAfterSeconds": 1.5},
    {"type": "http_500"},
    {"type": "http_503"},
    {"type": "transient_unavailable"},
    {"type": "non_retryable_error"},
    {"type": "auth_denied"},
    {"type": "timeout_before_mutation"},
    {"type": "timeout_after_mutation", "message": "The payment provider did not answer in time."},
    {"type": "dropped_connection"},
    {"type": "partial_response"},
    {"type": "malformed_json"},
    {"type": "delay", "delayMs": 30},
    {"type": "stale_response"},
    {"type": "duplicate_response"},
    {"type": "semantic_bad_response", "body": {"refund_id": "RF-0", "status": "failed"}},
    {"type": "inconsistent_state"},
    {"type": "success_without_mutation"},
    {"type": "message_duplication"},
]


def seen(reply: ToolReply) -> dict[str, Any]:
    return {
        "status": reply.http_status,
        "body": reply.body,
        "headers": reply.headers,
        "transport": reply.transport_error,
    }


@pytest.mark.parametrize("behavior", FAULTS, ids=[f["type"] for f in FAULTS])
def test_http_client_matches_in_process(
    endpoint: TwinEndpoint, demo_twin: Twin, make_scenario: Any, behavior: dict[str, Any]
) -> None:
    faults = [{"target": "refund_payment", "when": {"callNumber": 1}, "behavior": behavior}]
    over_http = new_case(demo_twin, scenario=make_scenario(faults), tenant="demo-co", seed=3)
    in_process = InProcessToolClient(new_case(demo_twin, scenario=make_scenario(faults), tenant="demo-co", seed=3))
    handle = endpoint.open_case(over_http)
    calls = [("lookup_order", ORDER), ("refund_payment", REFUND), ("refund_payment", REFUND)]
    with HttpToolClient(
        handle.base_url, tenant="demo-co", headers={"Authorization": f"Bearer {handle.token}"}
    ) as client:
        for tool, arguments in calls:
            got, expected = client.call(tool, arguments), in_process.call(tool, arguments)
            assert seen(got) == seen(expected)
            if behavior["type"] == "delay" and tool == "refund_payment" and expected.delay_ms:
                assert got.delay_ms >= 30
    assert canonical_json([r.to_dict() for r in over_http.records]) == canonical_json(
        [r.to_dict() for r in in_process.case.records]
    )


def test_http_client_transport_codes(endpoint: TwinEndpoint, demo_twin: Twin, make_scenario: Any) -> None:
    behaviors = {
        1: {"type": "dropped_connection"},
        2: {"type": "partial_response"},
        3: {"type": "malformed_json"},
        4: {"type": "delay", "delayMs": 1500},
        5: {"type": "http_429", "retryAfterSeconds": 3},
    }
    faults = [{"target": "lookup_order", "when": {"callNumber": n}, "behavior": b} for n, b in behaviors.items()]
    case = new_case(demo_twin, scenario=make_scenario(faults), tenant="demo-co")
    handle = endpoint.open_case(case)
    auth = {"Authorization": f"Bearer {handle.token}"}
    with (
        HttpToolClient(handle.base_url, headers=auth) as client,
        HttpToolClient(handle.base_url, headers=auth, timeout_s=0.3) as impatient,
    ):
        replies = [client.call("lookup_order", ORDER) for _ in range(3)]
        replies.append(impatient.call("lookup_order", ORDER))
        replies += [client.call("lookup_order", ORDER) for _ in range(2)]
    assert [(r.http_status, r.transport_error) for r in replies] == [
        (0, TRANSPORT_DROPPED),
        (200, TRANSPORT_BROKEN),
        (200, TRANSPORT_MALFORMED),
        (0, TRANSPORT_TIMEOUT),
        (429, None),
        (200, None),
    ]
    assert 300 <= replies[3].delay_ms < 1000
    assert replies[4].headers["Retry-After"] == "3"
    assert replies[4].error_code == "RATE_LIMITED"
    assert replies[5].ok


def test_http_client_unreachable_and_kb() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with HttpToolClient(f"http://127.0.0.1:{port}/twin/v1", timeout_s=0.5) as client:
        reply = client.call("lookup_order", ORDER)
        assert (reply.http_status, reply.transport_error, reply.ok) == (0, TRANSPORT_UNREACHABLE, False)
        assert client.search_kb("refund") == []


def test_http_client_kb_search(endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    over_http, in_process = new_case(demo_twin, tenant="demo-co"), new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(over_http)
    with HttpToolClient(handle.base_url, headers={"Authorization": f"Bearer {handle.token}"}) as client:
        assert client.search_kb("refund policy days", 2) == in_process.search_kb("refund policy days", 2)
        endpoint.close_case(handle.token)
        assert client.search_kb("refund policy days", 2) == []  # closed case: nothing found
    assert over_http.retrievals == in_process.retrievals


def test_http_client_non_object_json(caller: Any) -> None:
    """A JSON reply that is not an object is MALFORMED_RESPONSE, the HTTP status kept."""
    import http.server

    class ListHandler(http.server.BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            self.rfile.read(int(self.headers.get("Content-Length") or 0))
            body = b"[1, 2, 3]"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: Any) -> None:
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), ListHandler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        with HttpToolClient(f"http://127.0.0.1:{server.server_address[1]}") as client:
            reply = client.call("anything", {})
    finally:
        server.shutdown()
        server.server_close()
    assert (reply.http_status, reply.transport_error, reply.body) == (200, TRANSPORT_MALFORMED, None)
