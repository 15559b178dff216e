"""One scenario, baseline against candidate: class, reason, metrics, divergence, diffs (spec §7.4).

`compare_case` reads what each side actually stored. Two cases that did not run the same pinned case
(scenario, scenario hash, twin hash, case seed) are not compared: the case is INCOMPLETE and says why,
because a fault that fired on one side only would otherwise read as a change of the agent.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from evaluation.alignment import (
    AlignedRow,
    StateDifference,
    ToolSelection,
    align,
    state_changes,
    tool_selection,
)
from evaluation.calls import agent_calls
from evaluation.classification import (
    INCOMPLETE,
    Classification,
    ExpectationChange,
    classify,
    expectation_changes,
)
from evaluation.divergence import Divergence, first_divergence
from evaluation.expectations.context import escalation_tools
from evaluation.metrics import (
    MetricComparison,
    Number,
    compare_metrics,
    semantic_scores,
    side_metrics,
)
from evaluation.pairing import BASELINE, CANDIDATE
from evaluation.redaction import case_mask
from evaluation.results import GradedCase
from evaluation.trajectory import Step, build_trajectory, riskiest, tools_used
from evaluation.turns import divergence_with_turn

JSON = Any

MISSING = "MISSING"
HASH_SHOWN = 12


@dataclass(frozen=True)
class SideView:
    """One side of a case as the comparison shows it."""

    status: str  # PASSED | FAILED | ERRORED | ... | MISSING
    reason: str
    case_id: str | None = None
    agent: str | None = None
    scenario_hash: str | None = None
    twin_hash: str | None = None
    case_seed: int | None = None
    labels: tuple[str, ...] = ()
    tools: tuple[str, ...] = ()
    metrics: dict[str, Number | None] | None = None
    semantic_scores: tuple[float, ...] = ()  # judged semantic results, for the run's mean
    timings: dict[str, JSON] = field(default_factory=dict)  # wall clock: the only non-deterministic part
    model_kind: str | None = None  # deterministic-fake | llm | unknown: who planned this side (None: missing)

    def to_dict(self) -> dict[str, JSON]:
        return {
            "case_id": self.case_id,
            "agent": self.agent,
            "model_kind": self.model_kind,
            "status": self.status,
            "reason": self.reason,
            "scenario_hash": self.scenario_hash,
            "twin_hash": self.twin_hash,
            "case_seed": self.case_seed,
            "labels": list(self.labels),
            "tools": list(self.tools),
            "metrics": dict(self.metrics) if self.metrics is not None else None,
            "semantic_scores": list(self.semantic_scores),
            "timings": dict(self.timings),
        }


@dataclass(frozen=True)
class CaseComparison:
    scenario_name: str
    severity: str | None
    tags: tuple[str, ...]
    classification: str
    reason: str
    expectations: tuple[ExpectationChange, ...]
    baseline: SideView
    candidate: SideView
    metrics: tuple[MetricComparison, ...]
    divergence: Divergence | None
    baseline_steps: tuple[Step, ...]
    candidate_steps: tuple[Step, ...]
    alignment: tuple[AlignedRow, ...]
    state_changes: tuple[StateDifference, ...]
    tool_selection: ToolSelection
    risk: str
    trials: dict[str, JSON] | None = None  # only with repeated trials (evaluation/trials.py)

    def to_dict(self) -> dict[str, JSON]:
        doc = self._doc()
        if self.trials is not None:
            doc["trials"] = self.trials
        return doc

    def _doc(self) -> dict[str, JSON]:
        return {
            "scenario": self.scenario_name,
            "severity": self.severity,
            "tags": list(self.tags),
            "classification": self.classification,
            "reason": self.reason,
            "expectations": [e.to_dict() for e in self.expectations],
            "baseline": self.baseline.to_dict(),
            "candidate": self.candidate.to_dict(),
            "metrics": [m.to_dict() for m in self.metrics],
            "divergence": self.divergence.to_dict() if self.divergence else None,
            "trajectories": {
                "baseline": [s.to_dict() for s in self.baseline_steps],
                "candidate": [s.to_dict() for s in self.candidate_steps],
                "alignment": [r.to_dict() for r in self.alignment],
            },
            "state_changes": [s.to_dict() for s in self.state_changes],
            "tool_selection": self.tool_selection.to_dict(),
            "risk": self.risk,
        }

    def expectation_ids(self, change: str, critical: bool | None = None) -> list[str]:
        """Ids of expectations with this change (optionally only critical / non-critical ones)."""
        return [e.id for e in self.expectations if e.change == change and (critical is None or e.critical == critical)]


class ComparisonError(ValueError):
    """compare_case was given nothing to compare."""


def _side_view(graded: GradedCase | None, side: str) -> SideView:
    if graded is None:
        return SideView(status=MISSING, reason=f"No {side.lower()} case was stored for this scenario.")
    case = graded.case
    return SideView(
        status=graded.verdict.status,
        reason=graded.verdict.reason,
        case_id=case.case_id,
        agent=case.agent,
        scenario_hash=case.scenario_hash,
        twin_hash=case.twin_hash,
        case_seed=case.case_seed,
        labels=tuple(graded.verdict.labels),
        tools=tools_used(case),
        metrics=side_metrics(graded),
        semantic_scores=tuple(semantic_scores(graded)),
        timings=dict(case.timings),
        model_kind=case.model_kind,
    )


def _short(value: JSON) -> str:
    text = str(value)
    return text[:HASH_SHOWN] if len(text) > HASH_SHOWN else text


def pin_mismatches(baseline: GradedCase, candidate: GradedCase) -> list[str]:
    """How the two stored cases differ in what should have been pinned identically."""
    b, c = baseline.case, candidate.case
    found: list[str] = []
    checks = (
        ("scenario", b.scenario_name, c.scenario_name, False),
        ("scenario hash", b.scenario_hash, c.scenario_hash, True),
        ("twin hash", b.twin_hash, c.twin_hash, True),
        ("case seed", b.case_seed, c.case_seed, False),
    )
    for what, bv, cv, is_hash in checks:
        if bv != cv:
            bs, cs = (_short(bv), _short(cv)) if is_hash else (str(bv), str(cv))
            found.append(f"{what} {bs} (baseline) vs {cs} (candidate)")
    return found


def pin_mismatch_reason(mismatches: list[str]) -> str:
    return f"Not comparable: the two sides did not run the same pinned case ({'; '.join(mismatches)})."


def _escalation_tools(baseline: GradedCase, candidate: GradedCase) -> tuple[str, ...]:
    """Both sides' escalation tools (one pinned case declares the same ones on both sides)."""
    return tuple(dict.fromkeys((*escalation_tools(baseline.case), *escalation_tools(candidate.case))))


def compare_case(baseline: GradedCase | None, candidate: GradedCase | None) -> CaseComparison:
    """Compare one scenario's baseline case with its candidate case. A missing side is MISSING."""
    if baseline is None and candidate is None:
        raise ComparisonError("compare_case needs at least one side")
    ref = candidate if candidate is not None else baseline
    assert ref is not None
    b_view, c_view = _side_view(baseline, BASELINE), _side_view(candidate, CANDIDATE)
    changes = expectation_changes(baseline.results if baseline else (), candidate.results if candidate else ())
    mismatches = pin_mismatches(baseline, candidate) if baseline and candidate else []
    if mismatches:
        verdict = Classification(INCOMPLETE, pin_mismatch_reason(mismatches))
    else:
        verdict = classify(b_view.status, b_view.reason, c_view.status, c_view.reason, changes)
    b_steps = build_trajectory(baseline.case) if baseline else ()
    c_steps = build_trajectory(candidate.case) if candidate else ()
    divergence = (
        first_divergence(b_steps, c_steps, _escalation_tools(baseline, candidate))
        if baseline and candidate
        else None
    )
    if baseline and candidate:
        divergence = divergence_with_turn(divergence, b_steps, c_steps, baseline.case, candidate.case)
    touched = [r.risk for g in (baseline, candidate) if g is not None for r in agent_calls(g.case.records)]
    # derived from both sides' evidence (steps quote arguments): every secret of either side masked
    mask = case_mask(baseline.case if baseline else None, candidate.case if candidate else None)
    return mask.value(CaseComparison(
        scenario_name=ref.case.scenario_name,
        severity=ref.case.severity,
        tags=tuple(ref.case.tags),
        classification=verdict.classification,
        reason=verdict.reason,
        expectations=changes,
        baseline=b_view,
        candidate=c_view,
        metrics=compare_metrics(b_view.metrics, c_view.metrics),
        divergence=divergence,
        baseline_steps=b_steps,
        candidate_steps=c_steps,
        alignment=align(b_steps, c_steps),
        state_changes=state_changes(
            baseline.case.final_state if baseline else None, candidate.case.final_state if candidate else None
        ),
        tool_selection=tool_selection(b_view.tools, c_view.tools),
        risk=riskiest(touched),
    ))
