"""The opt-in model-driven user (`user.kind: llm`), against the local stand-in for the Messages API."""

from __future__ import annotations

import pytest
import yaml

from producers.agents.contract import AgentRequest, AgentResult, Turn
from producers.agents.errors import AgentSpecError
from producers.agents.user_sim import DONE, LlmUser, user_for
from producers.simulator import simulate_case
from tests.unit.llm_agent.conftest import TEST_KEY, TEST_MODEL, FakeMessagesApi, api_error, demo_world, final
from twin_engine.documents import scenario_from_text

GOAL = "You want 40 USD back for order ORD-1001 and you agree to any confirmation the agent asks for."


def test_an_llm_user_needs_a_key_before_any_turn_runs() -> None:
    with pytest.raises(AgentSpecError, match="ANTHROPIC_API_KEY"):
        user_for({"kind": "llm", "goal": GOAL})


def configured(api: FakeMessagesApi, monkeypatch: pytest.MonkeyPatch) -> LlmUser:
    monkeypatch.setenv("ANTHROPIC_API_KEY", TEST_KEY)
    monkeypatch.setenv("AGENTTWIN_AGENT_BASE_URL", api.url)
    monkeypatch.setenv("AGENTTWIN_AGENT_LLM_MODEL", TEST_MODEL)
    user = user_for({"kind": "llm", "goal": GOAL, "maxTurns": 3})
    assert isinstance(user, LlmUser) and user.kind == "llm"
    return user


def test_the_model_plays_the_customer_and_says_done(api: FakeMessagesApi, monkeypatch: pytest.MonkeyPatch) -> None:
    user = configured(api, monkeypatch)
    api.script(final("Yes, please go ahead."), final(DONE))
    first = [Turn("Refund $40 for ORD-1001.", "Shall I refund 40.00 USD? Please confirm.")]
    assert user.next_message(first) == "Yes, please go ahead."
    sent = api.seen[0].body
    assert sent["model"] == TEST_MODEL and sent["temperature"] == 0
    assert GOAL in sent["messages"][0]["content"]
    # the model is the customer: its own earlier words are "assistant", the agent's replies "user"
    assert [m["role"] for m in sent["messages"]] == ["user", "assistant", "user"]
    assert sent["messages"][2]["content"] == "Shall I refund 40.00 USD? Please confirm."
    second = [*first, Turn("Yes, please go ahead.", "Done! I've refunded 40.00 USD.")]
    assert user.next_message(second) is None
    assert user.next_message([*second, Turn("x", "y")]) is None  # maxTurns 3: no API call
    assert len(api.seen) == 2


class Asker:
    name, version, model_kind = "asker", "1", "deterministic-fake"

    def run(self, request: AgentRequest) -> AgentResult:
        return AgentResult("Shall I refund 40 USD? Please confirm.", "UNKNOWN", None, "completed", steps=1)


def test_a_failing_model_user_ends_the_case_as_a_user_error(
    api: FakeMessagesApi, monkeypatch: pytest.MonkeyPatch
) -> None:
    configured(api, monkeypatch)
    api.script(api_error(401, "authentication_error"))
    twin = demo_world()[0]
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "Scenario",
        "metadata": {"name": "llm-chat", "severity": "low"},
        "spec": {
            "input": {"message": "Refund $40 for ORD-1001.", "context": {"tenant": "demo-co"}},
            "user": {"kind": "llm", "goal": GOAL},
            "expectations": [{"type": "outputContains", "turn": 1, "value": "confirm"}],
        },
    }
    scenario = scenario_from_text(yaml.safe_dump(doc), "llm.yaml", twin)
    case = simulate_case(Asker(), scenario, twin, case_seed=1, case_id="c:llm", agent_spec="asker")
    assert case.agent_finding is not None and case.agent_finding.label == "USER_ERROR"
    assert [(t.turn, t.user_kind) for t in case.turns] == [(1, "llm")]
