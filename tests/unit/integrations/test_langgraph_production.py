"""The LangGraph adapter against the real LangGraph (a ReAct graph with its prebuilt ToolNode) and a scripted
chat model: tool calls become spans (a 504 returned as data is an error), the final answer a claim marked
inferred, write tools' order ids a subject, and the trace id is visible inside the tools."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage
from langchain_core.tools import tool

from agenttwin.integrations.langgraph import final_answer, langgraph_run
from producers.sdk import current_trace_id
from producers.sdk.outcome import subject_outcome_event
from streams.events import ContradictionDetected, Event, OutcomeVerified
from streams.processors import OutcomeJoin, SubjectJoin
from tests.unit.integrations.conftest import AT, Captured, react_graph

ANSWER = "Done! I've refunded 40.00 USD for order ORD-1001."


class ScriptedModel(GenericFakeChatModel):
    """LangChain's fake chat model, answering from a script; tools are bound by the agent, not used."""

    def bind_tools(self, tools: Any, **kwargs: Any) -> ScriptedModel:
        return self


def _script(answer: str = ANSWER) -> Iterator[AIMessage]:
    return iter(
        [
            AIMessage(content="", tool_calls=[{"name": "lookup_order", "args": {"order_id": "ORD-1001"}, "id": "c1"}]),
            AIMessage(
                content="",
                tool_calls=[{"name": "refund_payment", "args": {"order_id": "ORD-1001", "amount": 40.0}, "id": "c2"}],
            ),
            AIMessage(content=answer),
        ]
    )


SEEN: dict[str, str | None] = {}


@tool
def lookup_order(order_id: str) -> dict[str, Any]:
    """Look up an order."""
    SEEN["trace"] = current_trace_id()
    return {"order_id": order_id, "status": "delivered", "amount": 40.0}


@tool
def refund_payment(order_id: str, amount: float) -> dict[str, Any]:
    """Refund an order (the payment provider times out, and the tool says so in its result)."""
    return {"status": 504, "error": "gateway timeout"}


def _run(captured: Captured, answer: str = ANSWER) -> str:
    agent: Any = react_graph(ScriptedModel(messages=_script(answer)), [lookup_order, refund_payment])
    with langgraph_run("support-refund-agent", "1.3.0", twin=captured.twin) as run:
        state = agent.invoke({"messages": [("user", "Please refund ORD-1001")]}, config=run.config())
    assert final_answer(state) == answer
    return run.trace_id


def test_tool_calls_and_the_answer_become_spans_with_an_inferred_claim(captured: Captured) -> None:
    trace_id = _run(captured)
    assert SEEN["trace"] == trace_id  # the run's trace id, inside a tool the graph ran
    tools = {s.name: dict(s.attributes or {}) for s in captured.spans() if s.name.startswith("execute_tool")}
    assert tools["execute_tool lookup_order"]["agenttwin.tool.result_status"] == "ok"
    assert tools["execute_tool refund_payment"]["agenttwin.tool.result_status"] == "timeout"  # the 504
    root = captured.root_attributes()
    assert root["agenttwin.outcome.claimed"] == "SUCCESS"
    assert root["agenttwin.outcome.claim_inferred_by"] == "rules-v2"
    assert root["agenttwin.subject"] == "order:ORD-1001"
    assert root["agenttwin.outcome.tool"] == "refund_payment"
    assert "gen_ai.output.messages" not in root  # content capture is off: the answer itself stays here


def test_a_verification_by_order_id_turns_into_a_contradiction(captured: Captured) -> None:
    trace_id = _run(captured)
    spans, links = captured.events()
    verification = subject_outcome_event(
        "order:ORD-1001", "FAILURE", True, "external_callback", "refund_count: 2", tenant="acme", at=AT
    )
    subject_join, outcome_join, s_store, o_store = SubjectJoin(), OutcomeJoin(), {}, {}
    out: list[Event] = []
    for event in [*spans, *links, verification]:
        out += subject_join.handle(s_store, event)
    derived = [e for e in out if isinstance(e, OutcomeVerified)]
    for event in [*spans, *derived]:
        out += outcome_join.handle(o_store, event)
    (alert,) = [e for e in out if isinstance(e, ContradictionDetected)]
    assert (alert.trace_id, alert.tool, alert.subject) == (trace_id, "refund_payment", "order:ORD-1001")
    assert (alert.agent, alert.agent_version, alert.claim_inferred_by) == ("support-refund-agent", "1.3.0", "rules-v2")


@pytest.mark.parametrize(
    ("answer", "claim"), [("I couldn't refund it: the provider timed out.", "FAILURE"), ("Which order?", "UNKNOWN")]
)
def test_other_answers_read_as_other_claims(captured: Captured, answer: str, claim: str) -> None:
    _run(captured, answer)
    assert captured.root_attributes()["agenttwin.outcome.claimed"] == claim


def test_a_stated_claim_wins_and_a_raising_tool_is_an_error(captured: Captured) -> None:
    @tool
    def cancel_order(order_id: str) -> str:
        """Cancel."""
        raise TimeoutError("upstream")

    script = iter(
        [
            AIMessage(content="", tool_calls=[{"name": "cancel_order", "args": {"order_id": "A-1"}, "id": "c1"}]),
            AIMessage(content="Cancelled!"),
        ]
    )
    agent: Any = react_graph(ScriptedModel(messages=script), [cancel_order])
    with langgraph_run("a", "1", twin=captured.twin) as run:
        run.claim("FAILURE")
        with pytest.raises(TimeoutError):
            agent.invoke({"messages": [("user", "cancel A-1")]}, config=run.config())
    (call,) = [s for s in captured.spans() if s.name == "execute_tool cancel_order"]
    assert (call.attributes or {})["agenttwin.tool.result_status"] == "timeout"
    root = captured.root_attributes()
    assert root["agenttwin.outcome.claimed"] == "FAILURE" and "agenttwin.outcome.claim_inferred_by" not in root
    assert root["agenttwin.subject"] == "order:A-1"
