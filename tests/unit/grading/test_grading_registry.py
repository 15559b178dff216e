from __future__ import annotations

import pytest
from grading_builders import case, grade_one, never_ran, rec

from evaluation.case import AgentFinding
from evaluation.expectations import EVALUATORS
from evaluation.grader import grade_case, grade_results
from evaluation.versions import ALL_EXPECTATION_TYPES, UnknownEvaluatorSetError


def test_every_type_has_an_evaluator() -> None:
    assert set(EVALUATORS) == set(ALL_EXPECTATION_TYPES)


@pytest.mark.parametrize(
    "broken",
    [
        {"type": "frobnicate"},
        {"type": "state"},  # path missing
        {"type": "state", "path": "orders..x"},  # bad path
        {"type": "state", "path": "a", "gte": "1"},  # wrong comparator type
        {"type": "state", "path": "a", "matches": "["},  # invalid regex
        {"type": "toolCalled", "tool": "x", "mn": 1},  # typo'd field
        {"type": "toolCalled", "tool": "x", "critical": "yes"},
        {"type": "toolArgs", "tool": "x", "path": "a", "call": 0},
        {"type": "maxRetries", "value": True},
        {"type": "outputRegex", "pattern": 5},
        {},
    ],
)
def test_broken_expectations_are_errors(broken: dict[str, object]) -> None:
    res = grade_one(broken)
    assert (res.status, res.label, res.score) == ("ERROR", "EVALUATOR_ERROR", None)


def test_a_regex_that_times_out_is_an_error_not_a_failure() -> None:
    res = grade_one({"type": "outputRegex", "pattern": r"^(a|aa)+$"}, output="a" * 60 + "!")
    assert (res.status, res.label, res.score) == ("ERROR", "EVALUATOR_ERROR", None)
    assert "took longer than 0.5 s" in res.reason
    res = grade_one({"type": "state", "path": "orders.ORD-1001.id", "matches": r"^(O|OO)+$"},
                    final_state={"orders": {"ORD-1001": {"id": "O" * 60 + "!"}}})  # fmt: skip
    assert (res.status, res.label) == ("ERROR", "EVALUATOR_ERROR")
    assert "took longer than 0.5 s" in res.reason


def test_unknown_type_evaluator_and_default_ids() -> None:
    results = grade_results(case([{"type": "frobnicate"}, {"type": "toolCalled", "tool": "x"}]))
    assert [r.expectation.id for r in results] == ["e1", "e2"]
    assert (results[0].evaluator, results[0].expectation.type) == ("unknown", "frobnicate")
    assert results[0].reason == "Unknown expectation type 'frobnicate'."


def test_non_object_expectation_is_an_error() -> None:
    results = grade_results(case(["state"]))  # type: ignore[list-item]
    assert (results[0].status, results[0].label) == ("ERROR", "EVALUATOR_ERROR")


def test_an_evaluator_exception_does_not_stop_the_others(monkeypatch: pytest.MonkeyPatch) -> None:
    import evaluation.expectations.registry as registry

    def explode(*_: object) -> object:
        raise RuntimeError("boom")

    patched = dict(registry.EVALUATORS)
    patched["toolCalled"] = explode  # type: ignore[assignment]
    monkeypatch.setattr(registry, "EVALUATORS", patched)
    graded = grade_case(
        case(
            [
                {"id": "a", "type": "toolCalled", "tool": "lookup_order"},
                {"id": "b", "type": "toolNotCalled", "tool": "send_email"},
            ],
            [rec(1, "lookup_order")],
        )
    )
    assert [(r.expectation.id, r.status) for r in graded.results] == [("a", "ERROR"), ("b", "PASS")]
    assert graded.results[0].reason == "The evaluator failed: RuntimeError: boom"
    assert graded.verdict.status == "ERRORED"


def test_unknown_evaluator_set_raises() -> None:
    with pytest.raises(UnknownEvaluatorSetError):
        grade_case(case([{"type": "toolCalled", "tool": "x"}]), evaluator_version="9.9.9")


@pytest.mark.parametrize("label", ["AGENT_TIMEOUT", "AGENT_ERROR", "CALL_LIMIT_EXCEEDED"])
def test_agent_failures_fail_critically(label: str) -> None:
    graded = grade_case(
        never_ran(
            AgentFinding(label, "The agent did not answer within 120 s."),
            [{"type": "toolCalled", "tool": "x"}],
        )
    )
    first = graded.results[0]
    assert (first.status, first.label, first.evaluator) == ("FAIL", label, "simulation.agent_run")
    assert (first.expectation.id, first.expectation.type, first.expectation.critical) == (
        "agent-run",
        "agentRun",
        True,
    )
    # the agent was asked and gave no readable reply: what the twin recorded is graded all the same
    assert graded.results[1].status == "FAIL"
    assert graded.verdict.status == "FAILED"
    assert graded.verdict.reason == "The agent did not answer within 120 s. (+1 more failed expectation(s))"
    assert graded.verdict.critical_failures == 1
    assert label in graded.verdict.labels


@pytest.mark.parametrize(
    "label", ["AGENT_UNREACHABLE", "AGENT_AUTH", "AGENT_VERSION_UNAVAILABLE", "AGENT_REJECTED_REQUEST"]
)
def test_agent_not_reachable_is_an_error(label: str) -> None:
    graded = grade_case(
        never_ran(AgentFinding(label, "Could not reach the agent."), [{"type": "toolCalled", "tool": "x"}])
    )
    assert [r.status for r in graded.results] == ["ERROR", "SKIPPED"]
    assert graded.results[1].evaluator == "skipped"
    assert graded.results[1].reason == f"Not evaluated: the agent never ran ({label})."
    assert graded.verdict.status == "ERRORED"
    assert graded.verdict.labels == ()
    assert (graded.verified.status, graded.verified.verified) == ("UNKNOWN", False)


def test_finding_on_an_agent_that_ran_keeps_the_expectations() -> None:
    ran = case(
        [{"type": "toolCalled", "tool": "lookup_order"}],
        [rec(1, "lookup_order")],
        agent_finding=AgentFinding("CALL_LIMIT_EXCEEDED", "The case hit its call limit."),
    )
    results = grade_results(ran)
    assert [(r.expectation.id, r.status) for r in results] == [("agent-run", "FAIL"), ("e1", "PASS")]
