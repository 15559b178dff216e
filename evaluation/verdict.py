"""The case verdict (spec §7.3): PASSED, FAILED or ERRORED from a case's expectation results.

- FAILED when anything failed; the reason is the first critical failure's (else the first
  failure's), plus " (+N more failed expectation(s))".
- Else ERRORED when anything errored, a critical expectation was skipped, a judge could not decide
  (a SKIPPED result labelled JUDGE_UNDECIDED), a semantic expectation went unjudged because the run's
  judge budget was spent (labelled JUDGE_BUDGET_SPENT), the scenario has no expectations, or nothing was
  evaluated. An ERRORED case is never a pass and never a zero.
- Else PASSED: "All N evaluated expectation(s) passed." + " M were skipped."
"""

from __future__ import annotations

from collections.abc import Sequence

from evaluation.expectations.registry import is_finding
from evaluation.results import (
    ERROR,
    ERRORED,
    FAIL,
    FAILED,
    PASS,
    PASSED,
    SKIPPED,
    UNJUDGED_LABELS,
    CaseVerdict,
    ExpectationResult,
)


def _more(count: int, what: str) -> str:
    return f" (+{count} more {what} expectation(s))" if count > 0 else ""


def case_verdict(results: Sequence[ExpectationResult], evaluator_version: str) -> CaseVerdict:
    """The verdict over `results` (in expectation order) graded with evaluator set `evaluator_version`."""
    fails = [r for r in results if r.status == FAIL]
    errors = [r for r in results if r.status == ERROR]
    passes = [r for r in results if r.status == PASS]
    skips = [r for r in results if r.status == SKIPPED]
    critical_failures = [r for r in fails if r.expectation.critical]
    evaluated = len(passes) + len(fails) + len(errors)

    if fails:
        first = critical_failures[0] if critical_failures else fails[0]
        status, reason = FAILED, first.reason + _more(len(fails) - 1, "failed")
    elif errors:
        status, reason = ERRORED, errors[0].reason + _more(len(errors) - 1, "errored")
    elif unjudged := [r for r in skips if r.label in UNJUDGED_LABELS]:
        first = unjudged[0]
        extra = _more(len(unjudged) - 1, "unjudged")
        status, reason = ERRORED, f"Expectation {first.expectation.id} was not decided: {first.reason}{extra}"
    elif all(is_finding(r) for r in results):  # the grader's own findings are no expectations
        status, reason = ERRORED, "The scenario has no expectations."
    elif critical_skips := [r for r in skips if r.expectation.critical]:
        first = critical_skips[0]
        extra = _more(len(critical_skips) - 1, "skipped critical")
        status = ERRORED
        reason = f"Critical expectation {first.expectation.id} was not evaluated: {first.reason}{extra}"
    elif not evaluated:
        status, reason = ERRORED, f"No expectation was evaluated ({len(skips)} skipped)."
    else:
        status, reason = PASSED, f"All {len(passes)} evaluated expectation(s) passed."
        if skips:
            reason += f" {len(skips)} were skipped."

    labels = sorted({r.label for r in fails if r.label})
    return CaseVerdict(
        status=status,
        reason=reason,
        passed=len(passes),
        failed=len(fails),
        errored=len(errors),
        skipped=len(skips),
        critical_failures=len(critical_failures),
        score=len(passes) / evaluated if evaluated else None,
        labels=tuple(labels),
        evaluator_version=evaluator_version,
    )
