"""A tolerant reader for claims: a malformed field of an agent's reply is a finding about the claim.

Issue 12: one odd field (an integer `tool_calls[i].status`) turned every case into AGENT_ERROR - all
expectations "not evaluated", the claimed outcome dropped - although the twin recorded every call.
Only a missing or unparsable reply is AGENT_ERROR; the claimed outcome is kept whenever it is readable.
"""

from __future__ import annotations

import json
from dataclasses import replace
from typing import Any

import pytest

from evaluation.grader import grade_case
from producers.agents.claims import (
    CLAIM_MALFORMED,
    MAX_CLAIM_FINDINGS,
    MAX_CLAIMED_CALLS,
    MAX_OUTPUT_CHARS,
    read_reply,
    read_result,
)
from producers.agents.contract import AgentRequest, AgentResult, AgentRunError, ClaimedCall
from producers.agents.http_agent import result_from_reply
from producers.simulator import simulate_case
from twin_engine.documents import load_scenario, load_twin

GOOD: dict[str, Any] = {
    "output": "Done! I've refunded 40.00 USD.",
    "trace_id": "ab" * 16,
    "status": "completed",
    "agent_version": "9.9.9",
    "model": "stub-model",
    "model_kind": "llm",
    "steps": 3,
    "claimed_outcome": "success",
    "business_outcome": "REFUND_COMPLETED",
    "token_estimate": 120,
    "backoff_ms": 0,
    "tool_calls": [
        {"name": "lookup_order", "arguments": {"order_id": "ORD-1001"}, "status": "ok"},
        {
            "name": "refund_payment",
            "arguments": {"order_id": "ORD-1001", "amount": 40},
            "status": "ok",
            "error_code": None,
            "retry_after": None,
            "attempt": 1,
        },
    ],
}


def one(**entry: Any) -> dict[str, Any]:
    return {"tool_calls": [{"name": "x", **entry}]}


def call(result: AgentResult) -> ClaimedCall:
    return result.tool_calls[0]


def fields(result: AgentResult) -> list[str]:
    assert all(f.label == CLAIM_MALFORMED for f in result.findings)
    return [f.field for f in result.findings]


def test_a_well_formed_reply_has_no_finding() -> None:
    result, version = read_reply(GOOD)
    assert (result.findings, version) == ((), "9.9.9")
    assert (result.claimed_outcome, result.status, result.steps) == ("SUCCESS", "completed", 3)
    assert [c.name for c in result.tool_calls] == ["lookup_order", "refund_payment"]


def test_an_integer_call_status_is_a_finding_and_the_claim_is_kept() -> None:
    calls = [dict(GOOD["tool_calls"][0]), {**GOOD["tool_calls"][1], "status": 504}]
    result, _ = read_reply({**GOOD, "tool_calls": calls})
    assert fields(result) == ["tool_calls[1].status"]
    assert "504" in result.findings[0].message
    assert result.claimed_outcome == "SUCCESS"
    assert [(c.name, c.status) for c in result.tool_calls] == [("lookup_order", "ok"), ("refund_payment", "unknown")]


@pytest.mark.parametrize(
    ("change", "field", "check"),
    [
        ({"status": "exploded"}, "status", lambda r: r.status == "unknown"),
        ({"status": 7}, "status", lambda r: r.status == "unknown"),
        ({"steps": "three"}, "steps", lambda r: r.steps is None),
        ({"steps": -2}, "steps", lambda r: r.steps is None),
        ({"steps": True}, "steps", lambda r: r.steps is None),
        ({"token_estimate": 1.5}, "token_estimate", lambda r: r.token_estimate == 0),
        ({"backoff_ms": "soon"}, "backoff_ms", lambda r: r.backoff_ms == 0),
        ({"claimed_outcome": 1}, "claimed_outcome", lambda r: r.claimed_outcome is None),
        ({"business_outcome": ["x"]}, "business_outcome", lambda r: r.business_outcome is None),
        ({"output": {"text": "hi"}}, "output", lambda r: r.output is None),
        ({"model": 3}, "model", lambda r: r.model == ""),
        ({"tool_calls": "lots"}, "tool_calls", lambda r: r.tool_calls == ()),
        ({"tool_calls": [{"arguments": {}}]}, "tool_calls[0].name", lambda r: r.tool_calls == ()),
        ({"tool_calls": [42]}, "tool_calls[0]", lambda r: r.tool_calls == ()),
        (one(arguments=[1]), "tool_calls[0].arguments", lambda r: call(r).arguments == {}),
        (one(retry_after="1s"), "tool_calls[0].retry_after", lambda r: call(r).retry_after is None),
        (one(attempt=0), "tool_calls[0].attempt", lambda r: call(r).attempt == 1),
        (one(error_code=5), "tool_calls[0].error_code", lambda r: call(r).error_code is None),
        (one(colour="red"), "tool_calls[0].colour", lambda r: call(r).name == "x"),
        ({"surprise": True}, "surprise", lambda r: r.claimed_outcome == "SUCCESS"),
    ],
)
def test_each_malformed_field_is_named(change: dict[str, Any], field: str, check: Any) -> None:
    result, _ = read_reply({**GOOD, **change})
    assert fields(result) == [field]
    assert check(result)
    assert result.claimed_outcome in ("SUCCESS", None)


def test_missing_fields_are_findings_not_errors() -> None:
    """Only `output` is required; `status` defaults to completed and an unstated claim is inferred (and
    marked CLAIM_INFERRED, not malformed): schemas/json/agent-run-reply.v1.schema.json."""
    result, version = read_reply({"claimed_outcome": "SUCCESS"})
    assert fields(result) == ["output"]
    assert (result.output, result.status, result.claimed_outcome, version) == (None, "completed", "SUCCESS", None)
    empty, _ = read_reply({})
    assert [(f.label, f.field) for f in empty.findings] == [
        ("CLAIM_MALFORMED", "output"), ("CLAIM_INFERRED", "claimed_outcome")
    ]
    terse, _ = read_reply({"output": "Done! I've refunded 40.00 USD."})
    (inferred,) = terse.findings
    assert (inferred.label, inferred.field, terse.status) == ("CLAIM_INFERRED", "claimed_outcome", "completed")
    assert inferred.message.startswith("not stated; ")


def test_findings_are_bounded() -> None:
    many = {f"extra_{i}": i for i in range(MAX_CLAIM_FINDINGS * 5)}
    result, _ = read_reply({**GOOD, **many})
    assert len(result.findings) == MAX_CLAIM_FINDINGS + 1
    assert result.findings[-1].field == "…"
    assert str(MAX_CLAIM_FINDINGS * 4) in result.findings[-1].message


def test_reply_sizes_are_bounded() -> None:
    calls = [{"name": "lookup_order", "arguments": {}}] * (MAX_CLAIMED_CALLS + 5)
    result, _ = read_reply({**GOOD, "tool_calls": calls})
    assert len(result.tool_calls) == MAX_CLAIMED_CALLS
    assert fields(result) == ["tool_calls"]
    deep: dict[str, Any] = {}
    node = deep
    for _ in range(200):
        node["x"] = {}
        node = node["x"]
    nested, _ = read_reply({**GOOD, "tool_calls": [{"name": "x", "arguments": deep}]})
    assert fields(nested) == ["tool_calls[0].arguments"]
    json.dumps(nested.tool_calls[0].arguments)  # a bounded preview, serialisable
    huge, _ = read_reply({**GOOD, "output": "x" * (MAX_OUTPUT_CHARS + 1), "model": "m" * 5000})
    assert fields(huge) == ["output", "model"]
    assert huge.output is not None and len(huge.output) == MAX_OUTPUT_CHARS
    assert len(huge.model) <= 1024


@pytest.mark.parametrize("raw", [b"not json", b"[1, 2]", b"\xff", b"[" * 100_000 + b"]" * 100_000, b"null"])
def test_only_an_unparsable_reply_is_an_agent_error(raw: bytes) -> None:
    with pytest.raises(AgentRunError) as failed:
        result_from_reply(raw)
    assert failed.value.finding == "AGENT_ERROR"


# ------------------------------------------------------------ in process: the same reader


class Sloppy:
    """An in-process agent that makes real calls and returns an AgentResult with mistyped fields."""

    name = "sloppy"
    version = "0.0.1"
    model_kind = "deterministic-fake"

    def run(self, request: AgentRequest) -> AgentResult:
        refund = {"order_id": "ORD-1001", "amount": 40}
        request.client.call("lookup_order", {"order_id": "ORD-1001"})
        request.client.call("refund_payment", refund)
        request.client.call("refund_payment", refund)
        good = ClaimedCall(name="refund_payment", arguments=refund, status="ok")
        return AgentResult(
            output="Done! I've refunded 40.00 USD for order ORD-1001.",
            claimed_outcome="SUCCESS",
            business_outcome=404,  # type: ignore[arg-type]
            status="completed",
            tool_calls=(good, "refund twice"),  # type: ignore[arg-type]
            steps="many",  # type: ignore[arg-type]
        )


def test_an_in_process_agent_with_mistyped_fields_is_graded_on_the_twin() -> None:
    from agenttwin.demo import SCENARIO_DIR, TWIN_FILE

    twin = load_twin(TWIN_FILE)
    scenario = load_scenario(SCENARIO_DIR / "refund-timeout-after-mutation.yaml", twin=twin)
    case = simulate_case(Sloppy(), scenario, twin, case_seed=7, case_id="sloppy:x", agent_spec="python:sloppy")
    assert case.agent_finding is None
    assert [f.field for f in case.claim_findings] == ["business_outcome", "tool_calls[1]", "steps"]
    assert (case.claimed_outcome, case.agent_status, case.agent_steps) == ("SUCCESS", "completed", None)
    assert [c["name"] for c in case.claimed_calls] == ["refund_payment"]
    graded = grade_case(case)
    assert graded.verdict.status == "FAILED"
    assert graded.verified.status == "FAILURE"
    assert {r.expectation.id: r.status for r in graded.results}["refunded-exactly-once"] == "FAIL"


def test_a_well_formed_result_is_returned_as_is() -> None:
    result = AgentResult(output="hi", claimed_outcome="ESCALATED", business_outcome=None, status="completed")
    assert read_result(result) is result
    assert read_result(replace(result, claimed_outcome="success")).claimed_outcome == "success"
