"""The agent's own trace of a simulated case, as OpenTelemetry-shaped span events.

A simulated agent's spans travel the same `spans` topic as production traces, so a simulated
contradiction and a production one look the same downstream. Everything on these spans is what the
agent *says* (its claimed outcome, its own calls); the evidence stays in the twin's records. They are
recorded under the simulation's reserved tenant (streams.ids.simulation_tenant), which no ingest key can
map to, so spans sent from outside with the same (predictable) trace and span ids never touch them.
Their receive time is the case's pinned clock, like their event time: simulations stay deterministic.
"""

from __future__ import annotations

from datetime import timedelta
from typing import Any

from evaluation.case import CaseRun
from producers.agents.inferred_claim import inferred_by_of
from streams import ids
from streams.convert import case_time
from streams.events import SpanRecorded
from twin_engine.canonical import sha256_hex

SERVICE = "agenttwin-simulator"
# The riskiest tool the run called, on the claim itself, so an alert names it whatever order spans arrive in.
OUTCOME_TOOL_ATTRIBUTE = "agenttwin.outcome.tool"
# Who read the claim from the answer (producers/sdk/attributes.py; not imported: the sdk package is heavy)
OUTCOME_CLAIM_INFERRED_BY = "agenttwin.outcome.claim_inferred_by"
RISK_ORDER = {"ADMIN": 5, "WRITE_IRREVERSIBLE": 4, "EXECUTE": 3, "WRITE_REVERSIBLE": 2, "READ": 1}


def riskiest_tool(tools: list[str], risk_by_tool: dict[str, str]) -> str | None:
    """The riskiest of the tools called (the last one called among equals)."""
    best: str | None = None
    for tool in tools:
        if best is None or RISK_ORDER.get(risk_by_tool.get(tool, ""), 0) >= RISK_ORDER.get(
            risk_by_tool.get(best, ""), 0
        ):
            best = tool
    return best


def _nanos(at_ms: float) -> int:
    return int(at_ms * 1_000_000)


def case_spans(case: CaseRun, *, evaluation_id: str | None) -> list[SpanRecorded]:
    trace_id = ids.trace_id_for_case(case.case_id)
    start = case_time(case)
    start_ns = int(start.timestamp() * 1_000_000_000)
    duration_ns = _nanos(case.latency_ms or 0.0)
    risk_by_tool = {r.tool: r.risk for r in case.records if r.risk}
    tenant = ids.simulation_tenant(case.tenant)
    common: dict[str, Any] = {"occurred_at": start, "received_at": start, "correlation_id": trace_id, "tenant": tenant}
    run_context = {
        "agenttwin.source": "simulation",
        "agenttwin.agent.name": case.agent,
        "agenttwin.agent.version": case.agent_version,
        "agenttwin.scenario.id": case.scenario_name,
        "agenttwin.case.id": case.case_id,
        "agenttwin.simulation.run_id": evaluation_id or "",
        "agenttwin.model.kind": case.model_kind,
    }
    root_attrs = {
        **run_context,
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": case.agent,
        "agenttwin.span.kind": "agent",
    }
    if case.claimed_outcome:
        root_attrs["agenttwin.outcome.claimed"] = case.claimed_outcome
        tool = riskiest_tool([str(c.get("name", "")) for c in case.claimed_calls], risk_by_tool)
        if tool:
            root_attrs[OUTCOME_TOOL_ATTRIBUTE] = tool
        inferred_by = inferred_by_of(case.claim_findings)
        if inferred_by:  # the agent stated none: who read it from the answer, as on production traces
            root_attrs[OUTCOME_CLAIM_INFERRED_BY] = inferred_by
    if case.business_outcome:
        root_attrs["agenttwin.outcome.business"] = case.business_outcome
    if case.agent_finding:
        root_attrs["error.type"] = case.agent_finding.label
    resource = {"service.name": SERVICE, "agenttwin.sdk.name": "agenttwin-simulator"}
    root_id = ids.span_id(trace_id, 0)
    spans = [
        SpanRecorded(
            event_id=ids.span_event_id(tenant, trace_id, root_id),
            trace_id=trace_id,
            span_id=root_id,
            parent_span_id=None,
            name=f"invoke_agent {case.agent}",
            kind="INTERNAL",
            start_unix_nano=start_ns,
            end_unix_nano=start_ns + duration_ns,
            status_code="ERROR" if case.agent_finding else "OK",
            status_message=case.agent_finding.message if case.agent_finding else None,
            service_name=SERVICE,
            source="simulation",
            attributes=root_attrs,
            resource_attributes=resource,
            **common,
        )
    ]
    for n, call in enumerate(case.claimed_calls, start=1):
        name = str(call.get("name", ""))
        attrs = {
            **run_context,
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": name,
            "agenttwin.span.kind": "tool",
            "agenttwin.tool.args_hash": sha256_hex(call.get("arguments") or {}),
            "agenttwin.tool.result_status": str(call.get("status", "")),
            "agenttwin.tool.attempt": str(call.get("attempt", 1)),
        }
        if risk_by_tool.get(name):
            attrs["agenttwin.tool.risk"] = str(risk_by_tool[name])
        span = ids.span_id(trace_id, n)
        at = start + timedelta(microseconds=n)
        spans.append(
            SpanRecorded(
                event_id=ids.span_event_id(tenant, trace_id, span),
                trace_id=trace_id,
                span_id=span,
                parent_span_id=root_id,
                name=f"execute_tool {name}",
                kind="CLIENT",
                start_unix_nano=int(at.timestamp() * 1_000_000_000),
                end_unix_nano=int(at.timestamp() * 1_000_000_000),
                status_code="OK" if call.get("status") == "ok" else "ERROR",
                status_message=call.get("error_code"),
                service_name=SERVICE,
                source="simulation",
                attributes=attrs,
                resource_attributes=resource,
                **common,
            )
        )
    return spans
