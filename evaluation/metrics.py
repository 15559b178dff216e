"""Per-side case metrics and how the candidate's compare with the baseline's (spec §7.4).

Metrics sit next to the verdict and never change it. Each has a direction (lower or higher is
better, or neutral) and a tolerance: a difference within max(absolute, relative × |baseline|) is
`same`. A side whose value is unknown (None) makes the change `unknown`, never a zero.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from evaluation.calls import agent_calls
from evaluation.duplicates import duplicate_side_effects
from evaluation.expectations.claims import UNSUPPORTED_CLAIM
from evaluation.expectations.context import escalation_tools
from evaluation.results import FAIL, PASS, GradedCase
from evaluation.retries import count_retries
from evaluation.versions import CLAIM_FINDING_EVALUATOR, EVALUATOR_SETS

JSON = Any

LOWER = "lower"
HIGHER = "higher"
NEUTRAL = "neutral"

BETTER = "better"
WORSE = "worse"
SAME = "same"
CHANGED = "changed"
UNKNOWN = "unknown"

JUDGED_EVALUATORS = ("semantic.judge", "human.review")


@dataclass(frozen=True)
class MetricRule:
    name: str
    direction: str
    absolute: float
    relative: float


METRIC_RULES: tuple[MetricRule, ...] = (
    MetricRule("critical_failures", LOWER, 0, 0),
    MetricRule("failed_expectations", LOWER, 0, 0),
    MetricRule("policy_violations", LOWER, 0, 0),
    MetricRule("retries", LOWER, 0, 0),
    MetricRule("duplicate_side_effects", LOWER, 0, 0),
    MetricRule("unsupported_claims", LOWER, 0, 0),
    MetricRule("argument_failures", LOWER, 0, 0),
    MetricRule("steps", LOWER, 0, 0),
    MetricRule("tool_calls", NEUTRAL, 0, 0),
    MetricRule("escalations", NEUTRAL, 0, 0),
    MetricRule("latency_ms", LOWER, 100, 0.2),
    MetricRule("tokens", LOWER, 0, 0.1),
    MetricRule("cost_usd", LOWER, 0, 0.1),
    MetricRule("semantic_score", HIGHER, 0.05, 0),
)
METRIC_NAMES = tuple(rule.name for rule in METRIC_RULES)

Number = int | float


@dataclass(frozen=True)
class MetricComparison:
    name: str
    direction: str
    baseline: Number | None
    candidate: Number | None
    delta: Number | None
    change: str  # better | worse | same | changed | unknown

    def to_dict(self) -> dict[str, JSON]:
        return {
            "name": self.name,
            "direction": self.direction,
            "baseline": self.baseline,
            "candidate": self.candidate,
            "delta": self.delta,
            "change": self.change,
        }


def semantic_scores(graded: GradedCase) -> list[float]:
    """Scores of the semantic expectations a judge (or a person) actually graded."""
    return [
        float(r.score)
        for r in graded.results
        if r.expectation.type == "semantic"
        and r.evaluator in JUDGED_EVALUATORS
        and r.status in (PASS, FAIL)
        and r.score is not None
    ]


def unsupported_claims(graded: GradedCase) -> int | None:
    """Failed claim checks (UNSUPPORTED_CLAIM); None under evaluator sets that do not grade claims."""
    if CLAIM_FINDING_EVALUATOR not in EVALUATOR_SETS.get(graded.evaluator_version, {}):
        return None
    return sum(1 for r in graded.results if r.status == FAIL and r.label == UNSUPPORTED_CLAIM)


def _mean(values: Sequence[float]) -> float | None:
    return round(sum(values) / len(values), 4) if values else None


def side_metrics(graded: GradedCase) -> dict[str, Number | None]:
    """Every metric of one side, from the twin's records and the grading results."""
    case = graded.case
    calls = agent_calls(case.records)
    steps = case.agent_steps if case.agent_steps is not None else len(calls) + 1
    return {
        "critical_failures": graded.verdict.critical_failures,
        "failed_expectations": graded.verdict.failed,
        "policy_violations": sum(1 for r in calls if r.policy_violation),
        "retries": count_retries(case.records),
        "duplicate_side_effects": duplicate_side_effects(case.records),
        "unsupported_claims": unsupported_claims(graded),
        "argument_failures": sum(
            1 for r in graded.results if r.expectation.type == "toolArgs" and r.status == FAIL
        ),
        "steps": steps,
        "tool_calls": len(calls),
        "escalations": sum(1 for r in calls if r.tool in escalation_tools(case)),
        "latency_ms": case.latency_ms,
        "tokens": case.tokens,
        "cost_usd": case.cost_usd,
        "semantic_score": _mean(semantic_scores(graded)),
    }


def _tidy(value: Number) -> Number:
    """Round float noise away so the same inputs always print the same digits."""
    if isinstance(value, float):
        rounded = round(value, 6)
        return int(rounded) if rounded.is_integer() else rounded
    return value


def compare_metric(rule: MetricRule, baseline: Number | None, candidate: Number | None) -> MetricComparison:
    if baseline is None or candidate is None:
        return MetricComparison(rule.name, rule.direction, baseline, candidate, None, UNKNOWN)
    delta = _tidy(candidate - baseline)
    tolerance = max(rule.absolute, rule.relative * abs(baseline))
    if abs(delta) <= tolerance:
        change = SAME
    elif rule.direction == NEUTRAL:
        change = CHANGED
    elif (delta < 0) == (rule.direction == LOWER):
        change = BETTER
    else:
        change = WORSE
    return MetricComparison(rule.name, rule.direction, baseline, candidate, delta, change)


def compare_metrics(
    baseline: dict[str, Number | None] | None, candidate: dict[str, Number | None] | None
) -> tuple[MetricComparison, ...]:
    """All metrics in METRIC_RULES order; a missing side makes every change `unknown`."""
    b = baseline or {}
    c = candidate or {}
    return tuple(compare_metric(rule, b.get(rule.name), c.get(rule.name)) for rule in METRIC_RULES)
