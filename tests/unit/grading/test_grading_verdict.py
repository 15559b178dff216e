from __future__ import annotations

from grading_builders import result

from evaluation.verdict import case_verdict


def test_failed_reason_prefers_the_first_critical_failure() -> None:
    results = [
        result("FAIL", ident="a", reason="first non-critical.", label="ORDER_VIOLATION"),
        result("PASS", ident="b"),
        result("FAIL", ident="c", critical=True, reason="critical one.", label="STATE_MISMATCH"),
        result("FAIL", ident="d", critical=True, reason="critical two.", label="STATE_MISMATCH"),
        result("ERROR", ident="e", label="EVALUATOR_ERROR"),
    ]
    verdict = case_verdict(results, "1.1.0")
    assert verdict.status == "FAILED"
    assert verdict.reason == "critical one. (+2 more failed expectation(s))"
    assert (verdict.passed, verdict.failed, verdict.errored, verdict.skipped) == (1, 3, 1, 0)
    assert verdict.critical_failures == 2
    assert verdict.labels == ("ORDER_VIOLATION", "STATE_MISMATCH")  # sorted, unique, FAIL labels only
    assert verdict.score == 1 / 5
    assert verdict.evaluator_version == "1.1.0"


def test_failed_without_critical_and_single_failure() -> None:
    verdict = case_verdict([result("PASS"), result("FAIL", reason="Only this.")], "1.1.0")
    assert verdict.reason == "Only this."
    assert verdict.labels == ()
    assert verdict.critical_failures == 0


def test_errored_rules() -> None:
    err = case_verdict([result("PASS"), result("ERROR", reason="Invalid expectation: x.")], "1.1.0")
    assert (err.status, err.reason) == ("ERRORED", "Invalid expectation: x.")
    assert err.score == 0.5
    none = case_verdict([], "1.1.0")
    assert (none.status, none.reason, none.score) == ("ERRORED", "The scenario has no expectations.", None)
    crit_skip = case_verdict(
        [result("PASS"), result("SKIPPED", ident="s", critical=True, reason="No twin state to check.")],
        "1.1.0",
    )
    assert crit_skip.status == "ERRORED"
    assert crit_skip.reason == "Critical expectation s was not evaluated: No twin state to check."
    nothing = case_verdict([result("SKIPPED"), result("SKIPPED")], "1.1.0")
    assert (nothing.status, nothing.reason) == ("ERRORED", "No expectation was evaluated (2 skipped).")


def test_passed_wording() -> None:
    verdict = case_verdict([result("PASS"), result("PASS"), result("SKIPPED", kind="semantic")], "1.0.0")
    assert verdict.status == "PASSED"
    assert verdict.reason == "All 2 evaluated expectation(s) passed. 1 were skipped."
    assert verdict.score == 1.0
    assert case_verdict([result("PASS")], "1.1.0").reason == "All 1 evaluated expectation(s) passed."


def test_a_judgment_the_budget_left_unmade_never_passes_the_case() -> None:
    unjudged = result(
        "SKIPPED", ident="tone", kind="semantic", reason="Not judged: budget spent.", label="JUDGE_BUDGET_SPENT"
    )
    verdict = case_verdict([result("PASS"), unjudged], "1.3.0")
    assert verdict.status == "ERRORED"
    assert verdict.reason == "Expectation tone was not decided: Not judged: budget spent."
    plain_skip = case_verdict([result("PASS"), result("SKIPPED", kind="semantic")], "1.3.0")
    assert plain_skip.status == "PASSED"  # a skip for another reason (e.g. not this judge's) still does not block
