"""The run summary over all case comparisons, and the evaluation report document (spec §7.4).

Unknown numbers (tokens, cost, latency) are never summed as zero: totals count only known values
and say how many were known. The report's `to_dict()` is deterministic: wall-clock measurements
live only under keys named `timings`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.classification import (
    ALL_CLASSIFICATIONS,
    BROKEN,
    CLASSIFICATIONS,
    DONE_STATUSES,
    FIXED,
    FLAKY,
    IMPROVED,
    INCOMPLETE,
    NEW_CRITICAL_FAILURE,
    REGRESSED,
    UNCHANGED,
)
from evaluation.comparison import MISSING, CaseComparison, SideView, compare_case
from evaluation.results import FAILED, PASSED, GradedCase
from twin_engine.canonical import canonical_json

JSON = Any

SUMMED = (
    "critical_failures",
    "policy_violations",
    "retries",
    "duplicate_side_effects",
    "escalations",
    "tool_calls",
)
SLICE_KINDS = ("severity", "tag", "tool", "risk", "failure_class")
_COUNT_WORDS = {
    NEW_CRITICAL_FAILURE: ("new critical failure", "new critical failures"),
    REGRESSED: ("regressed", "regressed"),
    IMPROVED: ("improved", "improved"),
    UNCHANGED: ("unchanged", "unchanged"),
    INCOMPLETE: ("incomplete", "incomplete"),
    FLAKY: ("flaky", "flaky"),
}


def percentile(values: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile (a value that occurred); None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    rank = max(1, math.ceil(pct / 100 * len(ordered)))
    return ordered[rank - 1]


def side_totals(sides: Iterable[SideView]) -> dict[str, JSON]:
    present = [s for s in sides if s.status != MISSING]
    metrics = [s.metrics for s in present if s.metrics is not None]
    out: dict[str, JSON] = {
        "cases": len(present),
        "passed": sum(1 for s in present if s.status == PASSED),
        "failed": sum(1 for s in present if s.status == FAILED),
        "incomplete": sum(1 for s in present if s.status not in DONE_STATUSES),
    }
    for name in SUMMED:
        out[name] = sum(int(m.get(name) or 0) for m in metrics)
    latencies = [float(v) for m in metrics if (v := m.get("latency_ms")) is not None]
    out["latency_ms_p50"] = percentile(latencies, 50)
    out["latency_ms_p95"] = percentile(latencies, 95)
    tokens = [int(v) for m in metrics if (v := m.get("tokens")) is not None]
    out["tokens"] = sum(tokens) if tokens else None
    out["tokens_known"] = len(tokens)
    costs = [float(v) for m in metrics if (v := m.get("cost_usd")) is not None]
    out["cost_usd"] = round(sum(costs), 6) if costs else None
    out["cost_known"] = len(costs)
    scores = [score for s in present for score in s.semantic_scores]
    out["semantic_score"] = round(sum(scores) / len(scores), 4) if scores else None
    return out


@dataclass(frozen=True)
class RunSummary:
    counts: dict[str, int]
    baseline: dict[str, JSON]
    candidate: dict[str, JSON]
    new_critical_failures: tuple[dict[str, JSON], ...]
    regressed: tuple[dict[str, JSON], ...]
    improved: tuple[dict[str, JSON], ...]
    incomplete: tuple[dict[str, JSON], ...]
    slices: dict[str, dict[str, dict[str, int]]]

    def counts_line(self) -> str:
        """E.g. "2 new critical failures · 1 regressed · 6 unchanged" (classes with no case left out)."""
        parts = []
        for cls in ALL_CLASSIFICATIONS:
            n = self.counts.get(cls, 0)
            if n:
                one, many = _COUNT_WORDS[cls]
                parts.append(f"{n} {one if n == 1 else many}")
        return " · ".join(parts) if parts else "no cases"

    def to_dict(self) -> dict[str, JSON]:
        return {
            "counts": dict(self.counts),
            "baseline": dict(self.baseline),
            "candidate": dict(self.candidate),
            "new_critical_failures": [dict(x) for x in self.new_critical_failures],
            "regressed": [dict(x) for x in self.regressed],
            "improved": [dict(x) for x in self.improved],
            "incomplete": [dict(x) for x in self.incomplete],
            "slices": {
                kind: {k: dict(v) for k, v in sorted(values.items())} for kind, values in self.slices.items()
            },
        }


def _slice_keys(comparison: CaseComparison) -> dict[str, set[str]]:
    return {
        "severity": {comparison.severity or "unknown"},
        "tag": set(comparison.tags),
        "tool": set(comparison.baseline.tools) | set(comparison.candidate.tools),
        "risk": {comparison.risk},
        "failure_class": set(comparison.candidate.labels),
    }


def _slices(comparisons: Sequence[CaseComparison]) -> dict[str, dict[str, dict[str, int]]]:
    slices: dict[str, dict[str, dict[str, int]]] = {kind: {} for kind in SLICE_KINDS}
    for comparison in comparisons:
        for kind, keys in _slice_keys(comparison).items():
            for key in keys:
                entry = slices[kind].setdefault(
                    key,
                    {
                        "cases": 0,
                        "baseline_failed": 0,
                        "candidate_failed": 0,
                        **dict.fromkeys(CLASSIFICATIONS, 0),
                    },
                )
                entry["cases"] += 1
                entry[comparison.classification] = entry.get(comparison.classification, 0) + 1
                entry["baseline_failed"] += int(comparison.baseline.status == FAILED)
                entry["candidate_failed"] += int(comparison.candidate.status == FAILED)
    return slices


def _listed(
    comparisons: Sequence[CaseComparison], cls: str, ids: Callable[[CaseComparison], list[str]]
) -> tuple[dict[str, JSON], ...]:
    return tuple(
        {"scenario_name": c.scenario_name, "expectations": ids(c)}
        for c in comparisons
        if c.classification == cls
    )


def summarize(comparisons: Sequence[CaseComparison]) -> RunSummary:
    counts = dict.fromkeys(CLASSIFICATIONS, 0)  # FLAKY (trials only) is counted when it occurs
    for comparison in comparisons:
        counts[comparison.classification] = counts.get(comparison.classification, 0) + 1
    return RunSummary(
        counts=counts,
        baseline=side_totals(c.baseline for c in comparisons),
        candidate=side_totals(c.candidate for c in comparisons),
        new_critical_failures=_listed(
            comparisons, NEW_CRITICAL_FAILURE, lambda c: c.expectation_ids(BROKEN, True)
        ),
        regressed=_listed(comparisons, REGRESSED, lambda c: c.expectation_ids(BROKEN)),
        improved=_listed(comparisons, IMPROVED, lambda c: c.expectation_ids(FIXED)),
        incomplete=tuple(
            {"scenario_name": c.scenario_name, "reason": c.reason}
            for c in comparisons
            if c.classification == INCOMPLETE
        ),
        slices=_slices(comparisons),
    )


@dataclass(frozen=True)
class EvaluationReport:
    evaluation_id: str
    baseline_agent: str
    candidate_agent: str
    run_seed: int
    evaluator_version: str
    cases: tuple[CaseComparison, ...]
    summary: RunSummary
    pair_id: str | None = None
    timings: dict[str, JSON] = field(default_factory=dict)  # wall clock only lives here

    def to_dict(self) -> dict[str, JSON]:
        return {
            "evaluation_id": self.evaluation_id,
            "pair_id": self.pair_id,
            "baseline": self.baseline_agent,
            "candidate": self.candidate_agent,
            "run_seed": self.run_seed,
            "evaluator_version": self.evaluator_version,
            "cases": [c.to_dict() for c in self.cases],
            "summary": self.summary.to_dict(),
            "timings": dict(self.timings),
        }

    def to_json(self) -> str:
        return canonical_json(self.to_dict())


class ReportError(ValueError):
    """The cases handed to build_report cannot be paired by scenario."""


def _by_scenario(cases: Sequence[GradedCase], side: str) -> dict[str, GradedCase]:
    out: dict[str, GradedCase] = {}
    for graded in cases:
        name = graded.case.scenario_name
        if name in out:
            raise ReportError(f"the {side} has two cases of scenario {name!r}")
        out[name] = graded
    return out


def build_report(
    *,
    evaluation_id: str,
    baseline_agent: str,
    candidate_agent: str,
    run_seed: int,
    evaluator_version: str,
    baseline_cases: Sequence[GradedCase],
    candidate_cases: Sequence[GradedCase],
    pair_id: str | None = None,
    timings: dict[str, JSON] | None = None,
) -> EvaluationReport:
    """Pair the two sides' cases by scenario name, compare each pair and summarize, in name order."""
    b_by, c_by = _by_scenario(baseline_cases, "baseline"), _by_scenario(candidate_cases, "candidate")
    comparisons = tuple(
        compare_case(b_by.get(name), c_by.get(name)) for name in sorted(set(b_by) | set(c_by))
    )
    return EvaluationReport(
        evaluation_id=evaluation_id,
        baseline_agent=baseline_agent,
        candidate_agent=candidate_agent,
        run_seed=run_seed,
        evaluator_version=evaluator_version,
        cases=comparisons,
        summary=summarize(comparisons),
        pair_id=pair_id,
        timings=dict(timings or {}),
    )


def strip_timings(value: JSON) -> JSON:
    """A copy of a JSON value without any `timings` key: what must be identical between reruns."""
    if isinstance(value, dict):
        return {k: strip_timings(v) for k, v in value.items() if k != "timings"}
    if isinstance(value, list):
        return [strip_timings(v) for v in value]
    return value
