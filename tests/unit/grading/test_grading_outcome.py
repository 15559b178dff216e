from __future__ import annotations

from grading_builders import result

from evaluation.outcome import verified_outcome


def test_outcome_evidence_failure_is_verified_failure() -> None:
    results = [
        result("PASS", ident="notified", kind="toolCalled"),
        result("FAIL", ident="refunded-exactly-once", kind="state", critical=True),
        result("FAIL", ident="no-double-refund", kind="noDuplicateSideEffect"),
    ]
    out = verified_outcome(results, "success", "REFUND_COMPLETED")
    assert (out.status, out.verified, out.source) == ("FAILURE", True, "tool_twin_state")
    assert out.claimed_status == "SUCCESS"
    assert out.business_outcome == "REFUND_COMPLETED"
    assert out.reason == "The twin's state disproves success: refunded-exactly-once: why (+1 more: no-double-refund)"


def test_trajectory_failures_never_decide_the_outcome() -> None:
    # refund landed correctly by the wrong path: the verdict fails, the outcome is still SUCCESS
    results = [
        result("PASS", ident="refunded-once", kind="state"),
        result("FAIL", ident="policy-before-refund", kind="order", label="ORDER_VIOLATION"),
        result("PASS", ident="success-backed-by-state", kind="outcomeVerified"),
    ]
    out = verified_outcome(results, "SUCCESS", None)
    assert (out.status, out.verified, out.source) == ("SUCCESS", True, "tool_twin_state")
    assert "refunded-once, success-backed-by-state" in out.reason


def test_no_evidence_or_undecided_evidence_is_unknown() -> None:
    none = verified_outcome([result("PASS", kind="toolCalled")], "SUCCESS", None)
    assert (none.status, none.verified, none.source) == ("UNKNOWN", False, "unavailable")
    skipped = verified_outcome(
        [result("PASS", kind="state"), result("SKIPPED", ident="x", kind="stateUnchanged")], None, None
    )
    assert (skipped.status, skipped.verified, skipped.source) == ("UNKNOWN", False, "unavailable")
    assert "x" in skipped.reason
    errored = verified_outcome([result("ERROR", kind="outcomeVerified")], "PARTIAL", None)
    assert errored.status == "UNKNOWN"
    assert errored.claimed_status == "PARTIAL"


def test_claim_normalization() -> None:
    assert verified_outcome([], None, None).claimed_status is None
    assert verified_outcome([], "done", None).claimed_status == "UNKNOWN"
    assert verified_outcome([], "x", "B" * 300).business_outcome == "B" * 200


def test_one_failure_outranks_undecided_evidence() -> None:
    # the twin's state disproved success; an expectation that could not be evaluated does not undo that
    for undecided in ("ERROR", "SKIPPED"):
        for order in (0, 1):
            pair = [
                result("FAIL", ident="refunded-exactly-once", kind="state", critical=True),
                result(undecided, ident="success-backed-by-state", kind="outcomeVerified"),
            ]
            results = pair if order == 0 else pair[::-1]
            out = verified_outcome(results, "SUCCESS", None)
            assert (out.status, out.verified, out.source) == ("FAILURE", True, "tool_twin_state"), undecided
            assert out.reason.startswith("The twin's state disproves success: refunded-exactly-once")
