"""Classification from expectation results: table, precedence, INCOMPLETE, asymmetry (spec §7.4)."""

from __future__ import annotations

import pytest
from comparison_builders import case_run, graded, result
from hypothesis import given, settings
from hypothesis import strategies as st

from evaluation.classification import (
    IMPROVED,
    INCOMPLETE,
    NEW_CRITICAL_FAILURE,
    REGRESSED,
    SEVERITY_ORDER,
    UNCHANGED,
    expectation_changes,
    format_ids,
)
from evaluation.comparison import compare_case
from evaluation.results import ERROR, ERRORED, FAIL, PASS, SKIPPED, ExpectationResult, GradedCase


def side(*results: ExpectationResult, who: str = "baseline") -> GradedCase:
    return graded(case_run(side=who), results)


def cmp(baseline: list[ExpectationResult], candidate: list[ExpectationResult]) -> tuple[str, str]:
    c = compare_case(side(*baseline), side(*candidate, who="candidate"))
    return c.classification, c.reason


@pytest.mark.parametrize(
    ("baseline", "candidate", "change", "unverified"),
    [
        (FAIL, FAIL, "still_failing", False),
        (PASS, FAIL, "broken", False),
        (ERROR, FAIL, "broken", True),
        (SKIPPED, FAIL, "broken", True),
        (None, FAIL, "broken", True),
        (FAIL, PASS, "fixed", False),
        (PASS, PASS, "same", False),
        (PASS, SKIPPED, "not_comparable", False),
        (FAIL, ERROR, "not_comparable", False),
        (SKIPPED, PASS, "not_comparable", False),
        (FAIL, None, "not_comparable", False),
    ],
)
def test_expectation_change_table(
    baseline: str | None, candidate: str | None, change: str, unverified: bool
) -> None:
    b = [result("e1", baseline)] if baseline else []
    c = [result("e1", candidate)] if candidate else []
    (ch,) = expectation_changes(b, c)
    assert (ch.id, ch.change, ch.baseline_unverified) == ("e1", change, unverified)
    assert (ch.baseline, ch.candidate) == (baseline, candidate)


def test_changes_follow_the_candidate_order_then_baseline_only_ids() -> None:
    changes = expectation_changes(
        [result("b-only", PASS), result("x", PASS)], [result("x", PASS), result("y", FAIL)]
    )
    assert [c.id for c in changes] == ["x", "y", "b-only"]


def test_new_critical_failure_uses_the_candidate_reason() -> None:
    cls, reason = cmp(
        [result("refunded-exactly-once", PASS, critical=True), result("other", PASS)],
        [
            result(
                "refunded-exactly-once",
                FAIL,
                critical=True,
                reason="State orders.ORD-1001.refund_count: expected 1, got 2.",
            ),
            result("other", FAIL),
        ],
    )
    assert cls == NEW_CRITICAL_FAILURE
    assert (
        reason
        == "New critical failure refunded-exactly-once: "
        "State orders.ORD-1001.refund_count: expected 1, got 2."
    )


def test_regressed_improved_still_failing_same() -> None:
    assert cmp([result("policy-before-refund", PASS)], [result("policy-before-refund", FAIL)]) == (
        REGRESSED,
        "Newly failing: policy-before-refund.",
    )
    assert cmp([result("a", FAIL), result("b", FAIL)], [result("a", PASS), result("b", PASS)]) == (
        IMPROVED,
        "Now passing: a, b.",
    )
    assert cmp([result("a", FAIL), result("b", PASS)], [result("a", FAIL), result("b", PASS)]) == (
        UNCHANGED,
        "Still failing on both sides: a.",
    )
    assert cmp([result("a", PASS)], [result("a", PASS)]) == (UNCHANGED, "Same result on both sides.")


def test_a_new_failure_outweighs_a_fix_in_both_directions() -> None:
    b = [result("a", FAIL), result("b", PASS)]
    c = [result("a", PASS), result("b", FAIL)]
    assert cmp(b, c) == (REGRESSED, "Newly failing: b.")
    assert cmp(c, b) == (REGRESSED, "Newly failing: a.")


def test_critical_broken_wins_over_non_critical_broken_and_ids_are_capped() -> None:
    ids = [f"e{i}" for i in range(7)]
    assert format_ids(ids) == "e0, e1, e2, e3, e4 (+2 more)"
    assert cmp([result(i, PASS) for i in ids], [result(i, FAIL) for i in ids]) == (
        REGRESSED,
        "Newly failing: e0, e1, e2, e3, e4 (+2 more).",
    )
    cls, reason = cmp(
        [result(i, PASS) for i in ids],
        [*(result(i, FAIL) for i in ids[:-1]), result("e6", FAIL, critical=True, reason="Bad.")],
    )
    assert (cls, reason) == (NEW_CRITICAL_FAILURE, "New critical failure e6: Bad.")


def test_a_failure_the_baseline_never_verified_still_counts_as_broken() -> None:
    cls, _ = cmp(
        [result("a", PASS), result("n", SKIPPED, etype="semantic")],
        [result("a", PASS), result("n", FAIL, etype="semantic")],
    )
    assert cls == REGRESSED


def test_incomplete_when_a_side_did_not_finish() -> None:
    errored = graded(case_run(), [result("j", ERROR, critical=True, reason="The judge timed out.")])
    assert errored.verdict.status == ERRORED
    done = side(result("j", PASS, critical=True))
    c = compare_case(errored, done)
    assert (c.classification, c.reason) == (
        INCOMPLETE,
        "The baseline's case ended ERRORED: The judge timed out.",
    )
    c = compare_case(done, errored)
    assert (c.classification, c.reason) == (
        INCOMPLETE,
        "The candidate's case ended ERRORED: The judge timed out.",
    )
    cancelled = graded(case_run(), [result("j", PASS)], status="CANCELLED", reason="Cancelled by request.")
    assert (
        compare_case(done, cancelled).reason == "The candidate's case ended CANCELLED: Cancelled by request."
    )


def test_skipped_non_critical_results_do_not_make_a_case_incomplete() -> None:
    b = side(result("a", PASS, critical=True), result("s", SKIPPED, etype="semantic"))
    assert compare_case(b, b).classification == UNCHANGED


# ---------------------------------------------------------------------------------------------
# Properties

IDS = [f"e{i}" for i in range(5)]
STATUS = st.sampled_from([PASS, FAIL])


@st.composite
def result_sets(draw: st.DrawFn) -> tuple[list[ExpectationResult], list[ExpectationResult]]:
    """Two done sides over the same expectations (critical flags shared), PASS/FAIL or absent."""
    b: list[ExpectationResult] = []
    c: list[ExpectationResult] = []
    for eid in IDS:
        critical = draw(st.booleans())
        for out in (b, c):
            status = draw(st.one_of(st.none(), STATUS))
            if status is not None:
                out.append(result(eid, status, critical=critical))
    b.append(result("anchor", PASS))  # a side always has something evaluated
    c.append(result("anchor", PASS))
    return b, c


def rank(cls: str) -> int:
    return SEVERITY_ORDER.index(cls)


@settings(max_examples=300, deadline=None)
@given(result_sets())
def test_a_case_compared_with_itself_is_unchanged(
    sides: tuple[list[ExpectationResult], list[ExpectationResult]],
) -> None:
    b, _ = sides
    assert cmp(b, b)[0] == UNCHANGED


@settings(max_examples=300, deadline=None)
@given(result_sets())
def test_swapping_sides_of_a_pure_regression_gives_improved_or_unchanged(
    sides: tuple[list[ExpectationResult], list[ExpectationResult]],
) -> None:
    b, c = sides
    c_status = {r.expectation.id: r.status for r in c}
    # keep only pairs where the candidate fixed nothing the baseline failed
    b = [r for r in b if not (r.status == FAIL and c_status.get(r.expectation.id) != FAIL)]
    forward = cmp(b, c)[0]
    backward = cmp(c, b)[0]
    assert forward in (NEW_CRITICAL_FAILURE, REGRESSED, UNCHANGED)
    assert backward in (IMPROVED, UNCHANGED)
    b_status = {r.expectation.id: r.status for r in b}
    broken_after_pass = any(r.status == FAIL and b_status.get(r.expectation.id) == PASS for r in c)
    assert (backward == IMPROVED) == broken_after_pass


@settings(max_examples=300, deadline=None)
@given(result_sets(), st.booleans())
def test_adding_a_failing_critical_expectation_to_the_candidate_makes_it_a_new_critical_failure(
    sides: tuple[list[ExpectationResult], list[ExpectationResult]],
    baseline_has_it: bool,
) -> None:
    b, c = sides
    before = cmp(b, c)[0]
    extra_b = [*b, result("added", PASS, critical=True)] if baseline_has_it else b
    after = cmp(extra_b, [*c, result("added", FAIL, critical=True)])[0]
    assert after == NEW_CRITICAL_FAILURE
    assert rank(after) <= rank(before)


@settings(max_examples=300, deadline=None)
@given(result_sets(), st.sampled_from(IDS))
def test_breaking_a_candidate_result_never_moves_away_from_new_critical_failure(
    sides: tuple[list[ExpectationResult], list[ExpectationResult]],
    eid: str,
) -> None:
    b, c = sides
    if any(r.expectation.id == eid and r.status == FAIL for r in b):
        return  # a baseline failure turns a fix into "still failing": not a worsening, by design
    before = cmp(b, c)[0]
    critical = next((r.expectation.critical for r in [*c, *b] if r.expectation.id == eid), True)
    worse = [r for r in c if r.expectation.id != eid] + [result(eid, FAIL, critical=critical)]
    after = cmp(b, worse)[0]
    assert rank(after) <= rank(before)
    assert after in (NEW_CRITICAL_FAILURE, REGRESSED)
