"""reachesReferenceState: the reference calls replayed on a fresh twin give the target; any path to it passes."""

from __future__ import annotations

import copy
import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from agenttwin.demo import TWIN_FILE
from evaluation.grader import grade_case
from producers.agents.script_agent import ScriptAgent
from producers.simulator import simulate_case
from twin_engine import DefinitionError
from twin_engine.documents import Scenario, load_scenario, load_twin, scenario_from_text
from twin_engine.reference import TARGET_KEY

REFUND = {"tool": "refund_payment", "arguments": {"order_id": "ORD-1001", "amount": 40, "idempotency_key": "k-1"}}
SCENARIO = {
    "apiVersion": "agenttwin.dev/v1",
    "kind": "Scenario",
    "metadata": {"name": "refund-reference", "severity": "high"},
    "spec": {
        "input": {"message": "Refund 40 USD on ORD-1001.", "context": {"tenant": "demo-co", "customer_id": "CUS-100"}},
        "expectations": [
            {
                "id": "reaches-reference",
                "type": "reachesReferenceState",
                "critical": True,
                "calls": [REFUND],
                "ignore": ["refunds[*].refund_id"],  # RF-{id} counts the calls, which differ by path
            }
        ],
    },
}
SET = "1.3.0"  # the evaluator set that brought reachesReferenceState
LOOKUP = {"tool": "lookup_order", "arguments": {"order_id": "ORD-1001"}}
POLICY = {"tool": "get_refund_policy", "arguments": {"order_id": "ORD-1001"}}


def _scenario(**changes: Any) -> Scenario:
    doc = copy.deepcopy(SCENARIO)
    expectation = doc["spec"]["expectations"][0]
    for key, value in changes.items():
        if key == "faults":
            doc["spec"]["faults"] = value
        elif value is None:
            expectation.pop(key, None)
        else:
            expectation[key] = value
    twin = load_twin(TWIN_FILE)
    return scenario_from_text(yaml.safe_dump(doc), "inline.yaml", twin)


def _run(tmp_path: Path, scenario: Scenario, calls: list[dict[str, Any]], claim: str = "SUCCESS") -> Any:
    script = tmp_path / "agent.yaml"
    script.write_text(
        yaml.safe_dump({scenario.name: {"calls": calls, "reply": "Done.", "claimed_outcome": claim}}), encoding="utf-8"
    )
    agent = ScriptAgent(script)
    twin = load_twin(TWIN_FILE)
    run = simulate_case(agent, scenario, twin, case_seed=11, case_id="c1", agent_spec="script:x")
    return run, grade_case(run)


def _result(graded: Any) -> Any:
    (result,) = [r for r in graded.results if r.expectation.id == "reaches-reference"]
    return result


def test_any_path_to_the_reference_state_passes(tmp_path: Path) -> None:
    run, graded = _run(tmp_path, _scenario(), [LOOKUP, POLICY, REFUND, LOOKUP])
    result = _result(graded)
    assert (result.status, result.reason) == ("PASS", "The final state matches the reference state (the whole state).")
    assert (graded.verified.status, graded.verified.verified) == ("SUCCESS", True)  # outcome evidence
    target = run.expectations[0][TARGET_KEY]
    assert target["problem"] is None
    assert target["calls"] == [{"tool": "refund_payment", "http_status": 200, "error_code": None}]
    assert target["state"]["orders"]["ORD-1001"]["refund_count"] == 1


def test_a_double_refund_fails_with_the_first_differences(tmp_path: Path) -> None:
    twice = [REFUND, {**REFUND, "arguments": {**REFUND["arguments"], "idempotency_key": "k-2"}}]
    _, graded = _run(tmp_path, _scenario(), twice)
    result = _result(graded)
    assert result.status == "FAIL" and result.label == "REFERENCE_STATE_MISMATCH"
    assert result.reason.startswith(
        "The final state differs from the reference state (the whole state): "
        "orders.ORD-1001.refund_count: expected 1, got 2; orders.ORD-1001.refundable_amount: expected 110, got 70; "
        "orders.ORD-1001.refunded_amount: expected 40, got 80 (+1 more)."
    )
    assert result.details["differences"] == 4
    assert result.evidence[-1].detail.startswith('refunds[1]: expected nothing, got {"amount":40')
    assert (graded.verified.status, graded.verified.verified) == ("FAILURE", True)


def test_doing_nothing_is_not_the_reference_state(tmp_path: Path) -> None:
    _, graded = _run(tmp_path, _scenario(), [LOOKUP], claim="FAILURE")
    assert _result(graded).status == "FAIL"
    assert "orders.ORD-1001.refund_count: expected 1, got 0" in _result(graded).reason


def test_listed_paths_limit_the_comparison(tmp_path: Path) -> None:
    email = {"tool": "send_email", "arguments": {"customer_id": "CUS-100", "template": "refund"}}
    scenario = _scenario(paths=["orders.ORD-1001"], ignore=None)
    _, graded = _run(tmp_path, scenario, [REFUND, email])  # the extra email is outside the listed paths
    assert _result(graded).status == "PASS"
    assert _result(graded).reason == "The final state matches the reference state (1 path(s))."
    _, whole = _run(tmp_path, _scenario(), [REFUND, email])
    assert _result(whole).status == "FAIL" and "emails[0]: expected nothing" in _result(whole).reason


def test_the_replay_has_no_faults(tmp_path: Path) -> None:
    faults = [{"target": "refund_payment", "behavior": {"type": "http_429", "retryAfterSeconds": 1}}]
    run, graded = _run(tmp_path, _scenario(faults=faults), [REFUND])  # the agent's refund is rate-limited
    assert run.expectations[0][TARGET_KEY]["state"]["orders"]["ORD-1001"]["refund_count"] == 1
    assert _result(graded).status == "FAIL"  # the agent did not get there; the target did


def test_a_reference_call_that_fails_makes_the_check_an_error_never_a_verdict(tmp_path: Path) -> None:
    too_much = {**REFUND, "arguments": {"order_id": "ORD-1001", "amount": 1000}}
    _, graded = _run(tmp_path, _scenario(calls=[too_much]), [REFUND])
    result = _result(graded)
    assert result.status == "ERROR" and result.label == "EVALUATOR_ERROR"
    assert result.reason == (
        "The reference calls could not be replayed: reference call 1 refund_payment answered 422 "
        "AMOUNT_EXCEEDS_ORDER: Refund would exceed the order total.."
    )
    assert (graded.verified.status, graded.verified.verified) == ("UNKNOWN", False)


def test_a_case_without_a_computed_target_is_an_error() -> None:
    from grading_builders import grade_one

    result = grade_one({"id": "r", "type": "reachesReferenceState", "calls": [REFUND]}, evaluator_version=SET)
    assert result.status == "ERROR"
    assert result.reason == "No reference state was computed for this case (the simulator replays the reference calls)."


def test_the_difference_report_is_bounded() -> None:
    from grading_builders import grade_one

    target_state = {"orders": {f"O{n:02d}": {"status": "open"} for n in range(20)}}
    actual = {"orders": {f"O{n:02d}": {"status": "x" * 5000} for n in range(20)}}
    expectation = {"id": "r", "type": "reachesReferenceState", "calls": [REFUND]}
    expectation[TARGET_KEY] = {"state": target_state, "calls": [], "problem": None}
    result = grade_one(expectation, final_state=actual, evaluator_version=SET)
    assert result.status == "FAIL"
    assert result.details["differences"] == 20
    assert len(result.reason) < 800 and result.reason.endswith("(+17 more).")
    assert result.reason.count("orders.O0") == 3  # the first differences, in path order
    assert len(result.evidence) == 10 and all(len(e.detail) < 300 for e in result.evidence)


def test_ignore_patterns_take_any_key_or_index() -> None:
    from grading_builders import grade_one

    target_state = {"orders": {"A": {"status": "open", "n": 1}, "B": {"status": "open"}}, "log": [{"id": 1}]}
    actual = {"orders": {"A": {"status": "shut", "n": 1}, "B": {"status": "gone"}}, "log": [{"id": 9}]}
    expectation = {
        "id": "r",
        "type": "reachesReferenceState",
        "calls": [REFUND],
        "ignore": ["orders.*.status", "log[*].id"],
    }
    expectation[TARGET_KEY] = {"state": target_state, "calls": [], "problem": None}
    assert grade_one(expectation, final_state=actual, evaluator_version=SET).status == "PASS"
    partly = {**expectation, "ignore": ["orders.A.status"]}
    assert "orders.B.status" in grade_one(partly, final_state=actual, evaluator_version=SET).reason
    bad = {**expectation, "ignore": ["orders..x"]}
    assert grade_one(bad, final_state=actual, evaluator_version=SET).status == "ERROR"


def test_the_scenario_schema_requires_calls_and_refuses_a_hand_written_target(tmp_path: Path) -> None:
    path = tmp_path / "s.yaml"
    doc = copy.deepcopy(SCENARIO)
    del doc["spec"]["expectations"][0]["calls"]
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(DefinitionError, match="'calls' is a required property"):
        load_scenario(path)
    doc["spec"]["expectations"][0].update(calls=[REFUND], target={"state": {}})
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    with pytest.raises(DefinitionError, match="unknown property 'target'"):
        load_scenario(path)


def test_the_target_is_the_same_on_every_run(tmp_path: Path) -> None:
    first, _ = _run(tmp_path, _scenario(), [REFUND])
    second, _ = _run(tmp_path, _scenario(), [LOOKUP, REFUND])
    assert first.expectations == second.expectations  # depends on the scenario, twin and seed, never the agent


def test_the_documented_example_is_a_valid_scenario(tmp_path: Path) -> None:
    path = tmp_path / "example.yaml"
    path.write_text(
        textwrap.dedent(
            """\
            apiVersion: agenttwin.dev/v1
            kind: Scenario
            metadata: {name: example, severity: high}
            spec:
              input: {message: Refund 40 USD on ORD-1001., context: {tenant: demo-co}}
              expectations:
                - type: reachesReferenceState
                  calls:
                    - {tool: refund_payment, arguments: {order_id: ORD-1001, amount: 40}}
                  paths: [orders.ORD-1001, refunds]
                  ignore: ["refunds[*].refund_id"]
            """
        ),
        encoding="utf-8",
    )
    assert load_scenario(path, load_twin(TWIN_FILE)).expectations[0]["paths"] == ["orders.ORD-1001", "refunds"]


def test_an_earlier_evaluator_set_does_not_grade_it() -> None:
    from grading_builders import grade_one

    expectation = {"id": "r", "type": "reachesReferenceState", "calls": [REFUND]}
    expectation[TARGET_KEY] = {"state": {}, "calls": [], "problem": None}
    result = grade_one(expectation, evaluator_version="1.2.0")
    assert (result.status, result.reason) == (
        "ERROR",
        "reachesReferenceState is not graded by evaluator set 1.2.0 (it came with 1.3.0).",
    )


def test_a_reference_call_to_a_tool_the_twin_lacks_is_refused_at_load() -> None:
    typo = {**REFUND, "tool": "refund_paymnet"}
    with pytest.raises(
        DefinitionError, match=r"spec\.expectations\[0\]\.calls\[0\]\.tool.*'refund_paymnet' is not a tool"
    ):
        _scenario(calls=[typo])
