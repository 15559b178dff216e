"""The Anthropic planner against a local Messages API: the conversation it sends, the actions it takes,
and how every provider failure becomes an agent-run finding that grades the case honestly."""

from __future__ import annotations

import socket
from typing import Any

import pytest

from evaluation.case import case_run_to_dict
from evaluation.grader import grade_case
from producers.agents.contract import AgentRequest, AgentRunError, ToolReply
from producers.agents.conversation import KB_SEARCH_TOOL, Exchange, ToolCallAction
from producers.agents.demo_agent import DemoAgent
from producers.agents.llm_planner import (
    LLM_KIND,
    REPORTING_PROTOCOL,
    AnthropicConfig,
    AnthropicPlanner,
    AnthropicPlannerFactory,
    final_answer,
    render_reply,
)
from producers.case_spans import case_spans
from producers.simulator import simulate_case
from twin_engine.documents import demo_manifest

from .conftest import (
    TEST_KEY,
    TEST_MODEL,
    FakeMessagesApi,
    Reply,
    Sleeps,
    api_error,
    demo_scenario,
    demo_world,
    factory,
    final,
    tool_use,
)

HAPPY = "refund-happy-path"
DONE = (
    "Your order ORD-1001 is delivered; I can't refund it right now.\n"
    "OUTCOME: partial\nBUSINESS_OUTCOME: refund_escalated"
)


def run_case(agent: DemoAgent, scenario: str = HAPPY) -> Any:
    twin, _ = demo_world()
    return simulate_case(
        agent, demo_scenario(scenario), twin, case_seed=7, case_id=f"llm:{scenario}", agent_spec="demo:1.2.4+anthropic"
    )


def test_a_tool_call_then_a_final_answer_runs_through_the_loop_and_the_twin(api: FakeMessagesApi) -> None:
    api.script(
        tool_use("lookup_order", {"order_id": "ORD-1001"}, "toolu_01", text="Let me look at the order."),
        final(DONE),
    )
    manifest = demo_manifest("1.2.4")
    agent = DemoAgent(manifest, planner=factory(api))
    assert agent.model_kind == LLM_KIND
    case = run_case(agent)

    # The twin's records are the evidence: the model's call really reached the twin.
    assert [r.tool for r in case.records] == ["lookup_order"]
    assert case.records[0].arguments == {"order_id": "ORD-1001"}
    assert case.agent_finding is None
    assert (case.claimed_outcome, case.business_outcome) == ("PARTIAL", "REFUND_ESCALATED")
    assert case.output == "Your order ORD-1001 is delivered; I can't refund it right now."
    assert case.agent_steps == 2 and case.agent_status == "completed"

    # The label reaches the run record and the spans.
    assert case.model_kind == "llm"
    assert case_run_to_dict(case)["model_kind"] == "llm"
    kinds = {span.attributes.get("agenttwin.model.kind") for span in case_spans(case, evaluation_id="ev-llm")}
    assert "llm" in kinds and "deterministic-fake" not in kinds

    first, second = (seen.body for seen in api.seen)
    assert api.seen[0].path == "/v1/messages"
    assert api.seen[0].headers["x-api-key"] == TEST_KEY
    assert first["model"] == TEST_MODEL and first["temperature"] == 0
    assert first["tool_choice"] == {"type": "auto", "disable_parallel_tool_use": True}
    system_texts = [block["text"] for block in first["system"]]
    assert system_texts[0] == manifest.instructions and system_texts[1] == REPORTING_PROTOCOL
    tools = {tool["name"]: tool for tool in first["tools"]}
    twin, _ = demo_world()
    assert set(tools) == {spec.name for spec in twin.tool_specs()} | {KB_SEARCH_TOOL}
    assert tools["refund_payment"]["input_schema"]["required"] == ["order_id", "amount"]
    assert "WRITE_IRREVERSIBLE" in tools["refund_payment"]["description"]
    assert first["messages"][0]["content"][0]["text"] == demo_scenario(HAPPY).message
    assert '"customer_id": "CUS-100"' in first["messages"][0]["content"][1]["text"]

    # Turn two replays the model's own turn and the tool's reply under the same id.
    assistant, result = second["messages"][1], second["messages"][2]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "text", "text": "Let me look at the order."}
    assert assistant["content"][1]["id"] == "toolu_01"
    tool_result = result["content"][0]
    assert tool_result["tool_use_id"] == "toolu_01" and tool_result["is_error"] is False
    assert '"http_status": 200' in tool_result["content"] and "ORD-1001" in tool_result["content"]


def test_the_internal_key_is_in_the_system_prompt_only_when_configured(api: FakeMessagesApi) -> None:
    api.script(final("Hello.\nOUTCOME: SUCCESS"), final("Hello.\nOUTCOME: SUCCESS"))
    run_case(DemoAgent(demo_manifest("1.2.4"), planner=factory(api)))
    run_case(DemoAgent(demo_manifest("1.2.4"), planner=factory(api), internal_key=None))
    with_key, without = (seen.body["system"] for seen in api.seen)
    assert len(with_key) == 3 and "sk-demo-internal" in with_key[2]["text"]
    assert len(without) == 2


def test_the_manifest_step_limit_bounds_a_model_that_never_stops(api: FakeMessagesApi) -> None:
    manifest = demo_manifest("1.2.4")
    api.script(*[tool_use("lookup_order", {"order_id": "ORD-1001"}, f"toolu_{n}") for n in range(40)])
    case = run_case(DemoAgent(manifest, planner=factory(api)))
    assert case.agent_status == "tool_limit"
    assert len(case.records) == manifest.max_tool_calls
    assert case.claimed_outcome == "FAILURE" and case.model_kind == "llm"


@pytest.mark.parametrize(
    ("reply", "finding", "verdict"),
    [
        (api_error(401, "authentication_error"), "AGENT_AUTH", "ERRORED"),
        (api_error(403, "permission_error"), "AGENT_AUTH", "ERRORED"),
        (api_error(400, "invalid_request_error"), "AGENT_REJECTED_REQUEST", "ERRORED"),
        (api_error(429, "rate_limit_error"), "AGENT_ERROR", "FAILED"),
        (api_error(529, "overloaded_error"), "AGENT_ERROR", "FAILED"),
        (api_error(500, "api_error"), "AGENT_ERROR", "FAILED"),
    ],
)
def test_provider_errors_become_findings(api: FakeMessagesApi, reply: Any, finding: str, verdict: str) -> None:
    api.script(reply)
    case = run_case(DemoAgent(demo_manifest("1.2.4"), planner=factory(api)))
    assert case.agent_finding is not None and case.agent_finding.label == finding
    assert "anthropic" in case.agent_finding.message and TEST_MODEL in case.agent_finding.message
    assert case.model_kind == "llm" and case.output is None
    graded = grade_case(case)
    assert graded.verdict.status == verdict  # never PASSED
    assert finding in graded.verdict.labels or verdict == "ERRORED"


def test_a_model_that_does_not_answer_in_time_is_an_agent_timeout(api: FakeMessagesApi) -> None:
    api.script(Reply(final("too late").body, delay_s=2.0))
    case = run_case(DemoAgent(demo_manifest("1.2.4"), planner=factory(api, timeout_s=0.2)))
    assert case.agent_finding is not None and case.agent_finding.label == "AGENT_TIMEOUT"
    assert grade_case(case).verdict.status == "FAILED"


def test_overload_is_retried_with_backoff_then_given_up(api: FakeMessagesApi) -> None:
    sleeps = Sleeps()
    api.script(*[api_error(529, "overloaded_error")] * 3)
    planner = factory(api, sleeps, max_retries=2)
    with pytest.raises(AgentRunError) as failed:
        run_planner(planner)
    assert failed.value.finding == "AGENT_ERROR" and "529" in failed.value.message
    assert len(api.seen) == 3 and sleeps.waits == [0.5, 1.0]


def test_a_rate_limit_is_retried_after_retry_after(api: FakeMessagesApi) -> None:
    sleeps = Sleeps()
    api.script(api_error(429, "rate_limit_error", {"retry-after": "3"}), final("Hi.\nOUTCOME: SUCCESS"))
    action = run_planner(factory(api, sleeps, max_retries=2))
    assert action == final_answer("Hi.\nOUTCOME: SUCCESS")
    assert sleeps.waits == [3.0]


def test_an_unreachable_provider_and_an_unreadable_reply(api: FakeMessagesApi) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        closed_port = probe.getsockname()[1]
    down = AnthropicPlannerFactory(
        AnthropicConfig(model=TEST_MODEL, api_key=TEST_KEY, base_url=f"http://127.0.0.1:{closed_port}", max_retries=0)
    )
    with pytest.raises(AgentRunError) as unreachable:
        run_planner(down)
    assert unreachable.value.finding == "AGENT_UNREACHABLE"

    api.script(Reply(b"<html>not json</html>"))
    with pytest.raises(AgentRunError) as garbled:
        run_planner(factory(api))
    assert garbled.value.finding == "AGENT_ERROR"


def test_an_answer_cut_off_at_the_output_limit_is_an_agent_error(api: FakeMessagesApi) -> None:
    cut = final("Your refund is")
    cut.body["stop_reason"] = "max_tokens"
    api.script(cut)
    with pytest.raises(AgentRunError) as failed:
        run_planner(factory(api))
    assert failed.value.finding == "AGENT_ERROR" and "cut off" in failed.value.message


def test_the_manifest_duration_bounds_wall_time(api: FakeMessagesApi) -> None:
    ticks = iter([0.0, 121.0])
    config = AnthropicConfig(model=TEST_MODEL, api_key=TEST_KEY, base_url=api.url, max_retries=0)
    planner = AnthropicPlanner(config, system=[], first_message=[], tools=[], deadline_s=120, clock=lambda: next(ticks))
    api.script(tool_use("lookup_order", {"order_id": "ORD-1001"}, "toolu_1"))
    assert isinstance(planner.next_action(1, ()), ToolCallAction)
    with pytest.raises(AgentRunError) as late:
        planner.next_action(2, ())
    assert late.value.finding == "AGENT_TIMEOUT" and "120 s" in late.value.message


def run_planner(planner_factory: AnthropicPlannerFactory) -> Any:
    twin, _ = demo_world()
    request = AgentRequest(
        message="Where is ORD-1001?",
        context={},
        tenant="demo-co",
        customer_id="CUS-100",
        tools=twin.tool_specs(),
        client=_NoClient(),
        session_id="s",
    )
    return planner_factory.build("You are a support agent.", request).next_action(1, ())


class _NoClient:
    def call(self, tool: str, arguments: dict[str, Any], headers: dict[str, str] | None = None) -> ToolReply:
        raise AssertionError("the planner never calls tools itself")

    def search_kb(self, query: str, limit: int = 3) -> list[dict[str, Any]]:
        raise AssertionError("the planner never calls tools itself")


@pytest.mark.parametrize(
    ("text", "output", "claimed", "business"),
    [
        ("Done.\nOUTCOME: SUCCESS\nBUSINESS_OUTCOME: REFUND_COMPLETED", "Done.", "SUCCESS", "REFUND_COMPLETED"),
        ("Done.\n  OUTCOME: `failure`  ", "Done.", "FAILURE", None),
        ("No protocol line at all.", "No protocol line at all.", "UNKNOWN", None),
        ("Odd.\nOUTCOME: GREAT", "Odd.", "UNKNOWN", None),
        ("The OUTCOME: SUCCESS is inline, not a line.", "The OUTCOME: SUCCESS is inline, not a line.", "UNKNOWN", None),
    ],
)
def test_final_answer_parsing(text: str, output: str, claimed: str, business: str | None) -> None:
    answer = final_answer(text)
    assert (answer.text, answer.claimed_outcome, answer.business_outcome) == (output, claimed, business)


def test_replies_are_rendered_as_the_agent_saw_them() -> None:
    assert render_reply(ToolReply(http_status=0, transport_error="TIMEOUT")) == (
        '{"error": {"code": "TIMEOUT", "message": "The tool gave no reply."}}'
    )
    failed = ToolReply(http_status=429, body={"error": {"code": "RATE_LIMITED"}})
    assert render_reply(failed) == '{"error": {"code": "RATE_LIMITED"}, "http_status": 429}'
    assert render_reply(ToolReply(http_status=502, body="oops")) == '{"body": "oops", "http_status": 502}'


def test_messages_are_rebuilt_from_the_history_with_error_flags() -> None:
    config = AnthropicConfig(model=TEST_MODEL, api_key=TEST_KEY)
    planner = AnthropicPlanner(config, system=[], first_message=[{"type": "text", "text": "hi"}], tools=[])
    call = ToolCallAction(call_id="toolu_9", tool="refund_payment", arguments={"order_id": "ORD-1", "amount": 5})
    history = (Exchange(call=call, reply=ToolReply(http_status=0, transport_error="TIMEOUT")),)
    messages = planner.messages(history)
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    result: Any = next(iter(messages[2]["content"]))
    assert isinstance(result, dict) and result["is_error"] is True and result["tool_use_id"] == "toolu_9"
