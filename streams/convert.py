"""Records <-> events. The pure logic works on records; topics carry events; this is the only bridge."""

from __future__ import annotations

import json
from collections.abc import Sequence
from datetime import datetime
from typing import Any

from evaluation.case import AgentFinding, CaseRun, TurnRecord, claim_notes
from evaluation.codec import graded_from_dict, graded_to_dict
from evaluation.comparison import CaseComparison
from evaluation.results import GradedCase
from evaluation.retries import retry_seqs
from streams import ids
from streams.events import (
    CaseFinished,
    CaseVerdicted,
    ComparisonMade,
    ExpectationResulted,
    OutcomeVerified,
    TwinCallRecorded,
)
from twin_engine.canonical import canonical_json
from twin_engine.records import CallRecord, RetrievalRecord, StateChange

JSON = Any


def _js(value: JSON) -> str:
    return canonical_json(value)


def _opt_js(value: JSON) -> str | None:
    return None if value is None else canonical_json(value)


def case_time(case: CaseRun) -> datetime:
    now = case.context.get("now") if isinstance(case.context, dict) else None
    return ids.parse_time(str(now) if now else None)


def case_events(case: CaseRun, *, evaluation_id: str | None, side: str) -> list[TwinCallRecorded | CaseFinished]:
    """A finished case as events: every twin record (in seq order), then the case itself."""
    at = case_time(case)
    trace_id = ids.trace_id_for_case(case.case_id)
    retried = set(retry_seqs(case.records))
    common: dict[str, Any] = {"occurred_at": at, "correlation_id": case.case_id, "tenant": case.tenant}
    out: list[TwinCallRecorded | CaseFinished] = []
    for r in case.records:
        out.append(
            TwinCallRecorded(
                event_id=ids.event_id("TwinCallRecorded", case.case_id, r.seq, r.redelivered),
                case_id=case.case_id,
                evaluation_id=evaluation_id,
                seq=r.seq,
                kind="tool",
                call_number=r.call_number,
                tool=r.tool,
                arguments_json=_js(r.arguments),
                http_status=r.http_status,
                status=r.status,
                error_code=r.error_code,
                response_json=_opt_js(r.response),
                risk=r.risk,
                fault=r.fault,
                mutated=r.mutated,
                expects_mutation=r.expects_mutation,
                replayed=r.replayed,
                effect_key=r.effect_key,
                cross_tenant=r.cross_tenant,
                policy_violation=r.policy_violation,
                redelivered=r.redelivered,
                changes_json=_js([c.to_dict() for c in r.changes]),
                delay_ms=r.delay_ms,
                idempotency_key=r.idempotency_key,
                retry=r.seq in retried,
                **common,
            )
        )
    for q in case.retrievals:
        out.append(
            TwinCallRecorded(
                event_id=ids.event_id("TwinCallRecorded", case.case_id, q.seq, False),
                case_id=case.case_id,
                evaluation_id=evaluation_id,
                seq=q.seq,
                kind="retrieval",
                call_number=0,
                tool="search_knowledge_base",
                arguments_json=_js({"query": q.query, "limit": q.limit}),
                http_status=400 if q.refused else 200,
                status="invalid" if q.refused else "ok",
                error_code=q.refused,
                changes_json="[]",
                mutated=False,
                expects_mutation=False,
                replayed=False,
                redelivered=False,
                delay_ms=0,
                retry=False,
                query=q.query,
                retrieval_limit=q.limit,
                documents_json=_js(list(q.documents)),
                **common,
            )
        )
    out.sort(key=lambda e: (e.seq, e.redelivered) if isinstance(e, TwinCallRecorded) else (0, False))
    finding = case.agent_finding
    out.append(
        CaseFinished(
            event_id=ids.event_id("CaseFinished", case.case_id),
            case_id=case.case_id,
            evaluation_id=evaluation_id,
            side=side,
            trace_id=trace_id,
            scenario_name=case.scenario_name,
            scenario_hash=case.scenario_hash,
            twin_name=case.twin_name,
            twin_hash=case.twin_hash,
            case_seed=case.case_seed,
            agent=case.agent,
            agent_version=case.agent_version,
            severity=case.severity,
            tags=list(case.tags),
            record_count=len(case.records) + len(case.retrievals),
            input_message=case.input_message,
            context_json=_js(case.context),
            expectations_json=_js(list(case.expectations)),
            secrets=list(case.secrets),
            initial_state_json=_opt_js(case.initial_state),
            final_state_json=_opt_js(case.final_state),
            state_hash=case.state_hash,
            output=case.output,
            claimed_outcome=case.claimed_outcome,
            business_outcome=case.business_outcome,
            agent_status=case.agent_status,
            agent_steps=case.agent_steps,
            claimed_calls_json=_js(list(case.claimed_calls)),
            tokens=case.tokens,
            cost_usd=case.cost_usd,
            model_kind=case.model_kind,
            agent_finding_label=finding.label if finding else None,
            agent_finding_message=finding.message if finding else None,
            latency_ms=case.latency_ms,
            escalation_tools=list(case.escalation_tools),
            claim_findings_json=_js([n.to_dict() for n in case.claim_findings]) if case.claim_findings else None,
            conversation_json=_js([t.to_dict() for t in case.turns]) if case.turns else None,
            **common,
        )
    )
    return out


def _load(text: str | None) -> JSON:
    return None if text is None else json.loads(text)


def record_from_event(e: TwinCallRecorded) -> CallRecord | RetrievalRecord:
    if e.kind == "retrieval":
        return RetrievalRecord(
            seq=e.seq,
            query=e.query or "",
            limit=e.retrieval_limit or 0,
            documents=tuple(_load(e.documents_json) or ()),
            refused=e.error_code,
        )
    return CallRecord(
        seq=e.seq,
        call_number=e.call_number,
        tool=e.tool,
        arguments=_load(e.arguments_json),
        http_status=e.http_status,
        status=e.status,
        error_code=e.error_code,
        response=_load(e.response_json),
        risk=e.risk,
        fault=e.fault,
        mutated=e.mutated,
        expects_mutation=e.expects_mutation,
        replayed=e.replayed,
        effect_key=e.effect_key,
        cross_tenant=e.cross_tenant,
        policy_violation=e.policy_violation,
        redelivered=e.redelivered,
        changes=tuple(StateChange(**c) for c in _load(e.changes_json) or ()),
        delay_ms=e.delay_ms,
        idempotency_key=e.idempotency_key,
    )


def case_from_events(finished: CaseFinished, calls: Sequence[TwinCallRecorded]) -> CaseRun:
    """Rebuild the case record from its events (calls in any order; duplicates already removed)."""
    records = [record_from_event(c) for c in sorted(calls, key=lambda c: (c.seq, c.redelivered))]
    finding = (
        AgentFinding(finished.agent_finding_label, finished.agent_finding_message or "")
        if finished.agent_finding_label
        else None
    )
    return CaseRun(
        case_id=finished.case_id,
        scenario_name=finished.scenario_name,
        scenario_hash=finished.scenario_hash,
        twin_name=finished.twin_name,
        twin_hash=finished.twin_hash,
        case_seed=finished.case_seed,
        agent=finished.agent,
        agent_version=finished.agent_version,
        severity=finished.severity,
        tags=tuple(finished.tags),
        input_message=finished.input_message,
        context=_load(finished.context_json) or {},
        tenant=finished.tenant,
        expectations=tuple(_load(finished.expectations_json) or ()),
        secrets=tuple(finished.secrets),
        records=tuple(r for r in records if isinstance(r, CallRecord)),
        retrievals=tuple(r for r in records if isinstance(r, RetrievalRecord)),
        initial_state=_load(finished.initial_state_json),
        final_state=_load(finished.final_state_json),
        state_hash=finished.state_hash,
        output=finished.output,
        claimed_outcome=finished.claimed_outcome,
        business_outcome=finished.business_outcome,
        agent_status=finished.agent_status,
        agent_steps=finished.agent_steps,
        claimed_calls=tuple(_load(finished.claimed_calls_json) or ()),
        tokens=finished.tokens,
        cost_usd=finished.cost_usd,
        model_kind=finished.model_kind,
        agent_finding=finding,
        latency_ms=finished.latency_ms,
        escalation_tools=tuple(finished.escalation_tools),
        claim_findings=claim_notes(_load(finished.claim_findings_json)) if finished.claim_findings_json else (),
        turns=tuple(TurnRecord.from_dict(t) for t in _load(finished.conversation_json) or ()),
    )


def graded_events(
    graded: GradedCase, *, evaluation_id: str | None, side: str, at: datetime
) -> list[ExpectationResulted | CaseVerdicted | OutcomeVerified]:
    """A graded case as events: each expectation result, the verdict, the verified outcome."""
    case: CaseRun = graded.case
    version = graded.evaluator_version
    common: dict[str, Any] = {"occurred_at": at, "tenant": case.tenant}
    out: list[ExpectationResulted | CaseVerdicted | OutcomeVerified] = []
    for r in graded.results:
        out.append(
            ExpectationResulted(
                event_id=ids.event_id("ExpectationResulted", case.case_id, version, r.expectation.id),
                correlation_id=case.case_id,
                case_id=case.case_id,
                evaluation_id=evaluation_id,
                side=side,
                scenario_name=case.scenario_name,
                evaluator_version=version,
                expectation_id=r.expectation.id,
                expectation_type=r.expectation.type,
                critical=r.expectation.critical,
                status=r.status,
                reason=r.reason,
                evaluator=r.evaluator,
                evaluator_impl_version=r.evaluator_version,
                score=r.score,
                label=r.label,
                evidence_json=_js([e.to_dict() for e in r.evidence]),
                details_json=_js(r.details),
                **common,
            )
        )
    v = graded.verdict
    out.append(
        CaseVerdicted(
            event_id=ids.event_id("CaseVerdicted", case.case_id, version),
            correlation_id=evaluation_id or case.case_id,
            evaluation_id=evaluation_id or "",
            case_id=case.case_id,
            side=side,
            scenario_name=case.scenario_name,
            evaluator_version=version,
            status=v.status,
            reason=v.reason,
            passed=v.passed,
            failed=v.failed,
            errored=v.errored,
            skipped=v.skipped,
            critical_failures=v.critical_failures,
            score=v.score,
            labels=list(v.labels),
            case_seed=case.case_seed,
            scenario_hash=case.scenario_hash,
            agent=case.agent,
            agent_version=case.agent_version,
            graded_json=_js(graded_to_dict(graded)),
            **common,
        )
    )
    o = graded.verified
    trace_id = ids.trace_id_for_case(case.case_id)
    # Posted onto the agent's own trace, under the simulation's reserved tenant like its spans.
    tenant = ids.simulation_tenant(case.tenant)
    out.append(
        OutcomeVerified(
            event_id=ids.verification_event_id(tenant, trace_id, version),
            received_at=at,
            correlation_id=trace_id,
            trace_id=trace_id,
            case_id=case.case_id,
            evaluation_id=evaluation_id,
            evaluator_version=version,
            status=o.status,
            verified=o.verified,
            source=o.source,
            claimed_status=o.claimed_status,
            business_outcome=o.business_outcome,
            reason=o.reason,
            agent=case.agent,
            agent_version=case.agent_version,
            **{**common, "tenant": tenant},
        )
    )
    return out


def graded_from_verdict(event: CaseVerdicted) -> GradedCase:
    return graded_from_dict(json.loads(event.graded_json))


def comparison_event(
    comparison: CaseComparison,
    *,
    evaluation_id: str,
    evaluator_version: str,
    baseline_agent: str,
    candidate_agent: str,
    severity: str,
    tags: Sequence[str],
    at: datetime,
) -> ComparisonMade:
    doc = comparison.to_dict()
    div = doc.get("divergence") or {}
    base, cand = doc.get("baseline") or {}, doc.get("candidate") or {}
    return ComparisonMade(
        event_id=ids.event_id("ComparisonMade", evaluation_id, evaluator_version, doc["scenario"]),
        occurred_at=at,
        correlation_id=evaluation_id,
        evaluation_id=evaluation_id,
        scenario_name=doc["scenario"],
        evaluator_version=evaluator_version,
        classification=doc["classification"],
        reason=doc["reason"],
        baseline_agent=baseline_agent,
        candidate_agent=candidate_agent,
        baseline_case_id=base.get("case_id") or "",
        candidate_case_id=cand.get("case_id") or "",
        baseline_status=base.get("status") or "MISSING",
        candidate_status=cand.get("status") or "MISSING",
        severity=severity,
        tags=list(tags),
        divergence_index=div.get("index"),
        divergence_kind=div.get("kind"),
        divergence_summary=div.get("summary"),
        divergence_impact=div.get("impact"),
        metrics_json=_js(doc.get("metrics")),
        document_json=_js(doc),
    )
