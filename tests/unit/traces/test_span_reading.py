"""Reading spans from any instrumentation: OpenInference, OTel GenAI, AgentTwin's own attributes.

The attribute names are checked against the semantic-conventions packages themselves, not by hand."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest
from openinference.semconv.trace import (
    MessageAttributes,
    MessageContentAttributes,
    OpenInferenceSpanKindValues,
    SpanAttributes,
    ToolCallAttributes,
)
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes, service_attributes

from streams import span_reading as R
from streams.events import SpanRecorded
from streams.span_reading import is_write_tool, normalize_subject, read_span, subjects_of_arguments

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _span(
    attrs: dict[str, Any],
    *,
    name: str = "span",
    parent: str | None = "00f067aa0ba902b7",
    status: str = "UNSET",
    message: str | None = None,
    resource: dict[str, str] | None = None,
) -> SpanRecorded:
    return SpanRecorded(
        event_id="e",
        occurred_at=AT,
        correlation_id="t",
        trace_id="0af7651916cd43dd8448eb211c80319c",
        span_id="b7ad6b7169203331",
        parent_span_id=parent,
        name=name,
        kind="INTERNAL",
        start_unix_nano=1,
        end_unix_nano=2,
        status_code=status,
        status_message=message,
        service_name="svc",
        source="production",
        attributes={k: v if isinstance(v, str) else json.dumps(v) for k, v in attrs.items()},
        resource_attributes=resource or {},
    )


def test_attribute_names_are_the_semantic_conventions_own() -> None:
    assert R.OI_SPAN_KIND == SpanAttributes.OPENINFERENCE_SPAN_KIND
    assert R.OI_TOOL_NAME == SpanAttributes.TOOL_NAME
    assert R.OI_TOOL_PARAMETERS == SpanAttributes.TOOL_PARAMETERS
    assert R.OI_INPUT_VALUE == SpanAttributes.INPUT_VALUE
    assert R.OI_OUTPUT_VALUE == SpanAttributes.OUTPUT_VALUE
    assert R.OI_AGENT_NAME == SpanAttributes.AGENT_NAME
    assert R.OI_LLM_OUTPUT_MESSAGES == SpanAttributes.LLM_OUTPUT_MESSAGES
    assert R.OI_MESSAGE_ROLE == MessageAttributes.MESSAGE_ROLE
    assert R.OI_MESSAGE_CONTENT == MessageAttributes.MESSAGE_CONTENT
    assert R.OI_MESSAGE_CONTENTS == MessageAttributes.MESSAGE_CONTENTS
    assert R.OI_MESSAGE_TOOL_CALLS == MessageAttributes.MESSAGE_TOOL_CALLS
    assert R.OI_MESSAGE_CONTENT_TEXT == MessageContentAttributes.MESSAGE_CONTENT_TEXT
    assert R.OI_TOOL_CALL_ID == ToolCallAttributes.TOOL_CALL_ID
    assert R.OI_TOOL_CALL_FUNCTION_NAME == ToolCallAttributes.TOOL_CALL_FUNCTION_NAME
    assert R.OI_TOOL_CALL_FUNCTION_ARGUMENTS == ToolCallAttributes.TOOL_CALL_FUNCTION_ARGUMENTS_JSON
    assert set(R.OI_SPAN_KINDS) == {k.value for k in OpenInferenceSpanKindValues}
    assert R.GEN_AI_OPERATION_NAME == gen_ai.GEN_AI_OPERATION_NAME
    assert R.GEN_AI_TOOL_NAME == gen_ai.GEN_AI_TOOL_NAME
    assert R.GEN_AI_TOOL_CALL_ARGUMENTS == gen_ai.GEN_AI_TOOL_CALL_ARGUMENTS
    assert R.GEN_AI_TOOL_CALL_RESULT == gen_ai.GEN_AI_TOOL_CALL_RESULT
    assert R.GEN_AI_AGENT_NAME == gen_ai.GEN_AI_AGENT_NAME
    assert R.GEN_AI_AGENT_VERSION == gen_ai.GEN_AI_AGENT_VERSION
    assert R.GEN_AI_OUTPUT_MESSAGES == gen_ai.GEN_AI_OUTPUT_MESSAGES
    assert set(R.GEN_AI_OPERATIONS) == {v.value for v in gen_ai.GenAiOperationNameValues}
    assert R.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert (R.SERVICE_NAME, R.SERVICE_VERSION) == (service_attributes.SERVICE_NAME, service_attributes.SERVICE_VERSION)


def test_an_openinference_tool_span_reads_as_a_write_tool_call_with_its_subject() -> None:
    reading = read_span(
        _span(
            {
                "openinference.span.kind": "TOOL",
                "tool.name": "refund_payment",
                "input.value": {"order_id": "ORD-1001", "amount": 40},
                "output.value": {"refund_id": "rf_1"},
            }
        )
    )
    assert (reading.role, reading.tool_name, reading.write, reading.tool_error) == (
        "TOOL",
        "refund_payment",
        True,
        None,
    )
    assert reading.tool_arguments == {"order_id": "ORD-1001", "amount": 40}
    assert reading.subjects == (("order:ORD-1001", "refund_payment"),)


@pytest.mark.parametrize(
    ("result", "error"),
    [
        ({"status": 504, "error": None}, "HTTP 504"),
        ({"status_code": "429", "detail": "slow down"}, "HTTP 429"),
        ({"statusCode": 200}, None),
        ({"error": "gateway timeout"}, "error: gateway timeout"),
        ({"status": 504, "error": "gateway timeout"}, "HTTP 504: gateway timeout"),
        ({"error": {"code": "card_declined"}}, 'error: {"code": "card_declined"}'),
        ({"isError": True, "content": [{"type": "text", "text": "boom"}]}, 'error: [{"text": "boom", "type": "text"}]'),
        ({"ok": True, "error": ""}, None),
        # a LangChain ToolMessage: status error, or JSON content carrying the HTTP status
        ({"type": "tool", "data": {"content": "Error: boom", "status": "error"}}, "tool error: Error: boom"),
        ({"type": "tool", "data": {"content": '{"status": 503}', "status": "success"}}, "HTTP 503"),
        ("plain text result", None),
        ({"status": True}, None),
    ],
)
def test_a_tool_error_is_read_from_its_result(result: Any, error: str | None) -> None:
    attrs = {"gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": "refund_payment"}
    attrs["gen_ai.tool.call.result"] = result if isinstance(result, str) else json.dumps(result)
    assert read_span(_span(attrs)).tool_error == error


def test_a_tool_error_is_read_from_the_status_error_type_and_agenttwin_result_status() -> None:
    tool = {"gen_ai.tool.name": "refund_payment", "gen_ai.operation.name": "execute_tool"}
    assert read_span(_span(tool, status="ERROR", message="timeout")).tool_error == "timeout"
    assert read_span(_span(tool, status="ERROR")).tool_error == "span status ERROR"
    assert read_span(_span({**tool, "error.type": "TimeoutError"})).tool_error == "TimeoutError"
    assert read_span(_span({**tool, "agenttwin.tool.result_status": "rate_limited"})).tool_error == "rate_limited"
    assert read_span(_span({**tool, "agenttwin.tool.result_status": "ok"})).tool_error is None


def test_a_genai_chat_span_gives_requested_calls_and_an_answer() -> None:
    calls = [
        {
            "role": "assistant",
            "parts": [{"type": "tool_call", "id": "c1", "name": "cancel_order", "arguments": {"order_id": "A-7"}}],
        }
    ]
    reading = read_span(_span({"gen_ai.operation.name": "chat", "gen_ai.output.messages": calls}))
    assert reading.role == "LLM" and reading.answer is None
    assert [(c.name, c.arguments) for c in reading.requested_calls] == [("cancel_order", {"order_id": "A-7"})]
    assert reading.subjects == (("order:A-7", "cancel_order"),)
    final = [{"role": "assistant", "parts": [{"type": "text", "content": "Cancelled."}], "finish_reason": "stop"}]
    assert read_span(_span({"gen_ai.operation.name": "chat", "gen_ai.output.messages": final})).answer == "Cancelled."


def test_an_openinference_llm_span_answers_only_when_it_requests_no_tool() -> None:
    asking = {
        "openinference.span.kind": "LLM",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.name": "refund_payment",
        "llm.output_messages.0.message.tool_calls.0.tool_call.function.arguments": '{"orderId": "ORD-9"}',
    }
    reading = read_span(_span(asking))
    assert reading.answer is None and reading.subjects == (("order:ORD-9", "refund_payment"),)
    answering = {
        "openinference.span.kind": "LLM",
        "llm.output_messages.0.message.role": "assistant",
        "llm.output_messages.0.message.contents.0.message_content.type": "text",
        "llm.output_messages.0.message.contents.0.message_content.text": "Refunded.",
    }
    assert read_span(_span(answering)).answer == "Refunded."


def test_the_root_agent_span_names_the_agent_and_carries_the_langgraph_answer() -> None:
    state = {
        "messages": [
            {"type": "human", "data": {"content": "refund ORD-1"}},
            {"type": "ai", "data": {"content": "", "tool_calls": [{"name": "refund_payment"}]}},
            {"type": "tool", "data": {"content": "{}"}},
            {"type": "ai", "data": {"content": "Done!", "tool_calls": []}},
        ]
    }
    root = _span({"openinference.span.kind": "AGENT", "output.value": state}, name="support-agent", parent=None)
    reading = read_span(root)
    assert (reading.agent_name, reading.agent_name_rank, reading.answer) == ("support-agent", 2, "Done!")
    assert read_span(_span({"output.value": "plain answer"}, parent=None)).answer == "plain answer"
    assert read_span(_span({"output.value": {"output": "executor answer"}}, parent=None)).answer == "executor answer"
    assert read_span(_span({"output.value": "an inner chain's output"})).answer is None  # not root, not AGENT


def test_agent_name_and_version_prefer_attributes_then_the_resource() -> None:
    genai = read_span(_span({"gen_ai.agent.name": "refunds", "gen_ai.agent.version": "2.1"}))
    assert (genai.agent_name, genai.agent_name_rank, genai.agent_version, genai.agent_version_rank) == (
        "refunds",
        3,
        "2.1",
        3,
    )
    res = read_span(_span({}, resource={"service.name": "svc-a", "service.version": "9"}))
    assert (res.agent_name, res.agent_name_rank, res.agent_version, res.agent_version_rank) == ("svc-a", 1, "9", 1)
    assert read_span(_span({}, resource={"service.name": "unknown_service:python"})).agent_name is None


def test_subjects_from_arguments_and_the_explicit_attribute() -> None:
    assert subjects_of_arguments({"order_id": "ORD-1", "customerId": 42, "session_id": "s", "id": "x"}) == (
        "order:ORD-1",
        "customer:42",
    )
    assert subjects_of_arguments({"order_id": True, "payment_intent_id": "pi_1", "note_id": ""}) == (
        "payment_intent:pi_1",
    )
    reading = read_span(_span({"agenttwin.subject": "Order:ORD-1, nonsense, ticket:T-9"}, parent=None))
    assert reading.subjects == (("order:ORD-1", None), ("ticket:T-9", None))
    # a read tool's arguments name no subject
    lookup = {"openinference.span.kind": "TOOL", "tool.name": "lookup_order", "input.value": '{"order_id": "ORD-1"}'}
    assert read_span(_span(lookup)).subjects == ()
    assert normalize_subject(" order : ORD-1 ") == "order:ORD-1"
    assert normalize_subject("order:") is None and normalize_subject("no colon") is None
    assert normalize_subject("order:a\nb") is None and normalize_subject("order:" + "x" * 201) is None


@pytest.mark.parametrize(
    ("name", "risk", "write"),
    [
        ("refund_payment", None, True),
        ("issueRefund", None, True),
        ("payments_refund", None, True),
        ("lookup_order", None, False),
        ("get_refund_status", None, False),
        ("search_knowledge_base", None, False),
        ("weather", None, False),
        ("lookup_order", "WRITE_REVERSIBLE", True),
        ("refund_payment", "READ", False),
    ],
)
def test_write_tools(name: str, risk: str | None, write: bool) -> None:
    assert is_write_tool(name, risk) is write


def test_hostile_attributes_read_without_an_exception() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    attrs = {
        "openinference.span.kind": "TOOL",
        "tool.name": "refund_payment",
        "input.value": deep,
        "output.value": deep,
        "llm.output_messages.x.message.role": "assistant",
        "llm.output_messages.0.message.tool_calls.z.tool_call.function.name": "cancel_order",
        "gen_ai.output.messages": '{"not": "a list"}',
    }
    reading = read_span(_span(attrs))
    assert reading.tool_name == "refund_payment" and reading.tool_error is None and reading.subjects == ()
    huge = read_span(_span({"output.value": "x" * 10_000}, parent=None))
    assert huge.answer is not None and len(huge.answer) == R.MAX_ANSWER_CHARS
