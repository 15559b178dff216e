"""Limits that keep evidence: over a limit the twin refuses the call (400/413) and records it as invalid.

Every input an agent controls at the twin's door - tool name, arguments, headers, knowledge-base
query - is checked without recursion before anything else reads it, so no input can crash the
engine, and every refusal leaves a record (the attempt is evidence).
"""

from __future__ import annotations

from typing import Any

import pytest

from twin_engine import Twin
from twin_engine.canonical import canonical_bytes
from twin_engine.case import new_case
from twin_engine.limits import (
    MAX_ARGUMENT_DEPTH,
    MAX_ARGUMENT_VALUES,
    MAX_HEADER_VALUE_CHARS,
    MAX_HEADERS,
    MAX_KB_QUERY_CHARS,
    MAX_TOOL_NAME_CHARS,
)
from twin_engine.records import CallRecord

ORDER = {"order_id": "ORD-1001"}
REFUND = {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "refund-ORD-1001-40.00"}


def nested(depth: int) -> dict[str, Any]:
    """`{"x": {"x": ... {}}}` with `depth` levels of objects (the outer one included)."""
    root: dict[str, Any] = {}
    node = root
    for _ in range(depth - 1):
        node["x"] = {}
        node = node["x"]
    return root


def storable(record: CallRecord) -> None:
    """What the pipeline does with a record: canonical UTF-8 JSON of every field."""
    canonical_bytes(record.to_dict())


@pytest.mark.parametrize("depth", [MAX_ARGUMENT_DEPTH, MAX_ARGUMENT_DEPTH + 1, 700, 5000, 100_000])
def test_deep_arguments_are_refused_and_recorded(demo_twin: Twin, depth: int) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    # the top-level object is one level, so `nested(depth - 1)` under "n" makes `depth` levels in all
    reply = case.call("lookup_order", {**ORDER, "n": nested(depth - 1)})
    if depth <= MAX_ARGUMENT_DEPTH:
        assert reply.http_status == 200
        return
    assert (reply.http_status, reply.body["error"]["code"]) == (400, "ARGUMENTS_TOO_DEEP")
    assert str(MAX_ARGUMENT_DEPTH) in reply.body["error"]["message"]
    record = reply.record
    assert (record.status, record.error_code, record.tool, record.seq) == (
        "invalid",
        "ARGUMENTS_TOO_DEEP",
        "lookup_order",
        1,
    )
    # the record keeps a bounded preview: what the agent named is visible, the depth is cut
    assert record.arguments["order_id"] == "ORD-1001"
    storable(record)
    assert len(canonical_bytes(record.arguments)) < 64 * 1024
    # the case goes on: the next call is served and numbered after the refused one
    after = case.call("lookup_order", ORDER)
    assert (after.http_status, after.record.seq, after.record.call_number) == (200, 2, 2)


def test_deep_arguments_of_an_admin_tool_still_show_the_policy_violation(demo_twin: Twin) -> None:
    reply = new_case(demo_twin).call("export_customer_data", {"customer_id": "CUS-100", "n": nested(900)})
    assert (reply.record.status, reply.record.policy_violation) == ("denied", "ADMIN_ONLY")
    storable(reply.record)


def test_deep_lists_and_unknown_tools_too(demo_twin: Twin) -> None:
    deep: list[Any] = []
    node = deep
    for _ in range(3000):
        node.append([])
        node = node[0]
    case = new_case(demo_twin)
    unknown = case.call("drop_tables", {"n": deep})
    assert (unknown.http_status, unknown.record.status) == (404, "unknown_tool")
    storable(unknown.record)
    known = case.call("escalate_to_human", deep)  # not even an object, and too deep
    assert (known.http_status, known.record.status, known.record.error_code) == (
        400,
        "invalid",
        "ARGUMENTS_TOO_DEEP",
    )
    storable(known.record)


def test_too_many_values_are_refused_with_413(demo_twin: Twin) -> None:
    many = {"order_id": "ORD-1001", "reason": list(range(MAX_ARGUMENT_VALUES + 1))}
    reply = new_case(demo_twin).call("escalate_to_human", many)
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (
        413,
        "ARGUMENTS_TOO_LARGE",
        "invalid",
    )
    assert reply.record.arguments["order_id"] == "ORD-1001"
    assert len(canonical_bytes(reply.record.arguments)) < 64 * 1024


def test_a_cycle_is_refused_not_walked_forever(demo_twin: Twin) -> None:
    loop: dict[str, Any] = {"order_id": "ORD-1001"}
    loop["self"] = loop
    reply = new_case(demo_twin).call("lookup_order", loop)
    assert reply.http_status in (400, 413)
    assert reply.record.status == "invalid"
    storable(reply.record)


def test_huge_string_is_refused_without_keeping_it(demo_twin: Twin) -> None:
    reply = new_case(demo_twin).call("escalate_to_human", {"order_id": "ORD-1001", "reason": "x" * (8 << 20)})
    assert (reply.http_status, reply.record.status) == (413, "invalid")
    assert len(canonical_bytes(reply.record.arguments)) < 64 * 1024


def test_lone_surrogates_are_refused_and_the_record_stays_utf8(demo_twin: Twin) -> None:
    reply = new_case(demo_twin).call("lookup_order", {"order_id": "ORD-\ud800"})
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (
        400,
        "INVALID_ARGUMENT",
        "invalid",
    )
    storable(reply.record)


@pytest.mark.parametrize(
    ("headers", "status", "code"),
    [
        ({f"x-h{i}": "v" for i in range(MAX_HEADERS + 1)}, 413, "HEADERS_TOO_LARGE"),
        ({"Idempotency-Key": "k" * (MAX_HEADER_VALUE_CHARS + 1)}, 413, "HEADERS_TOO_LARGE"),
        ({"x-n" * 200: "v"}, 413, "HEADERS_TOO_LARGE"),
        ({"Idempotency-Key": 7}, 400, "INVALID_HEADERS"),
        ({7: "v"}, 400, "INVALID_HEADERS"),
        ({"Idempotency-Key": "k\ud800"}, 400, "INVALID_HEADERS"),
        ("not a mapping", 400, "INVALID_HEADERS"),
    ],
)
def test_hostile_headers_are_refused_and_recorded(demo_twin: Twin, headers: Any, status: int, code: str) -> None:
    case = new_case(demo_twin, tenant="demo-co")
    reply = case.call("refund_payment", REFUND, headers=headers)
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (status, code, "invalid")
    assert reply.record.idempotency_key is None
    assert case.state == case.initial  # refused before anything ran
    storable(reply.record)


@pytest.mark.parametrize("name", ["t" * (MAX_TOOL_NAME_CHARS + 1), 42, None, "look\ud800up"])
def test_hostile_tool_names_are_refused_and_recorded(demo_twin: Twin, name: Any) -> None:
    case = new_case(demo_twin)
    reply = case.call(name, ORDER)
    assert (reply.http_status, reply.body["error"]["code"], reply.record.status) == (
        400,
        "INVALID_TOOL_NAME",
        "invalid",
    )
    assert isinstance(reply.record.tool, str)
    assert len(reply.record.tool) <= MAX_TOOL_NAME_CHARS + 1
    storable(reply.record)


def test_a_twin_failure_is_a_recorded_500_never_an_exception(demo_twin: Twin, monkeypatch: Any) -> None:
    import twin_engine.case as case_module

    def broken(*args: Any, **kwargs: Any) -> Any:
        raise RecursionError("maximum recursion depth exceeded")

    case = new_case(demo_twin, tenant="demo-co")
    monkeypatch.setattr(case_module, "execute", broken)
    reply = case.call("refund_payment", REFUND)
    assert (reply.http_status, reply.body["error"]["code"]) == (500, "TWIN_ERROR")
    record = reply.record
    assert (record.status, record.error_code, record.mutated, record.changes) == ("error", "TWIN_ERROR", False, ())
    assert "RecursionError" in reply.body["error"]["message"]
    assert case.records == (record,)
    assert case.state == case.initial
    storable(record)


def test_kb_query_over_the_limit_is_refused_and_recorded(demo_twin: Twin) -> None:
    case = new_case(demo_twin)
    assert case.search_kb("refund " * (MAX_KB_QUERY_CHARS // 7 + 1)) == []
    assert case.search_kb(12345) == []  # type: ignore[arg-type]
    first, second = case.retrievals
    assert (first.refused, second.refused) == ("QUERY_TOO_LONG", "INVALID_QUERY")
    assert len(first.query) <= MAX_KB_QUERY_CHARS + len("‹cut›")
    assert first.to_dict()["refused"] == "QUERY_TOO_LONG"
    fine = case.search_kb("refund policy")
    assert fine
    assert "refused" not in case.retrievals[2].to_dict()  # an ordinary retrieval's record is unchanged
