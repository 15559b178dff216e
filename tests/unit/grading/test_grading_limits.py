from __future__ import annotations

from grading_builders import grade_one, rec

REFUND = {"order_id": "ORD-1001", "amount": 40}
EMAIL = {"customer_id": "CUS-100", "template": "refund_confirmation"}

# 1.2.4 on the timeout story: the refund times out after applying, the order is re-read, confirmed.
VERIFIED = [
    rec(1, "lookup_order"),
    rec(2, "get_refund_policy"),
    rec(3, "refund_payment", REFUND, http=504, mutated=True),
    rec(4, "lookup_order", call_number=2),
    rec(5, "send_email", EMAIL),
]
# 1.3.0 on the timeout story: blind retry without a key.
BLIND = [
    rec(1, "lookup_order"),
    rec(2, "refund_payment", REFUND, http=504, mutated=True),
    rec(3, "refund_payment", REFUND, call_number=2),
    rec(4, "send_email", EMAIL),
]
NO_RETRIES = {"id": "no-retries", "type": "maxRetries", "value": 0}


def test_max_retries_shared_rule_ignores_the_confirming_reread() -> None:
    res = grade_one(NO_RETRIES, VERIFIED, "1.1.0")
    assert (res.status, res.evaluator, res.evaluator_version) == ("PASS", "expectation.maxRetries", "1.1.0")
    assert res.details["retries"] == 0


def test_max_retries_legacy_counts_the_confirming_reread() -> None:
    res = grade_one(NO_RETRIES, VERIFIED, "1.0.0")
    assert (res.status, res.label, res.evaluator_version) == ("FAIL", "RETRY_LIMIT", "1.0.0")
    assert res.reason == "1 retry; at most 0 allowed."
    assert res.evidence[0].detail == "#4 lookup_order → HTTP 200. Repeats #1 with the same arguments."


def test_max_retries_blind_retry_fails_under_both_sets() -> None:
    for version in ("1.0.0", "1.1.0"):
        res = grade_one(NO_RETRIES, BLIND, version)
        assert (res.status, res.label) == ("FAIL", "RETRY_LIMIT"), version
    shared = grade_one(NO_RETRIES, BLIND, "1.1.0")
    assert shared.evidence[0].detail == "#3 refund_payment → HTTP 200. Retries #2, which ended timeout."
    assert grade_one({**NO_RETRIES, "value": 1}, BLIND).status == "PASS"
    assert grade_one({**NO_RETRIES, "tool": "lookup_order"}, BLIND).status == "PASS"


def test_max_tool_calls() -> None:
    calls = [rec(i, "refund_payment", REFUND, http=429, call_number=i) for i in (1, 2, 3)]
    exp = {"type": "maxToolCalls", "tool": "refund_payment", "value": 3}
    ok = grade_one(exp, calls)
    assert (ok.status, ok.reason) == ("PASS", "3 calls of refund_payment; at most 3 allowed.")
    bad = grade_one({**exp, "value": 2}, calls)
    assert (bad.status, bad.label) == ("FAIL", "TOO_MANY_CALLS")
    assert grade_one({"type": "maxToolCalls", "value": 2}, calls).status == "FAIL"
    assert grade_one({"type": "maxToolCalls", "value": -1}, calls).status == "ERROR"
    assert grade_one({"type": "maxToolCalls", "value": "3"}, calls).status == "ERROR"


def test_max_steps_reported_or_derived() -> None:
    calls = [rec(1, "lookup_order"), rec(2, "get_refund_policy")]
    assert grade_one({"type": "maxSteps", "value": 3}, calls).status == "PASS"  # 2 calls + 1
    bad = grade_one({"type": "maxSteps", "value": 2}, calls)
    assert (bad.status, bad.label) == ("FAIL", "STEP_LIMIT")
    assert grade_one({"type": "maxSteps", "value": 5}, calls, agent_steps=6).status == "FAIL"


def test_latency_and_cost_skipped_when_unknown() -> None:
    assert grade_one({"type": "maxLatencyMs", "value": 100}).status == "SKIPPED"
    assert grade_one({"type": "maxCostUsd", "value": 1}).status == "SKIPPED"
    assert grade_one({"type": "maxLatencyMs", "value": 100}, latency_ms=100.0).status == "PASS"
    slow = grade_one({"type": "maxLatencyMs", "value": 100}, latency_ms=1500.0)
    assert (slow.status, slow.label) == ("FAIL", "LATENCY_LIMIT")
    dear = grade_one({"type": "maxCostUsd", "value": 0.5}, cost_usd=0.75)
    assert (dear.status, dear.label, dear.reason) == (
        "FAIL",
        "COST_LIMIT",
        "The case cost 0.75 USD; at most 0.5 USD allowed.",
    )
    assert grade_one({"type": "maxCostUsd", "value": 0.5}, cost_usd=0.5).status == "PASS"
