"""Evidence does not depend on the reply: an agent that refunds twice and then answers unreadably, or not at
all, is graded on the twin's records and state like any other - the double refund is a critical failure."""

from __future__ import annotations

import dataclasses
import json
import urllib.error
import urllib.request
from typing import Any

import pytest

from agenttwin.demo import DEMO_DIR, TWIN_FILE
from evaluation.comparison import compare_case
from evaluation.grader import grade_case
from evaluation.results import FAIL, PASS, SKIPPED, GradedCase
from producers.agents.http_agent import HttpAgent
from producers.simulator import simulate_case
from twin_engine.documents import Scenario, load_scenario, load_twin
from twin_engine.twin import Twin

from .test_http_agents_adapter import GOOD_REPLY, stub  # noqa: F401 - the stub fixture

REFUND = b'{"order_id": "ORD-1001", "amount": 40, "reason": "damaged"}'


def _call(body: dict[str, Any], tool: str, arguments: bytes) -> None:
    request = urllib.request.Request(
        body["tools_base_url"] + f"/tools/{tool}", data=arguments, headers=body["tool_headers"], method="POST"
    )
    try:
        urllib.request.urlopen(request, timeout=10).close()
    except urllib.error.HTTPError as answered:  # the first refund "times out" (504) after it took effect
        answered.close()


def _scenario(timeout_s: float | None = None) -> Scenario:
    scenario = load_scenario(DEMO_DIR / "scenarios" / "refund-timeout-after-mutation.yaml")
    if timeout_s is None:
        return scenario
    raw = {**scenario.raw, "spec": {**scenario.raw["spec"], "timeoutSeconds": timeout_s}}
    return dataclasses.replace(scenario, raw=raw, timeout_seconds=timeout_s)


def _run(url: str, scenario: Scenario, twin: Twin) -> GradedCase:
    agent = HttpAgent(url, timeout_s=60)
    try:
        case = simulate_case(agent, scenario, twin, case_seed=7, case_id="run:case", agent_spec=url)
    finally:
        agent.close()
    return grade_case(case)


UNREADABLE = {
    "nested too deep": b"[" * 200_000 + b"]" * 200_000,
    "a 5 MiB body": b'{"output": "' + b"x" * (5 << 20) + b'"}',
    "a JSON array": json.dumps([GOOD_REPLY]).encode(),
    "not JSON": b"<html>refunded</html>",
}


@pytest.mark.parametrize("answer", [*UNREADABLE, "silence"])
def test_a_double_refund_is_graded_whatever_the_agent_answers(stub: Any, answer: str) -> None:  # noqa: F811
    twin = load_twin(TWIN_FILE)

    def refund_twice_then(body: dict[str, Any]) -> tuple[int, bytes]:
        _call(body, "refund_payment", REFUND)
        _call(body, "refund_payment", REFUND)  # a blind retry: the money moves twice
        if answer == "silence":
            server.release.wait(30)  # never answers within the scenario's timeoutSeconds
            return 200, json.dumps(GOOD_REPLY).encode()
        return 200, UNREADABLE[answer]

    server = stub(refund_twice_then)
    scenario = _scenario(timeout_s=1.5 if answer == "silence" else None)
    graded = _run(server.url, scenario, twin)
    assert graded.case.final_state["orders"]["ORD-1001"]["refund_count"] == 2

    by_id = {r.expectation.id: r for r in graded.results}
    assert by_id["agent-run"].status == FAIL
    assert by_id["agent-run"].label == ("AGENT_TIMEOUT" if answer == "silence" else "AGENT_ERROR")
    for evidence in ("refunded-exactly-once", "refunded-amount", "no-double-refund"):
        assert by_id[evidence].status == FAIL, (evidence, by_id[evidence].reason)  # graded, not SKIPPED
    assert by_id["success-backed-by-state"].status == PASS  # no reply: no claim of success to check
    assert all(r.status != SKIPPED for r in graded.results)
    assert graded.verdict.status == "FAILED"
    assert (graded.verified.status, graded.verified.verified, graded.verified.source) == (
        "FAILURE",
        True,
        "tool_twin_state",
    )


def test_against_a_baseline_that_refunded_once_it_is_a_new_critical_failure(stub: Any) -> None:  # noqa: F811
    twin = load_twin(TWIN_FILE)

    def refund_once(body: dict[str, Any]) -> tuple[int, bytes]:
        _call(body, "refund_payment", REFUND)
        _call(body, "lookup_order", b'{"order_id": "ORD-1001"}')  # checks instead of retrying blindly
        return 200, json.dumps({**GOOD_REPLY, "tool_calls": []}).encode()

    def refund_twice(body: dict[str, Any]) -> tuple[int, bytes]:
        _call(body, "refund_payment", REFUND)
        _call(body, "refund_payment", REFUND)
        return 200, b"[" * 200_000 + b"]" * 200_000

    baseline = _run(stub(refund_once).url, _scenario(), twin)
    candidate = _run(stub(refund_twice).url, _scenario(), twin)
    assert baseline.verdict.status == "PASSED", baseline.verdict.reason
    comparison = compare_case(baseline, candidate)
    assert comparison.classification == "NEW_CRITICAL_FAILURE", comparison.reason
    changes = {change.id: change.change for change in comparison.expectations}
    # broken by the twin's evidence, not only by the unreadable reply's agent-run finding
    for evidence in ("refunded-exactly-once", "refunded-amount", "no-double-refund"):
        assert changes[evidence] == "broken", (evidence, changes)
    assert candidate.verified.status == "FAILURE"


def test_an_agent_that_could_not_be_asked_has_its_expectations_skipped(stub: Any) -> None:  # noqa: F811
    twin = load_twin(TWIN_FILE)
    server = stub(lambda body: (401, b'{"error": {"code": "UNAUTHORIZED", "message": "no"}}'))
    graded = _run(server.url, _scenario(), twin)
    assert graded.case.records == ()  # it did nothing: there is no evidence to grade
    assert {r.status for r in graded.results if r.expectation.id != "agent-run"} == {SKIPPED}
    assert graded.verdict.status == "ERRORED"
