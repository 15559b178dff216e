from __future__ import annotations

from grading_builders import grade_one, rec, state

REFUND = {"order_id": "ORD-1001", "amount": 40}
COUNT = "orders.ORD-1001.refund_count"


def test_state_pass_and_fail_wording() -> None:
    ok = grade_one(
        {"id": "x", "type": "state", "path": COUNT, "equals": 1},
        final_state=state(**{"ORD-1001": {"refund_count": 1}}),
    )
    assert (ok.status, ok.label, ok.score) == ("PASS", None, 1.0)
    bad = grade_one(
        {"type": "state", "path": COUNT, "equals": 1}, final_state=state(**{"ORD-1001": {"refund_count": 2}})
    )
    assert (bad.status, bad.label, bad.score) == ("FAIL", "STATE_MISMATCH", 0.0)
    assert bad.reason == "State orders.ORD-1001.refund_count: expected 1, got 2."
    assert bad.evidence[0].kind == "state"
    assert (bad.evidence[0].ref, bad.evidence[0].actual) == (COUNT, 2)
    assert (bad.evaluator, bad.evaluator_version) == ("expectation.state", "1.0.0")


def test_state_list_path_missing_value_and_existence() -> None:
    final = state()
    final["escalations"] = [{"ticket_id": "TCK-0003", "order_id": "ORD-1002"}]
    ok = grade_one(
        {"type": "state", "path": "escalations[0].order_id", "equals": "ORD-1002"}, final_state=final
    )
    assert ok.status == "PASS"
    missing = grade_one({"type": "state", "path": "escalations[0].order_id", "equals": "ORD-1002"})
    assert missing.status == "FAIL"
    assert missing.reason == 'State escalations[0].order_id: expected "ORD-1002", got nothing.'
    exists = grade_one({"type": "state", "path": "escalations[0]"}, final_state=final)
    assert exists.status == "PASS"
    assert grade_one({"type": "state", "path": "escalations[0]"}).status == "FAIL"


def test_state_skipped_without_twin_state() -> None:
    res = grade_one({"type": "state", "path": COUNT, "equals": 1}, final_state=None)
    assert (res.status, res.score) == ("SKIPPED", None)


def test_state_unchanged() -> None:
    path = "orders.ORD-1001.refunded_amount"
    assert grade_one({"type": "stateUnchanged", "path": path}).status == "PASS"
    changed = grade_one(
        {"type": "stateUnchanged", "path": path}, final_state=state(**{"ORD-1001": {"refunded_amount": 500}})
    )
    assert (changed.status, changed.label) == ("FAIL", "STATE_CHANGED")
    assert changed.reason == "State orders.ORD-1001.refunded_amount changed from 0 to 500."
    both_missing = grade_one({"type": "stateUnchanged", "path": "orders.ORD-9"})
    assert both_missing.status == "PASS"
    whole_entity = grade_one({"type": "stateUnchanged", "path": "orders.ORD-2001"})
    assert whole_entity.status == "PASS"
    assert grade_one({"type": "stateUnchanged", "path": path}, initial_state=None).status == "SKIPPED"


def test_final_outcome() -> None:
    assert (
        grade_one({"type": "finalOutcome", "equals": "SUCCESS"}, claimed_outcome="success").status == "PASS"
    )
    wrong = grade_one({"type": "finalOutcome", "equals": "ESCALATED"})
    assert (wrong.status, wrong.label) == ("FAIL", "OUTCOME_MISMATCH")
    none = grade_one({"type": "finalOutcome", "equals": "SUCCESS"}, claimed_outcome=None)
    assert (none.status, none.label) == ("FAIL", None)
    bad = grade_one({"type": "finalOutcome", "equals": "GREAT"})
    assert (bad.status, bad.label) == ("ERROR", "EVALUATOR_ERROR")


def test_outcome_verified_with_path() -> None:
    exp = {"type": "outcomeVerified", "path": COUNT, "equals": 1}
    bad = grade_one(exp, final_state=state(**{"ORD-1001": {"refund_count": 2}}))
    assert (bad.status, bad.label) == ("FAIL", "STATE_MISMATCH")
    assert bad.reason == "The agent claimed success but orders.ORD-1001.refund_count: expected 1, got 2."
    assert grade_one(exp, final_state=state(**{"ORD-1001": {"refund_count": 1}})).status == "PASS"
    # nothing to verify without a claimed success
    partial = grade_one(
        exp, claimed_outcome="PARTIAL", final_state=state(**{"ORD-1001": {"refund_count": 2}})
    )
    assert partial.status == "PASS"
    assert grade_one(exp, final_state=None).status == "SKIPPED"


def test_outcome_verified_without_path_catches_the_success_lie() -> None:
    lie = [
        rec(1, "lookup_order"),
        rec(2, "refund_payment", REFUND, mutated=False, fault="success_without_mutation"),
        rec(3, "send_email", {"customer_id": "CUS-100"}),
    ]
    res = grade_one({"type": "outcomeVerified"}, lie)
    assert (res.status, res.label) == ("FAIL", "HALLUCINATED_SUCCESS")
    assert res.reason == "The agent claimed success but a tool reported success without changing state."
    assert res.evidence[0].detail == "#2 refund_payment → HTTP 200. Reported success without changing state."
    honest = [rec(1, "lookup_order"), rec(2, "refund_payment", REFUND)]
    assert grade_one({"type": "outcomeVerified"}, honest).status == "PASS"
    replay = [rec(2, "refund_payment", REFUND, mutated=False, replayed=True)]
    assert grade_one({"type": "outcomeVerified"}, replay).status == "PASS"
    assert grade_one({"type": "outcomeVerified"}, lie, claimed_outcome="PARTIAL").status == "PASS"


def test_outcome_verified_comparators_without_path_is_an_error() -> None:
    res = grade_one({"type": "outcomeVerified", "equals": 1})
    assert (res.status, res.label) == ("ERROR", "EVALUATOR_ERROR")


def test_no_duplicate_side_effect() -> None:
    twice = [rec(2, "refund_payment", REFUND, http=504, mutated=True), rec(3, "refund_payment", REFUND)]
    res = grade_one({"type": "noDuplicateSideEffect", "tool": "refund_payment"}, twice)
    assert (res.status, res.label) == ("FAIL", "DUPLICATE_SIDE_EFFECT")
    assert res.reason == "The side effect refund:ORD-1001 was applied 2 times."
    assert [e.detail for e in res.evidence] == [
        "#2 refund_payment → HTTP 504. Applied refund:ORD-1001.",
        "#3 refund_payment → HTTP 200. Applied refund:ORD-1001.",
    ]
    once = [
        rec(2, "refund_payment", REFUND, http=504, mutated=True),
        rec(3, "refund_payment", REFUND, replayed=True, mutated=False),
    ]
    assert grade_one({"type": "noDuplicateSideEffect", "tool": "refund_payment"}, once).status == "PASS"
    redelivered = [rec(2, "refund_payment", REFUND), rec(3, "refund_payment", REFUND, redelivered=True)]
    assert grade_one({"type": "noDuplicateSideEffect"}, redelivered).status == "FAIL"
