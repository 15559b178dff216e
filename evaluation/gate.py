"""The release gate: PASS, WARN or BLOCK for one evaluation under a policy.

Pure. The facts are the evaluation's compared cases (classification, reason, severity, tags, the two
sides' metrics), the candidate's contradictions (a success claim the twin's state disproved) and the
metrics computed from them; `agenttwin.release_gate` reads them from the projections. The decision is
the strictest action any rule gives; every rule that fired is a reason naming what caused it.

Case rules: the action for the case's classification, overridden by its severity's rule, overridden in
turn by its tags' rules (the strictest matching tag wins). A metric rule fires when the value is below
`min` or above `max`; a metric that cannot be computed (e.g. cost nobody reported) WARNs, never passes.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from evaluation.classification import (
    ALL_CLASSIFICATIONS,
    FLAKY,
    IMPROVED,
    INCOMPLETE,
    NEW_CRITICAL_FAILURE,
    REGRESSED,
    UNCHANGED,
)
from evaluation.comparison import SideView
from evaluation.summary import SUMMED, side_totals
from twin_engine.canonical import sha256_hex

JSON = Any

PASS, WARN, BLOCK = "PASS", "WARN", "BLOCK"
ACTIONS = (PASS, WARN, BLOCK)  # least to most strict
EXIT_PASS, EXIT_BLOCK = 0, 1

DEFAULT_CLASSIFICATION_ACTIONS: Mapping[str, str] = {
    NEW_CRITICAL_FAILURE: BLOCK,
    REGRESSED: WARN,
    INCOMPLETE: WARN,
    FLAKY: PASS,
    IMPROVED: PASS,
    UNCHANGED: PASS,
}
_SIDE_METRICS: tuple[str, ...] = ("cases", "passed", "failed", "incomplete", "pass_rate", *SUMMED)
_SIDE_METRICS += ("latency_ms_p50", "latency_ms_p95", "tokens", "cost_usd", "semantic_score")
KNOWN_METRICS: tuple[str, ...] = (
    "cases",
    "contradictions",
    *(f"counts.{c}" for c in ALL_CLASSIFICATIONS),
    *(f"{side}.{m}" for side in ("baseline", "candidate", "delta") for m in _SIDE_METRICS),
)
_RULE_WORDS = {
    NEW_CRITICAL_FAILURE: ("new critical failure", "new critical failures"),
    REGRESSED: ("regressed case", "regressed cases"),
    INCOMPLETE: ("incomplete case", "incomplete cases"),
    FLAKY: ("flaky case", "flaky cases"),
    IMPROVED: ("improved case", "improved cases"),
    UNCHANGED: ("unchanged case", "unchanged cases"),
    "contradiction": ("contradiction", "contradictions"),
}


class GateError(ValueError):
    """The gate cannot decide (no compared case) or a policy names something unknown."""


def strictest(actions: Sequence[str]) -> str:
    return max(actions, key=ACTIONS.index, default=PASS)


@dataclass(frozen=True)
class MetricRule:
    metric: str
    action: str  # WARN | BLOCK
    min: float | None = None
    max: float | None = None

    def to_dict(self) -> dict[str, JSON]:
        return {"metric": self.metric, "action": self.action, "min": self.min, "max": self.max}


@dataclass(frozen=True)
class GatePolicy:
    name: str = "default"
    classifications: Mapping[str, str] = field(default_factory=lambda: dict(DEFAULT_CLASSIFICATION_ACTIONS))
    contradictions: str = BLOCK
    severities: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    tags: Mapping[str, Mapping[str, str]] = field(default_factory=dict)
    metrics: tuple[MetricRule, ...] = ()

    def to_dict(self) -> dict[str, JSON]:
        """The effective policy (defaults filled in): what its hash covers."""
        return {
            "name": self.name,
            "classifications": dict(sorted(self.classifications.items())),
            "contradictions": self.contradictions,
            "severities": {k: dict(sorted(v.items())) for k, v in sorted(self.severities.items())},
            "tags": {k: dict(sorted(v.items())) for k, v in sorted(self.tags.items())},
            "metrics": [m.to_dict() for m in self.metrics],
        }

    @property
    def hash(self) -> str:
        return sha256_hex(self.to_dict())


DEFAULT_POLICY = GatePolicy()


def policy_from_spec(name: str, spec: Mapping[str, JSON]) -> GatePolicy:
    """A policy from a validated `spec` mapping: what it leaves out keeps the default."""
    metrics = []
    for n, rule in enumerate(spec.get("metrics") or ()):
        metric = str(rule["metric"])
        if metric not in KNOWN_METRICS:
            guess = difflib.get_close_matches(metric, KNOWN_METRICS, n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else f"; known: {', '.join(KNOWN_METRICS)}"
            raise GateError(f"spec.metrics[{n}].metric: unknown metric '{metric}'{hint}")
        low, high = rule.get("min"), rule.get("max")
        metrics.append(
            MetricRule(
                metric=metric,
                action=str(rule["action"]),
                min=None if low is None else float(low),
                max=None if high is None else float(high),
            )
        )
    return GatePolicy(
        name=name,
        classifications={**DEFAULT_CLASSIFICATION_ACTIONS, **dict(spec.get("classifications") or {})},
        contradictions=str(spec.get("contradictions", BLOCK)),
        severities={k: dict(v) for k, v in (spec.get("severities") or {}).items()},
        tags={k: dict(v) for k, v in (spec.get("tags") or {}).items()},
        metrics=tuple(metrics),
    )


# --- facts ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateCase:
    scenario: str
    classification: str
    reason: str
    severity: str = "medium"
    tags: tuple[str, ...] = ()

    def to_dict(self) -> dict[str, JSON]:
        return {
            "scenario": self.scenario,
            "classification": self.classification,
            "reason": self.reason,
            "severity": self.severity,
            "tags": list(self.tags),
        }


@dataclass(frozen=True)
class GateContradiction:
    """A candidate's success claim the twin's state disproved (from the outcome join)."""

    scenario: str
    agent: str
    claimed: str
    verified: str
    detail: str
    case_id: str = ""

    def to_dict(self) -> dict[str, JSON]:
        return {
            "scenario": self.scenario,
            "agent": self.agent,
            "claimed": self.claimed,
            "verified": self.verified,
            "detail": self.detail,
            "case_id": self.case_id,
        }


@dataclass(frozen=True)
class GateFacts:
    cases: tuple[GateCase, ...]
    contradictions: tuple[GateContradiction, ...]
    metrics: Mapping[str, float | None]

    def to_dict(self) -> dict[str, JSON]:
        return {
            "cases": [c.to_dict() for c in self.cases],
            "contradictions": [k.to_dict() for k in self.contradictions],
            "metrics": dict(sorted(self.metrics.items())),
        }

    @property
    def hash(self) -> str:
        return sha256_hex(self.to_dict())


def _side_view(doc: Mapping[str, JSON]) -> SideView:
    return SideView(
        status=str(doc.get("status")),
        reason=str(doc.get("reason", "")),
        metrics=doc.get("metrics"),
        semantic_scores=tuple(doc.get("semantic_scores") or ()),
    )


def _number(value: JSON) -> float | None:
    return None if value is None or isinstance(value, bool) else float(value)


def metrics_of(case_docs: Sequence[Mapping[str, JSON]], contradictions: int) -> dict[str, float | None]:
    """Every KNOWN_METRICS value, from the comparison documents (the same totals as the report's summary)."""
    out: dict[str, float | None] = {"cases": float(len(case_docs)), "contradictions": float(contradictions)}
    for cls in ALL_CLASSIFICATIONS:
        out[f"counts.{cls}"] = float(sum(1 for d in case_docs if d.get("classification") == cls))
    for side in ("baseline", "candidate"):
        totals = side_totals(_side_view(d[side]) for d in case_docs if isinstance(d.get(side), Mapping))
        cases = int(totals["cases"])
        totals["pass_rate"] = round(int(totals["passed"]) / cases, 4) if cases else None
        for m in _SIDE_METRICS:
            out[f"{side}.{m}"] = _number(totals.get(m))
    for m in _SIDE_METRICS:
        b, c = out[f"baseline.{m}"], out[f"candidate.{m}"]
        out[f"delta.{m}"] = None if b is None or c is None else round(c - b, 6)
    return out


def facts_from_documents(
    case_docs: Sequence[Mapping[str, JSON]], contradictions: Sequence[GateContradiction]
) -> GateFacts:
    """The gate's facts from comparison documents (`CaseComparison.to_dict()`, as stored) and contradictions."""
    cases = tuple(
        sorted(
            (
                GateCase(
                    scenario=str(d["scenario"]),
                    classification=str(d["classification"]),
                    reason=str(d["reason"]),
                    severity=str(d.get("severity") or "medium"),
                    tags=tuple(d.get("tags") or ()),
                )
                for d in case_docs
            ),
            key=lambda c: c.scenario,
        )
    )
    ordered = tuple(sorted(contradictions, key=lambda k: (k.scenario, k.case_id, k.detail)))
    return GateFacts(cases=cases, contradictions=ordered, metrics=metrics_of(case_docs, len(ordered)))


# --- the decision -----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GateReason:
    action: str  # WARN | BLOCK
    rule: str  # e.g. classification:REGRESSED, contradiction, metric:candidate.retries
    scenario: str | None
    message: str

    def to_dict(self) -> dict[str, JSON]:
        return {"action": self.action, "rule": self.rule, "scenario": self.scenario, "message": self.message}


@dataclass(frozen=True)
class GateDecision:
    decision: str
    summary: str
    reasons: tuple[GateReason, ...]
    policy: GatePolicy
    cases: int
    inputs_hash: str

    @property
    def blocking(self) -> int:
        return sum(1 for r in self.reasons if r.action == BLOCK)

    @property
    def warnings(self) -> int:
        return sum(1 for r in self.reasons if r.action == WARN)

    def exit_status(self, warn_exit: int = 0) -> int:
        """0 for PASS, 1 for BLOCK, `warn_exit` for WARN."""
        return {PASS: EXIT_PASS, BLOCK: EXIT_BLOCK}.get(self.decision, warn_exit)

    def to_dict(self) -> dict[str, JSON]:
        return {
            "decision": self.decision,
            "summary": self.summary,
            "reasons": [r.to_dict() for r in self.reasons],
            "policy": {"name": self.policy.name, "hash": self.policy.hash},
            "cases": self.cases,
            "blocking": self.blocking,
            "warnings": self.warnings,
            "inputs_hash": self.inputs_hash,
        }


def case_action(policy: GatePolicy, case: GateCase) -> str:
    cls = case.classification
    by_tag = [policy.tags[t][cls] for t in case.tags if cls in policy.tags.get(t, {})]
    if by_tag:
        return strictest(by_tag)
    by_severity = policy.severities.get(case.severity, {}).get(cls)
    if by_severity is not None:
        return by_severity
    return policy.classifications.get(cls, WARN)  # a class this policy does not know is never a silent pass


def _metric_reason(rule: MetricRule, value: float | None) -> GateReason | None:
    rule_name = f"metric:{rule.metric}"
    if value is None:
        return GateReason(WARN, rule_name, None, f"{rule.metric} could not be computed (no known values)")
    if rule.max is not None and value > rule.max:
        return GateReason(rule.action, rule_name, None, f"{rule.metric} is {value:g}, above the maximum {rule.max:g}")
    if rule.min is not None and value < rule.min:
        return GateReason(rule.action, rule_name, None, f"{rule.metric} is {value:g}, below the minimum {rule.min:g}")
    return None


def _summary(decision: str, reasons: Sequence[GateReason], cases: int) -> str:
    if not reasons:
        return f"{decision}: no rule triggered over {cases} compared case{'s' if cases != 1 else ''}."
    groups: dict[tuple[str, str], list[GateReason]] = {}
    for r in reasons:
        groups.setdefault((r.action, r.rule), []).append(r)
    parts: list[str] = []
    for action in (BLOCK, WARN):
        items = []
        for (act, rule), rs in groups.items():
            if act != action:
                continue
            if rule.startswith("metric:"):
                items.append(rs[0].message)
                continue
            key = rule.split(":", 1)[-1] if rule.startswith("classification:") else rule
            one, many = _RULE_WORDS.get(key, (key, key))
            names = ", ".join(dict.fromkeys(r.scenario or "" for r in rs))
            items.append(f"{len(rs)} {one if len(rs) == 1 else many} ({names})")
        if items:
            parts.append(f"{action} on " + "; ".join(items))
    return ". ".join(parts) + "."


def _evidence(detail: str) -> str:
    # the outcome join's detail repeats the claim and the status before its evidence
    head, sep, rest = detail.partition(": ")
    return rest if sep and head.startswith("claimed ") else detail


def decide(policy: GatePolicy, facts: GateFacts) -> GateDecision:
    if not facts.cases:
        raise GateError("nothing to decide: the evaluation has no compared case")
    reasons: list[GateReason] = []
    for case in facts.cases:
        action = case_action(policy, case)
        if action != PASS:
            reasons.append(GateReason(action, f"classification:{case.classification}", case.scenario, case.reason))
    if policy.contradictions != PASS:
        for k in facts.contradictions:
            reasons.append(
                GateReason(
                    policy.contradictions,
                    "contradiction",
                    k.scenario,
                    f"{k.agent} claimed {k.claimed}, the twin's state says {k.verified}: {_evidence(k.detail)}",
                )
            )
    for rule in policy.metrics:
        reason = _metric_reason(rule, facts.metrics.get(rule.metric))
        if reason is not None:
            reasons.append(reason)
    ordered = tuple(sorted(reasons, key=lambda r: -ACTIONS.index(r.action)))  # stable: rule order kept
    decision = strictest([r.action for r in ordered])
    return GateDecision(
        decision=decision,
        summary=_summary(decision, ordered, len(facts.cases)),
        reasons=ordered,
        policy=policy,
        cases=len(facts.cases),
        inputs_hash=facts.hash,
    )
