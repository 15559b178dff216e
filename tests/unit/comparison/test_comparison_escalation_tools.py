"""Escalation tools are the ones the twin or scenario declares; impact sentences read right for any tool."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from evaluation.comparison import compare_case
from evaluation.divergence import first_divergence
from evaluation.grader import grade_case
from evaluation.metrics import side_metrics
from evaluation.trajectory import RISK_WORDS, build_trajectory
from producers.agents.registry import resolve_agent
from producers.simulator import simulate_case
from streams.convert import case_events, case_from_events
from streams.events import CaseFinished, TwinCallRecorded
from twin_engine import DefinitionError, Twin
from twin_engine.documents import load_scenario

from .comparison_builders import call, case_run

AIRLINE_TWIN: dict[str, Any] = {
    "apiVersion": "agenttwin.dev/v1",
    "kind": "TwinDefinition",
    "metadata": {"name": "tiny-airline"},
    "spec": {
        "initialState": {"reservations": {"R1": {"id": "R1", "status": "booked"}}, "transfers": []},
        "tools": {
            "get_reservation_details": {
                "risk": "READ",
                "handler": {"kind": "read", "path": "reservations.{reservation_id}"},
            },
            "transfer_to_human_agents": {
                "risk": "EXECUTE",
                "escalation": True,
                "handler": {
                    "kind": "mutate",
                    "effects": [{"op": "append", "path": "transfers", "value": {"summary": "{summary}"}}],
                },
            },
            "open_ticket": {
                "risk": "WRITE_REVERSIBLE",
                "handler": {"kind": "mutate", "effects": [{"op": "append", "path": "transfers", "value": "t"}]},
            },
        },
    },
}


def _scenario(tmp_path: Path, **spec: Any) -> Path:
    doc = {
        "apiVersion": "agenttwin.dev/v1",
        "kind": "Scenario",
        "metadata": {"name": "needs-a-human", "severity": "high"},
        "spec": {
            "input": {"message": "I want to talk to a person about R1."},
            "expectations": [{"id": "handed-over", "type": "requiredEscalation", "critical": True}],
            **spec,
        },
    }
    path = tmp_path / "needs-a-human.yaml"
    path.write_text(yaml.safe_dump(doc), encoding="utf-8")
    return path


def _run(tmp_path: Path, calls: list[dict[str, Any]], name: str, **spec: Any) -> Any:
    twin = Twin.from_definition(AIRLINE_TWIN)
    scenario = load_scenario(_scenario(tmp_path, **spec), twin)
    script = tmp_path / f"{name}.json"
    script.write_text(json.dumps({"default": {"calls": calls, "reply": "ok", "claimed_outcome": "ESCALATED"}}))
    agent = resolve_agent(f"script:{script}")
    return simulate_case(agent, scenario, twin, case_seed=1, case_id=f"c-{name}", agent_spec=f"script:{name}")


LOOKUP = {"tool": "get_reservation_details", "arguments": {"reservation_id": "R1"}}
TRANSFER = {"tool": "transfer_to_human_agents", "arguments": {"summary": "wants a person"}}


def test_the_twin_declares_its_escalation_tool(tmp_path: Path) -> None:
    run = _run(tmp_path, [LOOKUP, TRANSFER], "careful")
    assert run.escalation_tools == ("transfer_to_human_agents",)
    graded = grade_case(run)
    assert [(r.expectation.id, r.status) for r in graded.results] == [("handed-over", "PASS")]
    assert side_metrics(graded)["escalations"] == 1


def test_a_case_that_never_transfers_reads_right(tmp_path: Path) -> None:
    careful = grade_case(_run(tmp_path, [LOOKUP, TRANSFER], "careful"))
    careless = grade_case(_run(tmp_path, [LOOKUP], "careless"))
    assert careless.results[0].reason == "Nobody was handed the case: transfer_to_human_agents was never called."
    comparison = compare_case(careful, careless)
    assert comparison.divergence is not None
    assert comparison.divergence.impact == "The candidate never called transfer_to_human_agents."
    metrics = {m.name: (m.baseline, m.candidate) for m in comparison.metrics}
    assert metrics["escalations"] == (1, 0)


def test_the_scenario_names_its_own_escalation_tools(tmp_path: Path) -> None:
    ticket = {"tool": "open_ticket", "arguments": {}}
    run = _run(tmp_path, [LOOKUP, ticket], "ticket", escalationTools=["open_ticket"])
    assert run.escalation_tools == ("open_ticket",)
    graded = grade_case(run)
    assert graded.results[0].status == "PASS"
    assert side_metrics(graded)["escalations"] == 1


def test_scenario_check_refuses_an_escalation_tool_the_twin_lacks(tmp_path: Path) -> None:
    path = _scenario(tmp_path, escalationTools=["page_oncall"])
    with pytest.raises(DefinitionError) as caught:
        load_scenario(path, Twin.from_definition(AIRLINE_TWIN))
    assert "spec.escalationTools[0]" in str(caught.value)
    assert "'page_oncall' is not a tool of the twin" in str(caught.value)


def test_without_a_declaration_the_demo_tool_still_counts() -> None:
    run = case_run([call(1, "lookup_order", {"order_id": "ORD-1001"}), call(2, "escalate_to_human", {})])
    assert run.escalation_tools == ()
    assert side_metrics(grade_case(run))["escalations"] == 1


def test_the_declaration_travels_with_the_case_event(tmp_path: Path) -> None:
    run = _run(tmp_path, [LOOKUP, TRANSFER], "careful")
    events = case_events(run, evaluation_id="ev-1", side="baseline")
    finished = next(e for e in events if isinstance(e, CaseFinished))
    assert finished.escalation_tools == ["transfer_to_human_agents"]
    calls = [e for e in events if isinstance(e, TwinCallRecorded)]
    assert case_from_events(finished, calls).escalation_tools == ("transfer_to_human_agents",)


@pytest.mark.parametrize("risk", sorted(RISK_WORDS))
@pytest.mark.parametrize("tool", ["transfer_to_human_agents", "refund_payment", "book_reservation", "x"])
def test_impact_sentences_name_every_tool_as_something_called(risk: str, tool: str) -> None:
    lookup = call(1, "lookup_order", {"order_id": "ORD-1001"})
    acted = call(2, tool, {"id": "A1"}, risk=risk)
    stopped = first_divergence(
        build_trajectory(case_run([lookup, acted])), build_trajectory(case_run([lookup])), escalation_tools=()
    )
    went_on = first_divergence(build_trajectory(case_run([lookup])), build_trajectory(case_run([lookup, acted])))
    skipped = first_divergence(
        build_trajectory(case_run([lookup, call(2, "get_refund_policy", {"order_id": "ORD-1001"}), acted])),
        build_trajectory(case_run([lookup, call(2, tool, {"id": "A1"}, risk=risk)])),
    )
    word = RISK_WORDS[risk]
    assert stopped is not None and went_on is not None and skipped is not None
    assert stopped.impact == f"The candidate ended without calling the {word} {tool}, which the baseline called."
    assert went_on.impact == f"The candidate called the {word} {tool} after the baseline had stopped."
    assert skipped.impact == (
        f"The candidate called the {word} {tool} without first calling get_refund_policy, "
        "which the baseline called at this point."
    )
