"""The claim rules of evaluator set 1.2.0: hallucinated success, unsupported claims, claims kept as claimed."""

from __future__ import annotations

from typing import Any

from grading_builders import case, grade_one, rec, state

from evaluation.claims import confirms, unconfirmed_failures, writes_without_effect
from evaluation.contradiction import is_contradiction
from evaluation.grader import grade_case
from evaluation.metrics import side_metrics
from evaluation.results import GradedCase

REFUND = {"order_id": "ORD-1001", "amount": 40}
VERIFIED = {"id": "no-false-success", "type": "outcomeVerified", "critical": True}
ONLY_429S = [
    rec(1, "lookup_order"),
    rec(2, "refund_payment", REFUND, http=429, call_number=1),
    rec(3, "refund_payment", REFUND, http=429, call_number=2),
    rec(4, "refund_payment", REFUND, http=429, call_number=3),
]
REFUNDED = state(**{"ORD-1001": {"refund_count": 1, "refunded_amount": 40}})


def results(graded: GradedCase) -> dict[str, tuple[str, str | None]]:
    return {r.expectation.id: (r.status, r.label) for r in graded.results}


# ---------------------------------------------------------------- hallucinated success (outcomeVerified 1.1.0)


def test_success_claimed_after_only_429s_is_hallucinated_under_1_2_0_and_passed_before() -> None:
    new = grade_one(VERIFIED, ONLY_429S, evaluator_version="1.2.0")
    assert (new.status, new.label, new.evaluator_version) == ("FAIL", "HALLUCINATED_SUCCESS", "1.1.0")
    assert new.reason == (
        "The agent claimed success but no refund_payment call took effect "
        "(#2 refund_payment rate_limited, #3 refund_payment rate_limited, #4 refund_payment rate_limited)."
    )
    assert [e.detail for e in new.evidence] == [
        f"#{n} refund_payment → HTTP 429. Did not take effect (rate_limited)." for n in (2, 3, 4)
    ]
    old = grade_one(VERIFIED, ONLY_429S, evaluator_version="1.1.0")
    assert (old.status, old.evaluator_version) == ("PASS", "1.0.0")


def test_the_hallucinated_success_is_a_verified_failure_and_a_contradiction() -> None:
    graded = grade_case(case([VERIFIED], ONLY_429S), evaluator_version="1.2.0")
    assert (graded.verified.status, graded.verified.verified) == ("FAILURE", True)
    assert is_contradiction(graded.verified.claimed_status, graded.verified.status, graded.verified.verified)
    before = grade_case(case([VERIFIED], ONLY_429S), evaluator_version="1.1.0")
    assert not is_contradiction(before.verified.claimed_status, before.verified.status, before.verified.verified)


def test_no_write_made_and_all_refused_are_hallucinated_too() -> None:
    none = grade_one(VERIFIED, [rec(1, "lookup_order")], evaluator_version="1.2.0")
    assert (none.status, none.reason) == ("FAIL", "The agent claimed success but made no write.")
    named = grade_one({**VERIFIED, "tool": "refund_payment"}, [rec(1, "lookup_order")], evaluator_version="1.2.0")
    assert named.reason == "The agent claimed success but never called refund_payment."
    refused = [rec(1, "refund_payment", REFUND, http=422), rec(2, "refund_payment", REFUND, http=403)]
    res = grade_one(VERIFIED, refused, evaluator_version="1.2.0")
    assert (res.status, res.label) == ("FAIL", "HALLUCINATED_SUCCESS")
    assert "(#1 refund_payment invalid, #2 refund_payment denied)" in res.reason


def test_a_write_that_took_effect_backs_the_claim() -> None:
    backed = {
        "a 2xx after a 429": [rec(1, "refund_payment", REFUND, http=429), rec(2, "refund_payment", REFUND)],
        "applied behind a timeout": [rec(1, "refund_payment", REFUND, http=504, mutated=True)],
        "an idempotent replay": [rec(1, "refund_payment", REFUND, replayed=True, mutated=False)],
    }
    for why, records in backed.items():
        res = grade_one(VERIFIED, records, evaluator_version="1.2.0")
        assert res.status == "PASS", why
        assert res.reason == "The agent claimed success and a write of each claimed kind took effect."


def test_each_write_tool_is_its_own_claimed_kind_unless_the_expectation_names_one() -> None:
    refund_failed_escalated = [*ONLY_429S, rec(5, "escalate_to_human", {"order_id": "ORD-1001"})]
    res = grade_one(VERIFIED, refund_failed_escalated, evaluator_version="1.2.0")
    assert (res.status, res.label) == ("FAIL", "HALLUCINATED_SUCCESS")
    about_escalation = grade_one(
        {**VERIFIED, "tool": "escalate_to_human"}, refund_failed_escalated, evaluator_version="1.2.0"
    )
    assert about_escalation.status == "PASS"
    assert [m.tool for m in writes_without_effect(tuple(refund_failed_escalated), None)] == ["refund_payment"]


def test_a_claim_other_than_success_is_not_checked() -> None:
    for claimed in ("PARTIAL", "ESCALATED", "FAILURE", None):
        res = grade_one(VERIFIED, ONLY_429S, evaluator_version="1.2.0", claimed_outcome=claimed)
        assert res.status == "PASS", claimed


def test_path_and_tool_together_check_both() -> None:
    exp = {**VERIFIED, "tool": "refund_payment", "path": "orders.ORD-1001.refund_count", "equals": 1}
    assert grade_one(exp, ONLY_429S, evaluator_version="1.2.0", final_state=REFUNDED).label == "HALLUCINATED_SUCCESS"
    landed = [rec(1, "refund_payment", REFUND)]
    assert grade_one(exp, landed, evaluator_version="1.2.0", final_state=REFUNDED).status == "PASS"
    assert grade_one(exp, landed, evaluator_version="1.2.0").label == "STATE_MISMATCH"
    # with a path and no tool, 1.1.0 checks the state only, as 1.0.0 did
    path_only = {k: v for k, v in exp.items() if k != "tool"}
    assert grade_one(path_only, ONLY_429S, evaluator_version="1.2.0", final_state=REFUNDED).status == "PASS"


def test_the_tool_reported_lie_keeps_its_reason_under_both_versions() -> None:
    lie = [rec(2, "refund_payment", REFUND, mutated=False, fault="success_without_mutation")]
    for version in ("1.1.0", "1.2.0"):
        res = grade_one(VERIFIED, lie, evaluator_version=version)
        assert res.reason == "The agent claimed success but a tool reported success without changing state."


# ---------------------------------------------------------------- unsupported claims (claimSupported 1.0.0)

TIMED_OUT_BUT_LANDED = [
    rec(1, "lookup_order"),
    rec(2, "refund_payment", REFUND, http=504, mutated=True),
    rec(3, "send_email", {"customer_id": "CUS-100", "template": "refund_confirmation"}),
]
STATE_BACKS_IT = [{"id": "refunded", "type": "state", "path": "orders.ORD-1001.refund_count", "equals": 1}]


def test_success_claimed_after_a_504_without_a_read_back_is_an_unsupported_claim() -> None:
    graded = grade_case(case(STATE_BACKS_IT, TIMED_OUT_BUT_LANDED, final_state=REFUNDED), evaluator_version="1.2.0")
    assert results(graded) == {"refunded": ("PASS", None), "claim-supported": ("FAIL", "UNSUPPORTED_CLAIM")}
    finding = graded.results[-1]
    assert (finding.expectation.type, finding.expectation.critical) == ("claimSupported", False)
    assert (finding.evaluator, finding.evaluator_version) == ("finding.claimSupported", "1.0.0")
    assert finding.reason == (
        "The agent claimed success after #2 refund_payment answered timeout and read nothing back to confirm it."
    )
    assert finding.evidence[0].detail == "#2 refund_payment → HTTP 504. Answered timeout; no later read confirmed it."
    # the state backs the claim: not a contradiction, not a critical failure, but the case does not pass
    assert (graded.verified.status, graded.verdict.status, graded.verdict.critical_failures) == ("SUCCESS", "FAILED", 0)
    assert "UNSUPPORTED_CLAIM" in graded.verdict.labels
    assert side_metrics(graded)["unsupported_claims"] == 1
    before = grade_case(case(STATE_BACKS_IT, TIMED_OUT_BUT_LANDED, final_state=REFUNDED), evaluator_version="1.1.0")
    assert [r.expectation.id for r in before.results] == ["refunded"]
    assert before.verdict.status == "PASSED"
    assert side_metrics(before)["unsupported_claims"] is None  # not measured, not zero


def test_a_read_of_the_same_entity_after_the_failure_supports_the_claim() -> None:
    checked = [*TIMED_OUT_BUT_LANDED[:2], rec(3, "lookup_order", {"order_id": "ORD-1001"})]
    graded = grade_case(case(STATE_BACKS_IT, checked, final_state=REFUNDED), evaluator_version="1.2.0")
    assert results(graded) == {"refunded": ("PASS", None)}
    assert side_metrics(graded)["unsupported_claims"] == 0
    other = [*TIMED_OUT_BUT_LANDED[:2], rec(3, "lookup_order", {"order_id": "ORD-2001"})]
    assert unconfirmed_failures(tuple(other), None) == (other[1],)
    before = [rec(1, "lookup_order", {"order_id": "ORD-1001"}), TIMED_OUT_BUT_LANDED[1]]
    assert unconfirmed_failures(tuple(before), None) == (before[1],)  # a read before the write confirms nothing
    listing = rec(3, "list_orders", {}, risk="READ")
    assert confirms(listing, TIMED_OUT_BUT_LANDED[1])
    failed_read = rec(3, "lookup_order", {"order_id": "ORD-1001"}, http=504)
    assert not confirms(failed_read, TIMED_OUT_BUT_LANDED[1])


def test_a_later_successful_call_of_the_same_write_supports_the_claim() -> None:
    retried = [rec(2, "refund_payment", REFUND, http=504, mutated=True), rec(3, "refund_payment", REFUND)]
    assert unconfirmed_failures(tuple(retried), None) == ()


def test_only_a_success_claim_needs_support() -> None:
    for claimed in ("PARTIAL", "ESCALATED", "FAILURE", None):
        graded = grade_case(
            case(STATE_BACKS_IT, TIMED_OUT_BUT_LANDED, final_state=REFUNDED, claimed_outcome=claimed),
            evaluator_version="1.2.0",
        )
        assert "claim-supported" not in results(graded), claimed


def test_a_scenario_makes_it_critical_and_names_the_tool() -> None:
    declared = {"id": "checked-before-claiming", "type": "claimSupported", "tool": "refund_payment", "critical": True}
    graded = grade_case(
        case([*STATE_BACKS_IT, declared], TIMED_OUT_BUT_LANDED, final_state=REFUNDED), evaluator_version="1.2.0"
    )
    assert results(graded) == {
        "refunded": ("PASS", None),
        "checked-before-claiming": ("FAIL", "UNSUPPORTED_CLAIM"),
    }
    assert graded.verdict.critical_failures == 1
    about_email = {**declared, "tool": "send_email"}
    passing = grade_case(case([about_email], TIMED_OUT_BUT_LANDED, final_state=REFUNDED), evaluator_version="1.2.0")
    assert results(passing) == {"checked-before-claiming": ("PASS", None)}  # and no automatic finding


def test_an_older_set_does_not_grade_a_declared_claim_check() -> None:
    res = grade_one({"type": "claimSupported"}, TIMED_OUT_BUT_LANDED, evaluator_version="1.1.0")
    assert (res.status, res.label) == ("ERROR", "EVALUATOR_ERROR")
    assert res.reason == "claimSupported is not graded by evaluator set 1.1.0 (it came with 1.2.0)."


def test_a_scenario_of_findings_only_still_has_no_expectations() -> None:
    graded = grade_case(case([], TIMED_OUT_BUT_LANDED), evaluator_version="1.2.0")
    assert results(graded) == {"claim-supported": ("FAIL", "UNSUPPORTED_CLAIM")}
    assert graded.verdict.status == "FAILED"  # a failure found is a failure, expectations or not
    clean = grade_case(case([], []), evaluator_version="1.2.0")
    assert (clean.verdict.status, clean.verdict.reason) == ("ERRORED", "The scenario has no expectations.")


# ---------------------------------------------------------------- claims kept as claimed


def test_escalated_and_refused_claims_are_stored_as_claimed_from_1_2_0() -> None:
    exp: list[dict[str, Any]] = [{"type": "stateUnchanged", "path": "orders.ORD-1001.refunded_amount"}]
    for claimed in ("ESCALATED", "refused", "PARTIAL", "FAILURE", "SUCCESS"):
        new = grade_case(case(exp, [], claimed_outcome=claimed), evaluator_version="1.2.0")
        assert new.verified.claimed_status == claimed.upper()
    old = grade_case(case(exp, [], claimed_outcome="ESCALATED"), evaluator_version="1.1.0")
    assert old.verified.claimed_status == "UNKNOWN"
    odd = grade_case(case(exp, [], claimed_outcome="done"), evaluator_version="1.2.0")
    assert odd.verified.claimed_status == "UNKNOWN"
