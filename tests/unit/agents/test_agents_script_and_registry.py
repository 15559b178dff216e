"""Script agents, the agent-spec registry, the simulator's error boundary and the in-process client."""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest

from agenttwin.demo import TWIN_FILE
from producers.agents.contract import AgentRequest, AgentResult, AgentRunError
from producers.agents.demo_agent import DemoAgent
from producers.agents.errors import AgentSpecError
from producers.agents.registry import resolve_agent
from producers.agents.script_agent import ScriptAgent, load_script
from producers.simulator import simulate_case, simulate_suite, visible_tools
from producers.tool_client import InProcessToolClient
from twin_engine.case import new_case
from twin_engine.documents import Scenario, load_suite, load_twin
from twin_engine.twin import ScenarioConfig, Twin

SCRIPT = """
refund-happy-path:
  calls:
    - tool: lookup_order
      arguments: {order_id: ORD-1001}
    - tool: refund_payment
      arguments: {order_id: ORD-1001, amount: 40}
    - tool: refund_payment
      arguments: {order_id: ORD-1001, amount: 40}
      headers: {X-Note: again}
  reply: Refunded twice, oops.
  claimed_outcome: success
  business_outcome: REFUND_COMPLETED
malicious-retrieved-content:
  calls:
    - tool: search_knowledge_base
      arguments: {query: refund policy}
  reply: Refunds within 30 days.
  claimed_outcome: SUCCESS
default:
  reply: I can't help.
  claimed_outcome: UNKNOWN
"""


@functools.cache
def world() -> tuple[Twin, dict[str, Scenario]]:
    twin = load_twin(TWIN_FILE)
    return twin, {s.name: s for s in load_suite("demo", twin)}


def write(tmp_path: Path, text: str, name: str = "agent.yaml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_script_calls_are_made_in_order_whatever_the_replies(tmp_path: Path) -> None:
    twin, scenarios = world()
    spec = f"script:{write(tmp_path, SCRIPT)}"
    runs = {
        r.scenario_name: r for r in simulate_suite(spec, scenarios.values(), twin, run_seed=1, run_id="r")
    }
    happy = runs["refund-happy-path"]
    assert [r.tool for r in happy.records] == ["lookup_order", "refund_payment", "refund_payment"]
    assert happy.final_state is not None
    assert happy.final_state["orders"]["ORD-1001"]["refund_count"] == 2
    assert (happy.output, happy.claimed_outcome, happy.business_outcome) == (
        "Refunded twice, oops.",
        "SUCCESS",
        "REFUND_COMPLETED",
    )
    assert happy.agent_version.startswith("sha256:")
    malicious = runs["malicious-retrieved-content"]
    assert malicious.records == ()
    assert len(malicious.retrievals) == 1
    other = runs["cross-tenant-order"]
    assert (other.records, other.output, other.claimed_outcome) == ((), "I can't help.", "UNKNOWN")
    assert other.business_outcome is None


def test_script_headers_reach_the_client(tmp_path: Path) -> None:
    seen: list[dict[str, str] | None] = []

    class Client:
        def call(
            self, tool: str, arguments: dict[str, object], headers: dict[str, str] | None = None
        ) -> object:
            from producers.agents.canned_client import ok_reply

            seen.append(headers)
            return ok_reply({})

        def search_kb(self, query: str, limit: int = 3) -> list[dict[str, object]]:
            return []

    agent = ScriptAgent(write(tmp_path, SCRIPT))
    request = AgentRequest(
        message="m",
        context={},
        tenant="t",
        customer_id=None,
        tools=(),
        client=Client(),
        session_id="s",
        scenario_name="refund-happy-path",
    )
    result = agent.run(request)
    assert seen == [None, None, {"X-Note": "again"}]
    assert result.steps == 4
    assert result.status == "completed"


def test_script_json_file(tmp_path: Path) -> None:
    path = write(tmp_path, json.dumps({"default": {"reply": "hi", "claimed_outcome": "partial"}}), "a.json")
    assert load_script(path)["default"].claimed_outcome == "PARTIAL"


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("default:\n  reply: x\n", "default.claimed_outcome: Field required"),
        ("default:\n  reply: x\n  claimed_outcome: MAYBE\n", "default.claimed_outcome"),
        ("default:\n  reply: x\n  claimed_outcome: SUCCESS\n  extra: 1\n", "default.extra: Extra inputs"),
        (
            "s:\n  calls: [{arguments: {}}]\n  reply: x\n  claimed_outcome: SUCCESS\n",
            "s.calls.0.tool: Field required",
        ),
        ("- just a list\n", "expected a mapping of scenario name"),
        ("a: [unclosed\n", "not valid YAML"),
    ],
)
def test_script_validation_errors_name_the_file_and_problem(tmp_path: Path, text: str, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(AgentSpecError) as info:
        resolve_agent(f"script:{path}")
    message = str(info.value)
    assert message.startswith(f"{path}: ")
    assert problem in message
    assert "\n" not in message


def test_script_missing_file(tmp_path: Path) -> None:
    with pytest.raises(AgentSpecError, match="cannot read the script file"):
        resolve_agent(f"script:{tmp_path / 'nope.yaml'}")


def test_script_without_entry_or_default_fails_the_case(tmp_path: Path) -> None:
    twin, scenarios = world()
    path = write(tmp_path, "refund-happy-path:\n  reply: x\n  claimed_outcome: SUCCESS\n")
    agent = resolve_agent(f"script:{path}")
    run = simulate_case(
        agent, scenarios["refund-over-limit"], twin, case_seed=5, case_id="c1", agent_spec="s"
    )
    assert run.agent_finding is not None
    assert run.agent_finding.label == "AGENT_ERROR"
    assert "no entry for scenario 'refund-over-limit'" in run.agent_finding.message
    assert run.agent_status is None
    assert not run.agent_ran
    assert run.records == ()
    assert run.final_state == run.initial_state


@pytest.mark.parametrize("version", ["1.2.3", "1.2.4", "1.3.0", "1.3.1", "1.3.2"])
def test_resolve_demo_versions(version: str) -> None:
    agent = resolve_agent(f"demo:{version}")
    assert isinstance(agent, DemoAgent)
    assert (agent.name, agent.version, agent.model_kind) == (
        "support-refund-agent",
        version,
        "deterministic-fake",
    )


def test_demo_limits_come_from_the_manifest() -> None:
    agent = resolve_agent("demo:1.2.3")
    assert isinstance(agent, DemoAgent)
    assert (agent.limits.max_steps, agent.limits.max_tool_calls, agent.limits.max_duration_seconds) == (
        25,
        20,
        120,
    )


@pytest.mark.parametrize(
    ("spec", "fragment"),
    [
        (
            "demo:9.9.9",
            "unknown demo agent version '9.9.9'; known versions: 1.2.3, 1.2.4, 1.3.0, 1.3.1, 1.3.2",
        ),
        ("python:no_such_module_xyz:Agent", "no_such_module_xyz"),
        ("demo", "is incomplete"),
        ("demo:", "is incomplete"),
        ("llama:7b", "unknown agent kind 'llama'"),
    ],
)
def test_bad_specs(spec: str, fragment: str) -> None:
    with pytest.raises(AgentSpecError) as info:
        resolve_agent(spec)
    assert fragment in str(info.value)
    assert "\n" not in str(info.value)


class _Exploding:
    name = "boom"
    version = "0"
    model_kind = "deterministic-fake"

    def __init__(self, error: Exception) -> None:
        self.error = error

    def run(self, request: AgentRequest) -> AgentResult:
        request.client.call("lookup_order", {"order_id": "ORD-1001"})
        raise self.error


@pytest.mark.parametrize(
    ("error", "label", "message"),
    [
        (RuntimeError("kaput\n  details"), "AGENT_ERROR", "RuntimeError: kaput details"),
        (AgentRunError("AGENT_TIMEOUT", "took too long"), "AGENT_TIMEOUT", "took too long"),
    ],
)
def test_simulator_turns_agent_exceptions_into_findings(error: Exception, label: str, message: str) -> None:
    twin, scenarios = world()
    run = simulate_case(
        _Exploding(error), scenarios["refund-happy-path"], twin, case_seed=1, case_id="c", agent_spec="x"
    )
    assert run.agent_finding is not None
    assert (run.agent_finding.label, run.agent_finding.message) == (label, message)
    assert (run.output, run.claimed_outcome, run.agent_status, run.tokens) == (None, None, None, None)
    assert [r.tool for r in run.records] == ["lookup_order"]  # evidence is kept
    assert run.latency_ms == 0.0


def test_visible_tools_follow_allowed_tools() -> None:
    twin, scenarios = world()
    scenario = scenarios["refund-happy-path"]
    assert [t.name for t in visible_tools(twin, scenario)] == list(twin.tool_names)
    narrowed = Scenario(**{**scenario.__dict__, "allowed_tools": ("lookup_order", "send_email")})
    assert [t.name for t in visible_tools(twin, narrowed)] == ["lookup_order", "send_email"]


def test_in_process_client_maps_twin_replies() -> None:
    twin, scenarios = world()
    case = new_case(twin,
        scenario=ScenarioConfig.from_scenario(scenarios["refund-rate-limited"].raw), seed=3, tenant="demo-co"
    )
    client = InProcessToolClient(case)
    ok = client.call("lookup_order", {"order_id": "ORD-1001"})
    assert ok.ok
    assert ok.result["refund_count"] == 0
    limited = client.call("refund_payment", {"order_id": "ORD-1001", "amount": 40})
    assert (limited.http_status, limited.error_code) == (429, "RATE_LIMITED")
    assert {k.lower(): v for k, v in limited.headers.items()}["retry-after"] == "1"
    docs = client.search_kb("refund policy", limit=1)
    assert len(docs) == 1
    assert set(docs[0]) == {"id", "title", "text"}
    assert [r.tool for r in case.records] == ["lookup_order", "refund_payment"]
    assert len(case.retrievals) == 1
