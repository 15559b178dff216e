"""compare_case: one scenario's two stored cases, pinning checks and the case document."""

from __future__ import annotations

import pytest
from comparison_builders import (
    call,
    case_run,
    graded,
    result,
    timeout_baseline_records,
    timeout_candidate_records,
)

from evaluation.comparison import ComparisonError, compare_case
from evaluation.results import FAIL, PASS
from twin_engine.canonical import canonical_json

PASSING = [result("refunded-exactly-once", PASS, critical=True), result("success-backed-by-state", PASS)]
FAILING = [
    result(
        "refunded-exactly-once",
        FAIL,
        critical=True,
        label="STATE_MISMATCH",
        reason="State orders.ORD-1001.refund_count: expected 1, got 2.",
    ),
    result("success-backed-by-state", FAIL, label="STATE_MISMATCH"),
]
B_STATE = {"orders": {"ORD-1001": {"refund_count": 1, "refunded_amount": 40}}}
C_STATE = {"orders": {"ORD-1001": {"refund_count": 2, "refunded_amount": 80}}}


def timeout_pair(**candidate_kw: object):  # type: ignore[no-untyped-def]
    b = graded(case_run(timeout_baseline_records(), final_state=B_STATE), PASSING)
    c = graded(
        case_run(
            timeout_candidate_records(),
            side="candidate",
            agent="demo:1.3.0",
            final_state=C_STATE,
            **candidate_kw,
        ),
        FAILING,
    )  # type: ignore[arg-type]
    return b, c


def test_timeout_case_end_to_end() -> None:
    comparison = compare_case(*timeout_pair())
    d = comparison.to_dict()
    assert d["scenario"] == "refund-timeout-after-mutation"
    assert d["classification"] == "NEW_CRITICAL_FAILURE"
    assert d["reason"] == (
        "New critical failure refunded-exactly-once: State orders.ORD-1001.refund_count: expected 1, got 2."
    )
    assert d["divergence"]["index"] == 2
    assert d["divergence"]["kind"] == "tool"
    assert d["candidate"]["labels"] == ["STATE_MISMATCH"]
    assert d["candidate"]["tools"] == ["lookup_order", "refund_payment", "send_email"]
    assert d["baseline"]["tools"] == ["get_refund_policy", "lookup_order", "refund_payment", "send_email"]
    assert d["candidate"]["metrics"]["retries"] == 1
    assert d["candidate"]["metrics"]["duplicate_side_effects"] == 1
    assert d["baseline"]["metrics"]["tool_calls"] == 5
    assert d["candidate"]["metrics"]["tool_calls"] == 4
    assert d["state_changes"][0] == {
        "path": "orders.ORD-1001.refund_count",
        "change": "changed",
        "baseline": 1,
        "candidate": 2,
    }
    assert d["tool_selection"] == {"added": [], "removed": ["get_refund_policy"]}
    assert d["risk"] == "WRITE_IRREVERSIBLE"
    assert [e["change"] for e in d["expectations"]] == ["broken", "broken"]
    assert set(d["trajectories"]) == {"baseline", "candidate", "alignment"}
    assert d["trajectories"]["candidate"][1]["label"] == "refund_payment(amount=40, order_id=ORD-1001)"
    assert comparison.expectation_ids("broken", critical=True) == ["refunded-exactly-once"]


@pytest.mark.parametrize(
    ("field", "value", "words"),
    [
        ("seed", 8, "case seed 7 (baseline) vs 8 (candidate)"),
        ("scenario_hash", "c" * 64, "scenario hash aaaaaaaaaaaa (baseline) vs cccccccccccc (candidate)"),
        ("twin_hash", "d" * 64, "twin hash bbbbbbbbbbbb (baseline) vs dddddddddddd (candidate)"),
        (
            "scenario",
            "refund-happy-path",
            "scenario refund-timeout-after-mutation (baseline) vs refund-happy-path (candidate)",
        ),
    ],
)
def test_cases_that_did_not_run_the_same_pinned_case_are_not_compared(
    field: str, value: object, words: str
) -> None:
    comparison = compare_case(*timeout_pair(**{field: value}))
    assert comparison.classification == "INCOMPLETE"
    assert comparison.reason == f"Not comparable: the two sides did not run the same pinned case ({words})."


def test_identical_results_with_different_seeds_are_still_refused() -> None:
    b = graded(case_run([call(1, "lookup_order", {"order_id": "O"})], seed=1), PASSING)
    c = graded(case_run([call(1, "lookup_order", {"order_id": "O"})], seed=2, side="candidate"), PASSING)
    assert compare_case(b, b).classification == "UNCHANGED"
    assert compare_case(b, c).classification == "INCOMPLETE"


def test_a_missing_side() -> None:
    b, _ = timeout_pair()
    comparison = compare_case(b, None)
    assert comparison.classification == "INCOMPLETE"
    assert (
        comparison.reason
        == "The candidate's case ended MISSING: No candidate case was stored for this scenario."
    )
    assert comparison.divergence is None
    assert comparison.to_dict()["candidate"]["metrics"] is None
    assert {m.change for m in comparison.metrics} == {"unknown"}
    assert compare_case(None, b).reason.startswith("The baseline's case ended MISSING")
    with pytest.raises(ComparisonError):
        compare_case(None, None)


def test_risk_is_the_riskiest_tool_either_side_touched() -> None:
    admin = graded(
        case_run(
            [
                call(
                    1,
                    "export_customer_data",
                    {"customer_id": "CUS-100"},
                    status="denied",
                    policy_violation="ADMIN_ONLY",
                )
            ]
        ),
        PASSING,
    )
    quiet = graded(case_run([]), PASSING)
    assert compare_case(quiet, admin).risk == "ADMIN"
    assert compare_case(quiet, quiet).risk == "none"


def test_the_case_document_is_byte_identical_for_the_same_inputs() -> None:
    first = canonical_json(compare_case(*timeout_pair()).to_dict())
    second = canonical_json(compare_case(*timeout_pair()).to_dict())
    assert first == second


def test_wall_clock_lives_only_under_timings() -> None:
    a = compare_case(*timeout_pair(timings={"wall_ms": 1.0})).to_dict()
    b = compare_case(*timeout_pair(timings={"wall_ms": 2.0})).to_dict()
    assert a != b
    a["candidate"].pop("timings")
    b["candidate"].pop("timings")
    assert a == b
