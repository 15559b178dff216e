"""What a report shows, as plain data: one view per evaluation, built from the stored evaluation and a gate
decision. The renderers (JUnit, Markdown, HTML) only lay this out; they decide nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from agenttwin.stored_evaluation import StoredContradiction, StoredEvaluation
from evaluation.classification import ALL_CLASSIFICATIONS
from evaluation.gate import GateDecision, metrics_of
from evaluation.redaction import case_mask
from evaluation.results import GradedCase
from evaluation.summary import SUMMED

JSON = Any
CHANGED = ("NEW_CRITICAL_FAILURE", "REGRESSED", "FLAKY", "INCOMPLETE", "IMPROVED")
CLASS_WORDS = {
    "NEW_CRITICAL_FAILURE": ("new critical failure", "new critical failures"),
    "REGRESSED": ("regressed", "regressed"),
    "FLAKY": ("flaky", "flaky"),
    "IMPROVED": ("improved", "improved"),
    "UNCHANGED": ("unchanged", "unchanged"),
    "INCOMPLETE": ("incomplete", "incomplete"),
}
CHART_METRICS = ("passed", "failed", *SUMMED)


@dataclass(frozen=True)
class LockstepRow:
    step: int
    baseline: str | None
    candidate: str | None
    baseline_note: str
    candidate_note: str
    state: str  # same | diverged (the first divergence) | after


@dataclass(frozen=True)
class ExpectationRow:
    id: str
    type: str
    critical: bool
    change: str
    baseline: str | None
    candidate: str | None
    baseline_evidence: tuple[str, ...]
    candidate_evidence: tuple[str, ...]
    candidate_reason: str | None


@dataclass(frozen=True)
class CaseView:
    scenario: str
    classification: str
    reason: str
    severity: str
    tags: tuple[str, ...]
    baseline_status: str
    candidate_status: str
    divergence: Mapping[str, JSON] | None
    lockstep: tuple[LockstepRow, ...]
    state_changes: tuple[Mapping[str, JSON], ...]
    expectations: tuple[ExpectationRow, ...]
    contradictions: tuple[StoredContradiction, ...]
    trials: Mapping[str, JSON] | None
    baseline_reply: str | None
    candidate_reply: str | None

    @property
    def changed(self) -> bool:
        return self.classification in CHANGED or bool(self.contradictions)

    @property
    def anchor(self) -> str:
        return "case-" + self.scenario


@dataclass(frozen=True)
class Bar:
    label: str
    value: float
    width: float  # 0..1 of the chart's bar area


@dataclass(frozen=True)
class MetricBars:
    name: str
    baseline: Bar
    candidate: Bar
    worse: bool


@dataclass(frozen=True)
class EvaluationView:
    evaluation_id: str
    evaluator_version: str
    baseline_agent: str
    candidate_agent: str
    run_seed: int | None
    trials: int
    gate: GateDecision
    counts: tuple[tuple[str, int], ...]  # classification -> cases, only classes that occur
    class_bars: tuple[Bar, ...]
    metric_bars: tuple[MetricBars, ...]
    contradictions: tuple[StoredContradiction, ...]
    cases: tuple[CaseView, ...]

    @property
    def counts_line(self) -> str:
        words = [f"{n} {CLASS_WORDS.get(c, (c.lower(), c.lower()))[n != 1]}" for c, n in self.counts]
        return " · ".join(words) or "no cases"

    @property
    def title(self) -> str:
        return f"{self.candidate_agent} (candidate) vs {self.baseline_agent} (baseline)"


def _evidence(graded: GradedCase | None, expectation_id: str) -> tuple[str, ...]:
    if graded is None:
        return ()
    for result in graded.results:
        if result.expectation.id == expectation_id:
            details = [e.detail for e in result.evidence if e.detail]
            return tuple(details) if details else ((result.reason,) if result.reason else ())
    return ()


def _lockstep(doc: Mapping[str, JSON]) -> tuple[LockstepRow, ...]:
    trajectories = doc.get("trajectories") or {}
    base, cand = trajectories.get("baseline") or [], trajectories.get("candidate") or []
    divergence = doc.get("divergence") or {}
    at = divergence.get("index")
    rows = []
    for i in range(max(len(base), len(cand))):
        b = base[i] if i < len(base) else None
        c = cand[i] if i < len(cand) else None
        step = i + 1
        state = "same" if at is None or step < at else ("diverged" if step == at else "after")
        rows.append(
            LockstepRow(
                step=step,
                baseline=b["label"] if b else None,
                candidate=c["label"] if c else None,
                baseline_note=_note(b),
                candidate_note=_note(c),
                state=state,
            )
        )
    return tuple(rows)


def _note(step: Mapping[str, JSON] | None) -> str:
    if not step or step.get("kind") != "TOOL":
        return ""
    parts = [str(step.get("status") or "")]
    if step.get("risk"):
        parts.append(str(step["risk"]))
    if step.get("effect"):
        parts.append(f"effect {step['effect']}")
    return " · ".join(p for p in parts if p)


def _case_view(
    doc: Mapping[str, JSON], stored: StoredEvaluation, contradictions: Sequence[StoredContradiction]
) -> CaseView:
    base_id = (doc.get("baseline") or {}).get("case_id")
    cand_id = (doc.get("candidate") or {}).get("case_id")
    base_graded = stored.graded.get(str(base_id)) if base_id else None
    cand_graded = stored.graded.get(str(cand_id)) if cand_id else None
    expectations = tuple(
        ExpectationRow(
            id=str(e["id"]),
            type=str(e["type"]),
            critical=bool(e["critical"]),
            change=str(e["change"]),
            baseline=e.get("baseline"),
            candidate=e.get("candidate"),
            baseline_evidence=_evidence(base_graded, str(e["id"])),
            candidate_evidence=_evidence(cand_graded, str(e["id"])),
            candidate_reason=e.get("candidate_reason"),
        )
        for e in doc.get("expectations") or ()
    )
    return CaseView(
        scenario=str(doc["scenario"]),
        classification=str(doc["classification"]),
        reason=str(doc["reason"]),
        severity=str(doc.get("severity") or ""),
        tags=tuple(doc.get("tags") or ()),
        baseline_status=str((doc.get("baseline") or {}).get("status")),
        candidate_status=str((doc.get("candidate") or {}).get("status")),
        divergence=doc.get("divergence"),
        lockstep=_lockstep(doc),
        state_changes=tuple(doc.get("state_changes") or ()),
        expectations=expectations,
        contradictions=tuple(k for k in contradictions if k.scenario == doc["scenario"]),
        trials=doc.get("trials"),
        baseline_reply=_shown_reply(base_graded),
        candidate_reply=_shown_reply(cand_graded),
    )


def _shown_reply(graded: GradedCase | None) -> str | None:
    """The agent's raw reply, with the case's secrets masked: a report is a derived text."""
    if graded is None or graded.case.output is None:
        return None
    return case_mask(graded.case).text(graded.case.output)


def _rank(classification: str) -> int:
    return ALL_CLASSIFICATIONS.index(classification) if classification in ALL_CLASSIFICATIONS else -1


def build_view(stored: StoredEvaluation, decision: GateDecision) -> EvaluationView:
    docs = stored.case_docs
    cases = tuple(
        sorted(
            (_case_view(d, stored, stored.contradictions) for d in docs),
            key=lambda c: (_rank(c.classification), c.scenario),
        )
    )
    counts_map: dict[str, int] = {}
    for c in cases:
        counts_map[c.classification] = counts_map.get(c.classification, 0) + 1
    counts = tuple(sorted(counts_map.items(), key=lambda kv: _rank(kv[0])))
    top = max((n for _, n in counts), default=1)
    class_bars = tuple(Bar(cls, float(n), n / top) for cls, n in counts)
    metrics = metrics_of(docs, len(stored.candidate_contradictions))
    metric_bars = []
    for name in CHART_METRICS:
        before, after = metrics.get(f"baseline.{name}"), metrics.get(f"candidate.{name}")
        if before is None or after is None or before == after:
            continue
        scale = max(before, after) or 1.0
        # more passes is better; more of any summed count is worse, except escalations (neither)
        worse = (after < before) if name == "passed" else (after > before) if name != "escalations" else False
        metric_bars.append(
            MetricBars(name, Bar("baseline", before, before / scale), Bar("candidate", after, after / scale), worse)
        )
    return EvaluationView(
        evaluation_id=stored.evaluation_id,
        evaluator_version=stored.evaluator_version,
        baseline_agent=stored.baseline_agent,
        candidate_agent=stored.candidate_agent,
        run_seed=stored.run_seed,
        trials=stored.trials,
        gate=decision,
        counts=counts,
        class_bars=class_bars,
        metric_bars=tuple(metric_bars),
        contradictions=stored.contradictions,
        cases=cases,
    )
