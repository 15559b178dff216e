"""The miner's guesses, one recorded status or piece of evidence at a time, and what it refuses."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
import yaml

from agenttwin.demo import TWIN_FILE
from agenttwin.mining import PLACEHOLDER_MESSAGE, MiningError, draft, render
from streams.events import OutcomeVerified, SpanRecorded
from twin_engine.documents import load_twin, scenario_from_text

TRACE = "0af7651916cd43dd8448eb211c80319c"
AT = datetime(2026, 1, 1, tzinfo=UTC)
TWIN = load_twin(TWIN_FILE)


def span(
    n: int, name: str, attrs: dict[str, str], *, parent: str | None = "r" * 16, status: str = "UNSET"
) -> SpanRecorded:
    return SpanRecorded(
        event_id=f"e{n}",
        occurred_at=AT,
        correlation_id=TRACE,
        tenant="demo-co",
        trace_id=TRACE,
        span_id=f"{n:016x}" if parent else "r" * 16,
        parent_span_id=parent,
        name=name,
        kind="INTERNAL",
        start_unix_nano=1000 + n,
        end_unix_nano=2000 + n,
        status_code=status,
        service_name="agent",
        source="production",
        attributes=attrs,
        resource_attributes={},
    )


def root(**attrs: str) -> SpanRecorded:
    return span(0, "invoke_agent a", {"gen_ai.operation.name": "invoke_agent", **attrs}, parent=None)


def tool(n: int, name: str, status: str | None = None, **attrs: str) -> SpanRecorded:
    base = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name}
    if status:
        base["agenttwin.tool.result_status"] = status
    return span(n, f"execute_tool {name}", {**base, **attrs})


def verified(status: str = "FAILURE", evidence: Any = None) -> OutcomeVerified:
    reason = json.dumps(evidence) if isinstance(evidence, dict) else (evidence or "")
    return OutcomeVerified(
        event_id="v",
        occurred_at=AT,
        correlation_id=TRACE,
        tenant="demo-co",
        trace_id=TRACE,
        evaluator_version="system-of-record",
        status=status,
        verified=True,
        source="external_callback",
        reason=reason,
    )


EXPECTED = {"expected": {"orders.ORD-1001.status": "refunded"}}


def mined(spans: list[SpanRecorded], verification: OutcomeVerified) -> tuple[str, dict[str, Any]]:
    text = render(draft(spans, verification, TWIN), TWIN)
    scenario_from_text(text, "draft.yaml", TWIN)  # the draft is a valid scenario of the twin
    return text, yaml.safe_load(text)


@pytest.mark.parametrize(
    ("tool_name", "status", "fault"),
    [
        ("refund_payment", "timeout", "timeout_after_mutation"),
        ("lookup_order", "timeout", "timeout_before_mutation"),
        ("lookup_order", "rate_limited", "http_429"),
        ("refund_payment", "denied", "auth_denied"),
        ("refund_payment", "error", "http_500"),
    ],
)
def test_each_recorded_failure_becomes_a_fault_on_its_call_number(tool_name: str, status: str, fault: str) -> None:
    spans = [root(), tool(1, tool_name), tool(2, tool_name, status), tool(3, tool_name)]
    text, doc = mined(spans, verified(evidence=EXPECTED))
    assert doc["spec"]["faults"] == [{"target": tool_name, "when": {"callNumber": 2}, "behavior": {"type": fault}}]
    assert f"# GUESS: {tool_name} call 2 (call 2 of the trace) was recorded '{status}'" in text


def test_a_span_error_status_is_read_when_no_result_status_was_recorded() -> None:
    spans = [root(), span(1, "execute_tool refund_payment", {"gen_ai.tool.name": "refund_payment"}, status="ERROR")]
    _, doc = mined(spans, verified(evidence=EXPECTED))
    assert doc["spec"]["faults"][0]["behavior"]["type"] == "http_500"


def test_openinference_tool_spans_and_input_are_read() -> None:
    spans = [
        root(**{"input.value": json.dumps([{"role": "user", "content": "Where is ORD-1001?"}])}),
        span(
            1,
            "lookup_order",
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup_order",
                "input.value": json.dumps({"order_id": "ORD-1001"}),
            },
        ),
    ]
    text, doc = mined(spans, verified(evidence=EXPECTED))
    assert doc["spec"]["input"]["message"] == "Where is ORD-1001?"
    assert '"order_id\\": \\"ORD-1001\\"' in text or '{\\"order_id\\": \\"ORD-1001\\"}' in text


# The root span's input.value as openinference-instrumentation-langchain 0.1.80 recorded it for a LangGraph
# `graph.invoke(...)` (captured from the real instrumentation): tuples, serialized messages, dicts, a string.
LANGGRAPH_INPUTS = [
    ('{"messages": [["user", "Please refund order ORD-1"]]}', "Please refund order ORD-1"),
    (
        '{"messages": [{"type": "human", "data": {"content": "Please refund order ORD-2", "additional_kwargs": {}, '
        '"response_metadata": {}, "type": "human", "name": null, "id": "8957e1cb"}}]}',
        "Please refund order ORD-2",
    ),
    ('{"messages": [{"role": "user", "content": "Please refund order ORD-3"}]}', "Please refund order ORD-3"),
    ("Please refund ORD-4", "Please refund ORD-4"),
    # a system prompt first: the user's message is still the one taken
    (
        '{"messages": [["system", "You are a refund agent."], ["human", "Refund ORD-5"]]}',
        "Refund ORD-5",
    ),
    (
        '{"messages": [{"type": "system", "data": {"content": "Be brief."}}, '
        '{"type": "human", "data": {"content": "Refund ORD-6"}}]}',
        "Refund ORD-6",
    ),
    ('["Where is ORD-7?", "And refund it."]', "Where is ORD-7?"),  # two plain strings: not a [role, text] pair
]


@pytest.mark.parametrize(("recorded", "message"), LANGGRAPH_INPUTS)
def test_the_user_message_is_read_from_a_langgraph_root_span(recorded: str, message: str) -> None:
    spans = [root(**{"input.value": recorded}), tool(1, "lookup_order", "ok")]
    _, doc = mined(spans, verified(evidence=EXPECTED))
    assert doc["spec"]["input"]["message"] == message


def test_no_captured_input_is_a_placeholder_with_its_guess() -> None:
    text, doc = mined([root(), tool(1, "lookup_order", "ok")], verified(evidence=EXPECTED))
    assert doc["spec"]["input"]["message"] == PLACEHOLDER_MESSAGE
    assert "# GUESS: the input was not captured" in text
    assert [e["type"] for e in doc["spec"]["expectations"]] == ["state", "outcomeVerified"]


def test_evidence_naming_a_duplicate_is_taken_as_fact() -> None:
    evidence = {"duplicateSideEffect": "refund_payment"}
    text, doc = mined([root(), tool(1, "refund_payment", "ok")], verified(evidence=evidence))
    assert doc["spec"]["expectations"] == [
        {
            "id": "no-duplicate-refund-payment",
            "type": "noDuplicateSideEffect",
            "tool": "refund_payment",
            "critical": True,
        }
    ]
    assert "GUESS" not in text.split("expectations:")[1]


def test_a_repeated_write_is_a_duplicate_only_when_verification_failed() -> None:
    spans = [root(), tool(1, "refund_payment", "ok"), tool(2, "refund_payment", "ok")]
    _, doc = mined(spans, verified("FAILURE", "two refunds in the ledger"))
    assert [e["type"] for e in doc["spec"]["expectations"]] == ["noDuplicateSideEffect"]
    with pytest.raises(MiningError, match="nothing to turn into an expectation"):
        draft(spans, verified("SUCCESS", "all good"), TWIN)


def test_no_spans_is_refused() -> None:
    with pytest.raises(MiningError, match="no spans"):
        draft([], verified(evidence=EXPECTED), TWIN)


@pytest.mark.parametrize(
    ("result", "fault"),
    [
        ({"status": 504, "error": "gateway timeout"}, "timeout_after_mutation"),
        ({"status_code": 429, "error": "slow down"}, "http_429"),
        ({"statusCode": 403}, "auth_denied"),
        ({"error": "card declined"}, "http_500"),
    ],
)
def test_a_stock_tool_span_whose_result_carries_the_error_is_a_fault(result: dict[str, Any], fault: str) -> None:
    """OpenInference: the span stays OK, the thin tool returned the provider's error as data; the miner reads
    it as ingest does (streams/span_reading.py), so the draft replays the failure."""
    attrs = {
        "openinference.span.kind": "TOOL",
        "tool.name": "refund_payment",
        "tool.parameters": json.dumps({"type": "object", "properties": {"order_id": {"type": "string"}}}),
        "input.value": json.dumps({"order_id": "ORD-1001", "amount": 40.0}),
        "output.value": json.dumps(result),
    }
    text, doc = mined([root(), span(1, "refund_payment", attrs)], verified(evidence=EXPECTED))
    expected_fault = {"target": "refund_payment", "when": {"callNumber": 1}, "behavior": {"type": fault}}
    assert doc["spec"]["faults"] == [expected_fault]
    # the call's arguments (input.value), not the tool's parameter schema (tool.parameters)
    assert 'refund_payment #1 (WRITE_IRREVERSIBLE) {\\"amount\\": 40.0, \\"order_id\\": \\"ORD-1001\\"} -> ' in text


def test_a_stock_tool_span_with_an_ordinary_result_is_no_fault() -> None:
    attrs = {"openinference.span.kind": "TOOL", "tool.name": "lookup_order", "output.value": '{"status": "delivered"}'}
    _, doc = mined([root(), span(1, "lookup_order", attrs)], verified(evidence=EXPECTED))
    assert doc["spec"].get("faults", []) == []
