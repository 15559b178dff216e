from __future__ import annotations

from grading_builders import grade_one, rec

REFUND = {"order_id": "ORD-1001", "amount": 40}
EMAIL = {"customer_id": "CUS-100", "template": "refund_confirmation"}


def test_tool_called() -> None:
    records = [rec(1, "lookup_order"), rec(2, "send_email", EMAIL)]
    ok = grade_one({"type": "toolCalled", "tool": "send_email"}, records)
    assert (ok.status, ok.reason) == ("PASS", "send_email was called 1 time.")
    missing = grade_one({"type": "toolCalled", "tool": "send_email"}, records[:1])
    assert (missing.status, missing.label, missing.reason) == ("FAIL", None, "send_email was never called.")
    too_few = grade_one({"type": "toolCalled", "tool": "send_email", "min": 2}, records)
    assert too_few.status == "FAIL"
    assert grade_one({"type": "toolCalled", "tool": "send_email", "min": 0}, []).status == "PASS"


def test_tool_called_ignores_redeliveries() -> None:
    records = [rec(2, "send_email", EMAIL, redelivered=True)]
    assert grade_one({"type": "toolCalled", "tool": "send_email"}, records).status == "FAIL"


def test_tool_not_called() -> None:
    assert (
        grade_one({"type": "toolNotCalled", "tool": "send_email"}, [rec(1, "lookup_order")]).status == "PASS"
    )
    bad = grade_one({"type": "toolNotCalled", "tool": "send_email"}, [rec(3, "send_email", EMAIL)])
    assert (bad.status, bad.label) == ("FAIL", "FORBIDDEN_CALL")
    assert bad.evidence[0].detail.startswith("#3 send_email → HTTP 200.")


def test_tool_args() -> None:
    records = [
        rec(1, "refund_payment", REFUND),
        rec(2, "refund_payment", {"order_id": "ORD-1001", "amount": 80}),
    ]
    exp = {"type": "toolArgs", "tool": "refund_payment", "path": "amount", "lte": 40}
    bad = grade_one(exp, records)
    assert (bad.status, bad.label) == ("FAIL", "ARGUMENT_MISMATCH")
    assert bad.reason == "refund_payment argument amount in #2 refund_payment: expected at most 40, got 80."
    assert (
        bad.evidence[0].detail
        == "#2 refund_payment → HTTP 200. Argument amount: expected at most 40, got 80."
    )
    assert grade_one({**exp, "call": 1}, records).status == "PASS"
    assert grade_one({**exp, "call": 3}, records).status == "FAIL"
    never = grade_one(exp, [rec(1, "lookup_order")])
    assert (never.status, never.label, never.reason) == ("FAIL", None, "refund_payment was never made.")
    key = {"type": "toolArgs", "tool": "refund_payment", "path": "idempotency_key"}
    assert grade_one(key, records).status == "FAIL"  # no comparator: the argument must exist


def test_tool_status() -> None:
    records = [rec(1, "refund_payment", REFUND, http=429), rec(2, "refund_payment", REFUND, http=200)]
    assert (
        grade_one({"type": "toolStatus", "tool": "refund_payment", "status": 200}, records).status == "PASS"
    )
    first = grade_one({"type": "toolStatus", "tool": "refund_payment", "status": 200, "call": 1}, records)
    assert (first.status, first.label) == ("FAIL", None)
    assert first.reason == "Call 1 of refund_payment returned HTTP 429; expected 200."
    assert grade_one({"type": "toolStatus", "tool": "send_email", "status": 200}, records).status == "FAIL"
    bad_status = grade_one({"type": "toolStatus", "tool": "refund_payment", "status": 99}, records)
    assert bad_status.status == "ERROR"


def test_order_violation_wording_and_evidence() -> None:
    exp = {"type": "order", "mustCall": ["get_refund_policy"], "before": ["refund_payment"]}
    skipped_check = [rec(1, "lookup_order"), rec(2, "refund_payment", REFUND), rec(3, "send_email", EMAIL)]
    bad = grade_one(exp, skipped_check)
    assert (bad.status, bad.label) == ("FAIL", "ORDER_VIOLATION")
    assert bad.reason == "refund_payment ran before get_refund_policy."
    assert [e.detail for e in bad.evidence] == [
        "#2 refund_payment → HTTP 200. Called before get_refund_policy."
    ]
    late = [*skipped_check, rec(4, "get_refund_policy")]
    assert grade_one(exp, late).status == "FAIL"


def test_order_pass_and_nothing_to_order() -> None:
    exp = {"type": "order", "mustCall": ["get_refund_policy"], "before": ["refund_payment"]}
    good = [rec(1, "lookup_order"), rec(2, "get_refund_policy"), rec(3, "refund_payment", REFUND)]
    assert grade_one(exp, good).status == "PASS"
    assert grade_one(exp, [rec(1, "lookup_order"), rec(2, "escalate_to_human")]).status == "PASS"


def test_order_invalid_lists_error() -> None:
    res = grade_one({"type": "order", "mustCall": "get_refund_policy", "before": ["refund_payment"]})
    assert (res.status, res.label) == ("ERROR", "EVALUATOR_ERROR")
