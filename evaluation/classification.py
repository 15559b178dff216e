"""Case classification from expectation results alone (spec §7.4).

Asymmetric by design: a new failure outweighs a fix, and only the candidate's failures can make a
case worse. Metrics never enter here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.results import FAIL, FAILED, PASS, PASSED, ExpectationResult

JSON = Any

NEW_CRITICAL_FAILURE = "NEW_CRITICAL_FAILURE"
REGRESSED = "REGRESSED"
IMPROVED = "IMPROVED"
UNCHANGED = "UNCHANGED"
INCOMPLETE = "INCOMPLETE"
CLASSIFICATIONS = (NEW_CRITICAL_FAILURE, REGRESSED, IMPROVED, UNCHANGED, INCOMPLETE)
# Only repeated trials (evaluation/trials.py) produce FLAKY: both sides pass some trials and fail others,
# and no change is significant. A single-trial evaluation never has it (its documents stay as they were).
FLAKY = "FLAKY"
ALL_CLASSIFICATIONS = (NEW_CRITICAL_FAILURE, REGRESSED, FLAKY, IMPROVED, UNCHANGED, INCOMPLETE)
# Worst first: the order a case can only move along when the candidate gets worse.
SEVERITY_ORDER = (NEW_CRITICAL_FAILURE, REGRESSED, IMPROVED, UNCHANGED)

BROKEN = "broken"
STILL_FAILING = "still_failing"
FIXED = "fixed"
SAME = "same"
NOT_COMPARABLE = "not_comparable"

DONE_STATUSES = (PASSED, FAILED)
MAX_IDS_SHOWN = 5


@dataclass(frozen=True)
class ExpectationChange:
    id: str
    type: str
    critical: bool
    change: str  # broken | still_failing | fixed | same | not_comparable
    baseline: str | None  # result status, None when the side has no result of that id
    candidate: str | None
    baseline_label: str | None = None
    candidate_label: str | None = None
    candidate_reason: str | None = None
    baseline_unverified: bool = False  # broken, but the baseline never showed it passing

    def to_dict(self) -> dict[str, JSON]:
        return {
            "id": self.id,
            "type": self.type,
            "critical": self.critical,
            "change": self.change,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "baseline_label": self.baseline_label,
            "candidate_label": self.candidate_label,
            "candidate_reason": self.candidate_reason,
            "baseline_unverified": self.baseline_unverified,
        }


@dataclass(frozen=True)
class Classification:
    classification: str
    reason: str


def _change(baseline: str | None, candidate: str | None) -> tuple[str, bool]:
    if candidate == FAIL:
        if baseline == FAIL:
            return STILL_FAILING, False
        return BROKEN, baseline != PASS
    if baseline == FAIL and candidate == PASS:
        return FIXED, False
    if baseline == PASS and candidate == PASS:
        return SAME, False
    return NOT_COMPARABLE, False


def expectation_changes(
    baseline: Sequence[ExpectationResult], candidate: Sequence[ExpectationResult]
) -> tuple[ExpectationChange, ...]:
    """One change per expectation id: the candidate's order first, then ids only the baseline has."""
    b_by_id = {r.expectation.id: r for r in baseline}
    c_by_id = {r.expectation.id: r for r in candidate}
    ids = list(c_by_id) + [i for i in b_by_id if i not in c_by_id]
    out: list[ExpectationChange] = []
    for eid in ids:
        b, c = b_by_id.get(eid), c_by_id.get(eid)
        ref = c if c is not None else b
        assert ref is not None  # every id comes from one of the two sides
        meta = ref.expectation
        change, unverified = _change(b.status if b else None, c.status if c else None)
        out.append(
            ExpectationChange(
                id=eid,
                type=meta.type,
                critical=meta.critical,
                change=change,
                baseline=b.status if b else None,
                candidate=c.status if c else None,
                baseline_label=b.label if b else None,
                candidate_label=c.label if c else None,
                candidate_reason=c.reason if c else None,
                baseline_unverified=unverified,
            )
        )
    return tuple(out)


def format_ids(ids: Sequence[str]) -> str:
    shown = ", ".join(ids[:MAX_IDS_SHOWN])
    if len(ids) > MAX_IDS_SHOWN:
        shown += f" (+{len(ids) - MAX_IDS_SHOWN} more)"
    return shown


def incomplete_reason(side: str, status: str, reason: str) -> str:
    return f"The {side}'s case ended {status}: {reason}"


def classify(
    baseline_status: str,
    baseline_reason: str,
    candidate_status: str,
    candidate_reason: str,
    changes: Sequence[ExpectationChange],
) -> Classification:
    """The case's class and the sentence that says why (precedence as in spec §7.4)."""
    if baseline_status not in DONE_STATUSES:
        return Classification(INCOMPLETE, incomplete_reason("baseline", baseline_status, baseline_reason))
    if candidate_status not in DONE_STATUSES:
        return Classification(INCOMPLETE, incomplete_reason("candidate", candidate_status, candidate_reason))
    broken = [ch for ch in changes if ch.change == BROKEN]
    critical = [ch for ch in broken if ch.critical]
    if critical:
        first = critical[0]
        return Classification(
            NEW_CRITICAL_FAILURE, f"New critical failure {first.id}: {first.candidate_reason}"
        )
    if broken:
        return Classification(REGRESSED, f"Newly failing: {format_ids([ch.id for ch in broken])}.")
    fixed = [ch.id for ch in changes if ch.change == FIXED]
    if fixed:
        return Classification(IMPROVED, f"Now passing: {format_ids(fixed)}.")
    still = [ch.id for ch in changes if ch.change == STILL_FAILING]
    if still:
        return Classification(UNCHANGED, f"Still failing on both sides: {format_ids(still)}.")
    return Classification(UNCHANGED, "Same result on both sides.")
