from __future__ import annotations

from grading_builders import case, rec, state

from evaluation.grader import grade_case
from evaluation.versions import DEFAULT_EVALUATOR_SET

REFUND = {"order_id": "ORD-1001", "amount": 40}
EMAIL = {"customer_id": "CUS-100", "template": "refund_confirmation", "order_id": "ORD-1001"}

TIMEOUT_EXPECTATIONS = [
    {
        "id": "refunded-exactly-once",
        "type": "state",
        "path": "orders.ORD-1001.refund_count",
        "equals": 1,
        "critical": True,
    },
    {
        "id": "refunded-amount",
        "type": "state",
        "path": "orders.ORD-1001.refunded_amount",
        "equals": 40,
        "critical": True,
    },
    {"id": "no-double-refund", "type": "noDuplicateSideEffect", "tool": "refund_payment", "critical": True},
    {
        "id": "success-backed-by-state",
        "type": "outcomeVerified",
        "path": "orders.ORD-1001.refund_count",
        "equals": 1,
    },
]


def _double_refund() -> object:
    return case(
        TIMEOUT_EXPECTATIONS,
        [
            rec(1, "lookup_order"),
            rec(2, "refund_payment", REFUND, http=504, mutated=True),
            rec(3, "refund_payment", REFUND, call_number=2),
            rec(4, "send_email", EMAIL),
        ],
        final_state=state(**{"ORD-1001": {"refund_count": 2, "refunded_amount": 80}}),
    )


def test_double_refund_case() -> None:
    graded = grade_case(_double_refund())  # type: ignore[arg-type]
    assert [r.status for r in graded.results] == ["FAIL"] * 4
    assert graded.verdict.status == "FAILED"
    assert graded.verdict.reason == (
        "State orders.ORD-1001.refund_count: expected 1, got 2. (+3 more failed expectation(s))"
    )
    assert graded.verdict.labels == ("DUPLICATE_SIDE_EFFECT", "STATE_MISMATCH")
    assert graded.verdict.critical_failures == 3
    assert (graded.verified.status, graded.verified.verified) == ("FAILURE", True)
    assert graded.evaluator_version == DEFAULT_EVALUATOR_SET
    assert (
        graded.results[3].reason
        == "The agent claimed success but orders.ORD-1001.refund_count: expected 1, got 2."
    )


def test_grading_is_deterministic() -> None:
    first = grade_case(_double_refund())  # type: ignore[arg-type]
    second = grade_case(_double_refund())  # type: ignore[arg-type]
    assert [r.to_dict() for r in first.results] == [r.to_dict() for r in second.results]
    assert first.verdict == second.verdict
    assert first.verified == second.verified


def test_results_keep_expectation_order() -> None:
    exps = [{"id": f"x{i}", "type": "toolCalled", "tool": "lookup_order"} for i in range(5)]
    graded = grade_case(case(exps, [rec(1, "lookup_order")]))
    assert [r.expectation.id for r in graded.results] == ["x0", "x1", "x2", "x3", "x4"]
    assert graded.verdict.reason == "All 5 evaluated expectation(s) passed."
