"""A scenario's timeoutSeconds bounds the case: past it every call is refused and recorded, a call running
when it passes is stopped by its budget, and the case is graded on the evidence gathered until then."""

from __future__ import annotations

import dataclasses
import time
from typing import Any

from agenttwin.demo import DEMO_DIR, TWIN_FILE
from evaluation.grader import grade_case
from evaluation.results import FAIL, PASS
from producers.agents.contract import AgentRequest, AgentResult
from producers.simulator import simulate_case
from twin_engine import Twin
from twin_engine.case import new_case
from twin_engine.documents import load_scenario, load_twin
from twin_engine.twin import ScenarioConfig

from .test_twin_budget import LISTS, PAIRWISE, _ids

REFUND = {"order_id": "ORD-1001", "amount": 40, "reason": "damaged"}


def _scenario(seconds: float) -> ScenarioConfig:
    doc = {"metadata": {"name": "t"}, "spec": {"input": {"message": "x"}, "timeoutSeconds": seconds}}
    return ScenarioConfig.from_scenario(doc)


def _twin() -> Twin:
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "TwinDefinition",
        "metadata": {"name": "timed"},
        "spec": {
            "initialState": {"pairs": {}, "kb": {"d1": {"id": "d1", "text": "refund policy"}}},
            "retrieval": {"statePath": "kb"},
            "tools": {"t": {"inputSchema": LISTS, "handler": PAIRWISE}},
        },
    }
    return Twin.from_definition(doc)


def test_timeout_seconds_is_read_from_the_scenario() -> None:
    assert _scenario(2.5).timeout_seconds == 2.5
    assert ScenarioConfig.from_scenario({"spec": {}}).timeout_seconds is None


def test_past_the_limit_every_call_is_refused_and_recorded() -> None:
    case = new_case(_twin(), scenario=_scenario(0.2))
    assert case.call("t", {"a": ["x"], "b": ["y"]}).http_status == 200
    time.sleep(0.3)
    before = case.state_hash()
    reply = case.call("t", {"a": ["z"], "b": ["w"]})
    assert (reply.http_status, reply.record.error_code, reply.record.status) == (409, "CASE_TIME_LIMIT", "invalid")
    assert "timeoutSeconds" in reply.body["error"]["message"]
    assert case.state_hash() == before and len(case.records) == 2
    assert reply.record.arguments == {"a": ["z"], "b": ["w"]}  # what it tried is evidence
    assert case.search_kb_checked("refund").refusal is not None


def test_a_call_running_when_the_case_time_passes_is_stopped() -> None:
    case = new_case(_twin(), scenario=_scenario(60))
    case.deadline = time.monotonic() + 0.01  # the case's limit passes while this call runs
    reply = case.call("t", {"a": _ids(100), "b": _ids(100)})  # ~40,000 steps: within the step budget
    assert (reply.http_status, reply.record.error_code) == (500, "TWIN_CALL_TIME_LIMIT")
    assert reply.record.changes == ()


class _SlowAgent:
    """Refunds once, then works past the case's time and tries to refund again."""

    name, version, model_kind = "slow", "1", "deterministic-fake"

    def __init__(self, pause_s: float) -> None:
        self.pause_s = pause_s

    def run(self, request: AgentRequest) -> AgentResult:
        request.client.call("refund_payment", dict(REFUND))
        time.sleep(self.pause_s)
        request.client.call("refund_payment", dict(REFUND))
        return AgentResult("Refunded.", "SUCCESS", None, "completed")


def test_an_in_process_agent_past_the_limit_is_a_timeout_graded_on_the_evidence_so_far() -> None:
    twin = load_twin(TWIN_FILE)
    scenario = load_scenario(DEMO_DIR / "scenarios" / "refund-happy-path.yaml")
    raw: dict[str, Any] = {**scenario.raw, "spec": {**scenario.raw["spec"], "timeoutSeconds": 0.5}}
    scenario = dataclasses.replace(scenario, raw=raw, timeout_seconds=0.5)
    case = simulate_case(_SlowAgent(0.8), scenario, twin, case_seed=1, case_id="r:c", agent_spec="slow")
    assert case.agent_finding is not None and case.agent_finding.label == "AGENT_TIMEOUT"
    assert [r.error_code for r in case.records] == [None, "CASE_TIME_LIMIT"]  # the late refund never ran
    assert case.final_state["orders"]["ORD-1001"]["refund_count"] == 1
    graded = grade_case(case)
    by_id = {r.expectation.id: r for r in graded.results}
    assert by_id["agent-run"].status == FAIL
    state = [r for r in graded.results if r.expectation.type == "state"]
    assert state and all(r.status == PASS for r in state)  # what happened before the limit is graded
    assert graded.verified.status == "SUCCESS"
