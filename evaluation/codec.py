"""JSON round trip of graded cases: how a verdict event carries everything the comparator needs."""

from __future__ import annotations

from typing import Any

from evaluation.case import case_run_from_dict, case_run_to_dict
from evaluation.results import (
    CaseVerdict,
    Evidence,
    ExpectationMeta,
    ExpectationResult,
    GradedCase,
    VerifiedOutcome,
)

JSON = Any


def result_from_dict(data: dict[str, JSON]) -> ExpectationResult:
    return ExpectationResult(
        status=data["status"],
        reason=data["reason"],
        evaluator=data["evaluator"],
        evaluator_version=data["evaluator_version"],
        expectation=ExpectationMeta(**data["expectation"]),
        score=data.get("score"),
        label=data.get("label"),
        evidence=tuple(Evidence(**e) for e in data.get("evidence") or ()),
        details=dict(data.get("details") or {}),
    )


def verdict_from_dict(data: dict[str, JSON]) -> CaseVerdict:
    return CaseVerdict(**{**data, "labels": tuple(data.get("labels") or ())})


def graded_to_dict(graded: GradedCase) -> dict[str, JSON]:
    case = case_run_to_dict(graded.case)
    case.pop("timings", None)  # wall clock never travels in events
    return {
        "case": case,
        "results": [r.to_dict() for r in graded.results],
        "verdict": graded.verdict.to_dict(),
        "verified": graded.verified.to_dict(),
        "evaluator_version": graded.evaluator_version,
    }


def graded_from_dict(data: dict[str, JSON]) -> GradedCase:
    return GradedCase(
        case=case_run_from_dict(data["case"]),
        results=tuple(result_from_dict(r) for r in data["results"]),
        verdict=verdict_from_dict(data["verdict"]),
        verified=VerifiedOutcome(**data["verified"]),
        evaluator_version=data["evaluator_version"],
    )
