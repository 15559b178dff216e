"""Hand-built twin records, cases and graded cases for the comparison tests (no grader needed)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from evaluation.case import AgentFinding, CaseRun
from evaluation.results import (
    ERROR,
    ERRORED,
    FAIL,
    FAILED,
    PASS,
    PASSED,
    SKIPPED,
    CaseVerdict,
    ExpectationMeta,
    ExpectationResult,
    GradedCase,
    VerifiedOutcome,
)
from twin_engine.records import CallRecord, RetrievalRecord, StateChange

RISKS = {
    "lookup_customer": "READ",
    "lookup_order": "READ",
    "get_refund_policy": "READ",
    "refund_payment": "WRITE_IRREVERSIBLE",
    "send_email": "WRITE_REVERSIBLE",
    "escalate_to_human": "WRITE_REVERSIBLE",
    "export_customer_data": "ADMIN",
    "run_job": "EXECUTE",
}
STATUS_HTTP = {
    "ok": 200,
    "timeout": 504,
    "rate_limited": 429,
    "denied": 403,
    "error": 500,
    "invalid": 422,
    "not_found": 404,
}


def call(
    seq: int,
    tool: str,
    args: dict[str, Any] | None = None,
    *,
    status: str = "ok",
    http: int | None = None,
    mutated: bool | None = None,
    replayed: bool = False,
    policy_violation: str | None = None,
    cross_tenant: str | None = None,
    redelivered: bool = False,
    risk: str | None = "default",
    effect_key: str | None = None,
    call_number: int = 1,
) -> CallRecord:
    """A twin record. Writes that succeed are `mutated` unless told otherwise."""
    tool_risk = RISKS.get(tool) if risk == "default" else risk
    args = dict(args or {})
    if mutated is None:
        mutated = status == "ok" and tool_risk not in (None, "READ") and not replayed
    key = args.get("idempotency_key")
    return CallRecord(
        seq=seq,
        call_number=call_number,
        tool=tool,
        arguments=args,
        http_status=http if http is not None else STATUS_HTTP.get(status, 500),
        status=status,
        error_code=None,
        response=None,
        risk=tool_risk,
        fault=None,
        mutated=mutated,
        expects_mutation=tool_risk not in (None, "READ"),
        replayed=replayed,
        effect_key=effect_key,
        cross_tenant=cross_tenant,
        policy_violation=policy_violation,
        redelivered=redelivered,
        idempotency_key=key if isinstance(key, str) else None,
        # an applied write changed something
        changes=(StateChange(op="changed", path=f"calls.{seq}", before=0, after=1),) if mutated else (),
    )


def retrieval(seq: int, query: str) -> RetrievalRecord:
    return RetrievalRecord(seq=seq, query=query, limit=3, documents=({"id": "kb-1", "trusted": True},))


def case_run(
    records: Sequence[CallRecord] = (),
    *,
    retrievals: Sequence[RetrievalRecord] = (),
    scenario: str = "refund-timeout-after-mutation",
    side: str = "baseline",
    agent: str = "demo:1.2.4",
    seed: int = 7,
    scenario_hash: str = "a" * 64,
    twin_hash: str = "b" * 64,
    claimed: str | None = "SUCCESS",
    business: str | None = "REFUND_COMPLETED",
    agent_status: str | None = "completed",
    finding: AgentFinding | None = None,
    final_state: dict[str, Any] | None = None,
    latency_ms: float | None = 0.0,
    tokens: int | None = None,
    cost_usd: float | None = None,
    agent_steps: int | None = None,
    severity: str = "critical",
    tags: tuple[str, ...] = ("refunds",),
    context: dict[str, Any] | None = None,
    timings: dict[str, Any] | None = None,
) -> CaseRun:
    return CaseRun(
        case_id=f"ev-test:{side}:{scenario}",
        scenario_name=scenario,
        scenario_hash=scenario_hash,
        twin_name="demo-co-support",
        twin_hash=twin_hash,
        case_seed=seed,
        agent=agent,
        agent_version=agent.split(":")[-1],
        severity=severity,
        tags=tags,
        input_message="Hi! One item in ORD-1001 arrived broken. Can I get a refund of $40?",
        context=dict(context or {"tenant": "demo-co", "customer_id": "CUS-100"}),
        tenant="demo-co",
        expectations=(),
        secrets=(),
        records=tuple(records),
        retrievals=tuple(retrievals),
        initial_state={},
        final_state=final_state,
        state_hash=None,
        output="Done!",
        claimed_outcome=claimed,
        business_outcome=business,
        agent_status=agent_status,
        agent_steps=agent_steps,
        tokens=tokens,
        cost_usd=cost_usd,
        agent_finding=finding,
        latency_ms=latency_ms,
        timings=dict(timings or {}),
    )


def result(
    eid: str,
    status: str,
    *,
    critical: bool = False,
    etype: str = "state",
    reason: str | None = None,
    label: str | None = None,
    score: float | None = None,
    evaluator: str | None = None,
) -> ExpectationResult:
    if score is None and etype != "semantic":
        score = 1.0 if status == PASS else 0.0 if status == FAIL else None
    return ExpectationResult(
        status=status,
        reason=reason if reason is not None else f"{eid} is {status}.",
        evaluator=evaluator or f"expectation.{etype}",
        evaluator_version="1.0.0",
        expectation=ExpectationMeta(id=eid, type=etype, critical=critical),
        score=score,
        label=label
        if label is not None
        else ("LABEL_" + eid.upper().replace("-", "_") if status == FAIL else None),
    )


def verdict_of(results: Sequence[ExpectationResult]) -> CaseVerdict:
    """A small stand-in for the grader's case verdict (spec §7.3), enough for these tests."""
    fails = [r for r in results if r.status == FAIL]
    errors = [r for r in results if r.status == ERROR]
    skipped = [r for r in results if r.status == SKIPPED]
    passed = [r for r in results if r.status == PASS]
    critical_fails = [r for r in fails if r.expectation.critical]
    if fails:
        first = (critical_fails or fails)[0]
        more = len(fails) - 1
        status, reason = FAILED, first.reason + (f" (+{more} more failed expectation(s))" if more else "")
    elif errors or any(r.expectation.critical for r in skipped) or not results:
        status, reason = ERRORED, (errors[0].reason if errors else "The scenario has no expectations.")
    else:
        status, reason = PASSED, f"All {len(passed)} evaluated expectation(s) passed."
    judged = len(passed) + len(fails) + len(errors)
    return CaseVerdict(
        status=status,
        reason=reason,
        passed=len(passed),
        failed=len(fails),
        errored=len(errors),
        skipped=len(skipped),
        critical_failures=len(critical_fails),
        score=(len(passed) / judged) if judged else None,
        labels=tuple(sorted({r.label for r in fails if r.label})),
        evaluator_version="1.1.0",
    )


def graded(
    case: CaseRun,
    results: Sequence[ExpectationResult] = (),
    *,
    status: str | None = None,
    reason: str | None = None,
) -> GradedCase:
    verdict = verdict_of(results)
    if status is not None:
        verdict = CaseVerdict(
            **{
                **verdict.to_dict(),
                "status": status,
                "reason": reason or verdict.reason,
                "labels": tuple(verdict.labels),
            }
        )
    return GradedCase(
        case=case,
        results=tuple(results),
        verdict=verdict,
        verified=VerifiedOutcome(
            status="SUCCESS" if verdict.status == PASSED else "FAILURE",
            verified=True,
            source="tool_twin_state",
            claimed_status=case.claimed_outcome,
            business_outcome=case.business_outcome,
            reason=verdict.reason,
        ),
        evaluator_version="1.1.0",
    )


# The demo's timeout case as the two versions run it (spec §6.2), built by hand.
KEY = "refund-ORD-1001-40.00"
EMAIL = {"customer_id": "CUS-100", "order_id": "ORD-1001", "template": "refund_confirmation"}


def timeout_baseline_records() -> list[CallRecord]:
    return [
        call(1, "lookup_order", {"order_id": "ORD-1001"}),
        call(2, "get_refund_policy", {"order_id": "ORD-1001"}),
        call(
            3,
            "refund_payment",
            {"order_id": "ORD-1001", "amount": 40, "idempotency_key": KEY},
            status="timeout",
            mutated=True,
            effect_key="refund:ORD-1001",
        ),
        call(4, "lookup_order", {"order_id": "ORD-1001"}, call_number=2),
        call(5, "send_email", dict(EMAIL)),
    ]


def timeout_candidate_records() -> list[CallRecord]:
    return [
        call(1, "lookup_order", {"order_id": "ORD-1001"}),
        call(
            2,
            "refund_payment",
            {"order_id": "ORD-1001", "amount": 40.0},
            status="timeout",
            mutated=True,
            effect_key="refund:ORD-1001",
        ),
        call(
            3,
            "refund_payment",
            {"order_id": "ORD-1001", "amount": 40.0},
            effect_key="refund:ORD-1001",
            call_number=2,
        ),
        call(4, "send_email", dict(EMAIL)),
    ]
