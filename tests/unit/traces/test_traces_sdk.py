"""The SDK's spans (through the real OpenTelemetry SDK, captured in memory) and content capture."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from producers.sdk import AgentTwin, ContentPolicy
from producers.sdk.content import MASK, redact
from twin_engine.canonical import sha256_hex

ARGS = {"order_id": "ORD-3029", "amount": 40.0}
MESSAGES = [
    {"role": "user", "parts": [{"type": "text", "content": "Refund my order ORD-3029"}]},
    {"role": "assistant", "parts": [{"type": "tool_call", "name": "refund_payment", "arguments": ARGS}]},
]


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    return InMemorySpanExporter()


def _sdk(exporter: InMemorySpanExporter, content: ContentPolicy | None = None) -> AgentTwin:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return AgentTwin(tracer_provider=provider, content=content, environment="prod")


def _by_name(exporter: InMemorySpanExporter) -> dict[str, ReadableSpan]:
    return {s.name: s for s in exporter.get_finished_spans()}


def _attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def _run(sdk: AgentTwin) -> str:
    with sdk.agent_run("refund-agent", "1.3.0", session_id="sess-1", input=MESSAGES) as run:
        with sdk.tool_call("lookup_order", {"order_id": "ORD-3029"}, risk="read") as call:
            call.set_result("ok", {"status": "delivered"})
        with sdk.tool_call(
            "refund_payment", ARGS, risk="WRITE_IRREVERSIBLE", attempt=2, idempotency_key="refund-ORD-3029"
        ) as call:
            call.set_result("timeout")
        with sdk.chat("claude-sonnet-4-5", provider="anthropic") as turn:
            turn.set_messages(MESSAGES, [{"role": "assistant", "parts": [{"type": "text", "content": "Done!"}]}])
            turn.set_usage(120, 30)
        sdk.claim_outcome("success", "Refunded 40.00 USD")
        return run.trace_id


def test_run_tool_and_claim_attributes(exporter: InMemorySpanExporter) -> None:
    sdk = _sdk(exporter)
    trace_id = _run(sdk)
    spans = _by_name(exporter)
    root = _attrs(spans["invoke_agent refund-agent"])
    assert root["gen_ai.operation.name"] == "invoke_agent" and root["gen_ai.agent.name"] == "refund-agent"
    assert root["agenttwin.agent.name"] == "refund-agent" and root["agenttwin.agent.version"] == "1.3.0"
    assert root["agenttwin.session.id"] == "sess-1" and root["gen_ai.conversation.id"] == "sess-1"
    assert root["agenttwin.source"] == "production" and root["agenttwin.environment"] == "prod"
    assert root["agenttwin.outcome.claimed"] == "SUCCESS"  # a claim, normalized
    assert root["agenttwin.outcome.business"] == "Refunded 40.00 USD"
    assert root["agenttwin.outcome.tool"] == "refund_payment"  # the riskiest tool called
    tool = _attrs(spans["execute_tool refund_payment"])
    assert tool["gen_ai.operation.name"] == "execute_tool" and tool["gen_ai.tool.name"] == "refund_payment"
    assert tool["agenttwin.tool.risk"] == "WRITE_IRREVERSIBLE" and tool["agenttwin.tool.attempt"] == 2
    assert tool["agenttwin.tool.args_hash"] == sha256_hex(ARGS)
    assert tool["agenttwin.tool.idempotency_key_hash"] == hashlib.sha256(b"refund-ORD-3029").hexdigest()[:16]
    assert tool["agenttwin.tool.result_status"] == "timeout"
    assert tool["agenttwin.agent.name"] == "refund-agent"  # run context copied to every span
    assert _attrs(spans["execute_tool lookup_order"])["agenttwin.tool.risk"] == "READ"
    chat = _attrs(spans["chat claude-sonnet-4-5"])
    assert chat["gen_ai.usage.input_tokens"] == 120 and chat["gen_ai.provider.name"] == "anthropic"
    assert {format(s.context.trace_id, "032x") for s in spans.values() if s.context} == {trace_id}


def test_content_is_off_by_default(exporter: InMemorySpanExporter) -> None:
    _run(_sdk(exporter))
    for s in exporter.get_finished_spans():
        keys = set(_attrs(s))
        assert not keys & {
            "gen_ai.input.messages",
            "gen_ai.output.messages",
            "gen_ai.tool.call.arguments",
            "gen_ai.tool.call.result",
        }


def test_full_content_is_recorded_as_json(exporter: InMemorySpanExporter) -> None:
    _run(_sdk(exporter, ContentPolicy("full")))
    spans = _by_name(exporter)
    assert json.loads(_attrs(spans["invoke_agent refund-agent"])["gen_ai.input.messages"]) == MESSAGES
    assert json.loads(_attrs(spans["execute_tool refund_payment"])["gen_ai.tool.call.arguments"]) == ARGS
    assert json.loads(_attrs(spans["execute_tool lookup_order"])["gen_ai.tool.call.result"]) == {"status": "delivered"}


@pytest.mark.parametrize(
    ("redaction", "text", "amount"),
    [
        ("mask", MASK, MASK),
        ("hash", "sha256:" + sha256_hex("Refund my order ORD-3029"), "sha256:" + sha256_hex(40.0)),
        ("drop", None, None),
    ],
)
def test_redacted_content_keeps_structure_and_hides_values(
    exporter: InMemorySpanExporter, redaction: Any, text: str | None, amount: str | None
) -> None:
    _run(_sdk(exporter, ContentPolicy("redacted", redaction)))
    spans = _by_name(exporter)
    shown = json.loads(_attrs(spans["invoke_agent refund-agent"])["gen_ai.input.messages"])
    assert [m["role"] for m in shown] == ["user", "assistant"]
    user_part, call_part = shown[0]["parts"][0], shown[1]["parts"][0]
    assert user_part["type"] == "text" and call_part["name"] == "refund_payment"
    assert user_part.get("content") == text
    assert call_part["arguments"].get("amount") == amount
    assert "ORD-3029" not in json.dumps(shown)


def test_redact_scalars_and_bad_policies() -> None:
    assert redact("secret", "mask") == MASK and redact("secret", "drop") is None
    assert redact([{"role": "user", "content": None}], "hash") == [{"role": "user", "content": None}]
    with pytest.raises(ValueError, match="content mode"):
        ContentPolicy("verbose")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="redaction"):
        ContentPolicy("redacted", "shred")  # type: ignore[arg-type]


def test_agent_exceptions_pass_through_and_are_recorded(exporter: InMemorySpanExporter) -> None:
    sdk = _sdk(exporter)
    with pytest.raises(TimeoutError), sdk.agent_run("a", "1"), sdk.tool_call("refund_payment", ARGS):
        raise TimeoutError("gateway")
    spans = _by_name(exporter)
    tool = _attrs(spans["execute_tool refund_payment"])
    assert tool["agenttwin.tool.result_status"] == "timeout" and tool["error.type"] == "TimeoutError"
    assert _attrs(spans["invoke_agent a"])["error.type"] == "TimeoutError"


def test_instrumentation_problems_are_counted_never_raised(exporter: InMemorySpanExporter) -> None:
    sdk = _sdk(exporter, ContentPolicy("full"))
    with sdk.agent_run("a", "1"), sdk.tool_call("t", {"when": object()}) as call:  # not JSON: no hash
        call.set_result("weird-status")
    tool = _attrs(_by_name(exporter)["execute_tool t"])
    assert "agenttwin.tool.args_hash" not in tool and "gen_ai.tool.call.arguments" not in tool
    assert tool["agenttwin.tool.result_status"] == "invalid"
    stats = sdk.stats()
    assert stats.errors == 2 and "TypeError" in (stats.last_error or "")
    sdk.claim_outcome("SUCCESS")  # outside any run or span: nowhere to record it
    assert sdk.stats().dropped == 1
    assert sdk.report_outcome("0" * 31 + "1", "FAILURE", True, "human_review") is False  # no reporter
    assert sdk.stats().dropped == 2


def test_module_level_functions_use_the_configured_default(exporter: InMemorySpanExporter) -> None:
    from producers import sdk as module

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    module.configure(tracer_provider=provider)
    try:
        with module.agent_run("m", "2"), module.tool_call("x", {}, risk="EXECUTE"):
            module.claim_outcome("PARTIAL")
        assert _attrs(_by_name(exporter)["invoke_agent m"])["agenttwin.outcome.claimed"] == "PARTIAL"
        assert module.stats().errors == 0
    finally:
        module.configure()
