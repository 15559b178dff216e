"""The twin endpoint (spec §2.11): credentials, case lifecycle, call cap, bodies, headers, records."""

from __future__ import annotations

import hashlib
import threading
from typing import Any

import pytest

from producers.twin_http import TwinEndpoint
from twin_engine.canonical import canonical_json
from twin_engine.case import new_case
from twin_engine.twin import Twin

ORDER = {"order_id": "ORD-1001"}
REFUND = {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "refund-ORD-1001-40.00"}


def error_code(answer: Any) -> str:
    return str(answer.json["error"]["code"])


def test_no_token_is_refused(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    answer = caller(handle.base_url, None).tool("lookup_order", ORDER)
    assert (answer.status, error_code(answer)) == (401, "TWIN_CREDENTIAL_REQUIRED")
    basic = caller(handle.base_url, None).tool("lookup_order", ORDER, {"Authorization": "Basic eDp5"})
    assert (basic.status, error_code(basic)) == (401, "TWIN_CREDENTIAL_REQUIRED")
    assert case.records == ()


def test_wrong_token_is_refused(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    answer = caller(handle.base_url, handle.token + "x").tool("lookup_order", ORDER)
    assert (answer.status, error_code(answer)) == (401, "TWIN_CREDENTIAL_INVALID")
    search = caller(handle.base_url, "nope").request("GET", "/kb/search?q=refund")
    assert (search.status, error_code(search)) == (401, "TWIN_CREDENTIAL_INVALID")
    assert case.records == ()
    assert case.retrievals == ()


def test_token_is_kept_only_as_its_hash(endpoint: TwinEndpoint, demo_twin: Twin) -> None:
    handle = endpoint.open_case(new_case(demo_twin))
    other = endpoint.open_case(new_case(demo_twin))
    assert handle.token != other.token
    assert len(handle.token) >= 32
    stored = set(endpoint._cases)
    assert hashlib.sha256(handle.token.encode()).hexdigest() in stored
    assert handle.token not in stored
    assert not any(handle.token in key for key in stored)


def test_closed_case_refuses_calls(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    agent = caller(handle.base_url, handle.token)
    assert agent.tool("lookup_order", ORDER).status == 200
    usage = endpoint.close_case(handle.token)
    assert (usage.calls, usage.refused_over_limit, usage.twin_errors) == (1, 0, ())
    late = agent.tool("refund_payment", REFUND)
    assert (late.status, error_code(late)) == (409, "CASE_CLOSED")
    search = agent.request("GET", "/kb/search?q=refund")
    assert (search.status, error_code(search)) == (409, "CASE_CLOSED")
    assert len(case.records) == 1
    assert case.state == case.initial


def test_call_cap(demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    with TwinEndpoint(max_calls_per_case=2) as endpoint:
        handle = endpoint.open_case(case)
        agent = caller(handle.base_url, handle.token)
        assert agent.tool("lookup_order", ORDER).status == 200
        assert agent.request("GET", "/kb/search?q=refund&limit=2").status == 200
        over = agent.tool("lookup_order", ORDER)
        assert (over.status, error_code(over)) == (409, "CALL_LIMIT_EXCEEDED")
        usage = endpoint.close_case(handle.token)
    assert (usage.calls, usage.refused_over_limit) == (2, 1)
    assert len(case.records) == 1
    assert len(case.retrievals) == 1


def test_empty_body_is_an_empty_object(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    over_http = new_case(demo_twin, tenant="demo-co")
    in_process = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(over_http)
    answer = caller(handle.base_url, handle.token).request("POST", "/tools/lookup_order")
    expected = in_process.call("lookup_order", {})
    assert answer.status == expected.http_status == 422
    assert answer.json == expected.body
    assert over_http.records[0].arguments == {}
    assert canonical_json([r.to_dict() for r in over_http.records]) == canonical_json(
        [r.to_dict() for r in in_process.records]
    )


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"[1, 2]", "INVALID_ARGUMENT"),
        (b"42", "INVALID_ARGUMENT"),
        (b'"text"', "INVALID_ARGUMENT"),
        (b"{not json", "INVALID_BODY"),
        (b"\xff\xfe", "INVALID_BODY"),
    ],
)
def test_body_must_be_an_object(
    endpoint: TwinEndpoint, demo_twin: Twin, caller: Any, body: bytes, code: str
) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    answer = caller(handle.base_url, handle.token).request("POST", "/tools/lookup_order", body)
    assert (answer.status, error_code(answer)) == (400, code)
    # refused, and recorded: the attempt is evidence
    assert [(r.status, r.error_code) for r in case.records] == [("invalid", code)]
    assert endpoint.close_case(handle.token).calls == 1


def test_unknown_routes(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    handle = endpoint.open_case(new_case(demo_twin))
    agent = caller(handle.base_url, handle.token)
    assert agent.request("POST", "/tools/").status == 404
    assert agent.request("GET", "/nowhere").status == 404
    assert agent.request("POST", "/kb/search").status == 404
    bad_limit = agent.request("GET", "/kb/search?q=refund&limit=many")
    assert (bad_limit.status, error_code(bad_limit)) == (400, "INVALID_QUERY")


def test_headers_forwarded_without_credentials(endpoint: TwinEndpoint, make_twin: Any, caller: Any) -> None:
    twin = make_twin(
        {
            "pay": {
                "idempotency": {"header": "Idempotency-Key"},
                "handler": {
                    "kind": "mutate",
                    "effects": [{"op": "increment", "path": "n"}],
                    "response": {"n": "{state.n}"},
                },
            }
        }
    )
    case = new_case(twin)
    seen: list[dict[str, str]] = []
    real_call = case.call

    def spy(tool: str, arguments: Any, headers: Any = None, role: str = "agent") -> Any:
        seen.append(dict(headers or {}))
        return real_call(tool, arguments, headers=headers, role=role)

    case.call = spy  # type: ignore[method-assign]
    handle = endpoint.open_case(case)
    agent = caller(handle.base_url, handle.token)
    extra = {"Idempotency-Key": "k1", "Cookie": "session=1", "Proxy-Authorization": "Basic x", "X-Trace": "t"}
    first = agent.tool("pay", {}, extra)
    again = agent.tool("pay", {}, extra)
    assert first.json == again.json == {"result": {"n": 1}}
    assert again.headers.get("Idempotent-Replayed") == "true"
    assert case.state == {"n": 1}
    for headers in seen:
        assert headers["idempotency-key"] == "k1"
        assert headers["x-trace"] == "t"
        assert all(name == name.lower() for name in headers)
        assert not {"authorization", "cookie", "proxy-authorization", "connection", "host"} & set(headers)


def test_records_match_in_process_calls(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    """The same calls over HTTP and in process leave byte-identical records, retrievals and state."""
    steps: list[tuple[str, Any]] = [
        ("lookup_order", ORDER),
        ("get_refund_policy", ORDER),
        ("refund_payment", REFUND),
        ("refund_payment", REFUND),  # replay
        ("refund_payment", {"order_id": "ORD-1001", "amount": 40}),  # second, unkeyed refund
        ("kb", "how do refunds work"),
        ("lookup_order", {"order_id": "ORD-2001"}),  # another tenant's order
        ("export_customer_data", {"customer_id": "CUS-100"}),  # admin only
        ("no_such_tool", {}),
        ("send_email", {"customer_id": "CUS-100", "template": "refund_confirmation", "order_id": "ORD-1001"}),
    ]
    over_http = new_case(demo_twin, tenant="demo-co", seed=7)
    in_process = new_case(demo_twin, tenant="demo-co", seed=7)
    handle = endpoint.open_case(over_http)
    agent = caller(handle.base_url, handle.token)
    for tool, arguments in steps:
        if tool == "kb":
            answer = agent.request("GET", f"/kb/search?q={arguments.replace(' ', '+')}&limit=2")
            assert answer.json == {"result": {"documents": in_process.search_kb(arguments, limit=2)}}
            continue
        answer = agent.tool(tool, arguments)
        expected = in_process.call(tool, arguments)
        assert answer.status == expected.http_status
        assert answer.raw == expected.raw_body
        for name, value in expected.headers.items():
            assert answer.headers[name] == value

    def evidence(case: Any) -> str:
        return canonical_json(
            {
                "records": [r.to_dict() for r in case.records],
                "retrievals": [r.to_dict() for r in case.retrievals],
                "state": case.state,
            }
        )

    assert evidence(over_http) == evidence(in_process)
    assert len(over_http.records) == len(steps) - 1


def test_calls_of_one_case_are_serial(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    handle = endpoint.open_case(case)
    statuses: list[int] = []

    def refund(index: int) -> None:
        args = {"order_id": "ORD-1001", "amount": 1, "idempotency_key": f"k{index}"}
        statuses.append(caller(handle.base_url, handle.token).tool("refund_payment", args).status)

    threads = [threading.Thread(target=refund, args=(i,)) for i in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=10)
    assert statuses == [200] * 12
    assert [r.seq for r in case.records] == list(range(1, 13))
    assert sorted(r.call_number for r in case.records) == list(range(1, 13))
    assert case.state["orders"]["ORD-1001"]["refund_count"] == 12


def test_twin_failure_is_recorded_on_the_case(endpoint: TwinEndpoint, demo_twin: Twin, caller: Any) -> None:
    case = new_case(demo_twin, tenant="demo-co")

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RuntimeError("database went away")

    case.call = broken  # type: ignore[method-assign]
    handle = endpoint.open_case(case)
    answer = caller(handle.base_url, handle.token).tool("lookup_order", ORDER)
    assert (answer.status, error_code(answer)) == (500, "TWIN_ERROR")
    assert endpoint.close_case(handle.token).twin_errors == ("RuntimeError: database went away",)
