"""Outcome join: claimed outcomes (from spans) x verified outcomes -> contradiction alerts.

Keyed by (tenant, trace id): a trace id means something only within its tenant, so a span or a
verification from one tenant never touches another tenant's entry, and a verification matches only
claims of its own tenant. Either side may arrive first and at any delay. A claim is compared with each
evaluator version's verification; an alert is emitted once per (tenant, trace, evaluator version, kind)
even when the same events are handled again. One-sided entries older than the horizon are reported
(claim never verified / verification without a claim), never dropped silently. The horizon runs on the
time the pipeline received each event (`received_time`), never on a time the sender wrote.

A claim is what the agent stated (`agenttwin.outcome.claimed`); when a trace states none, the claim is read
from its final answer (streams/processors/trace_claims.py, evaluation/claim_reader.py) and marked inferred
(`claim_inferred_by`) in the alert. Spans are read whatever instrumentation wrote them
(streams/span_reading.py): the alert names the write tool and the business subject the trace acted on.
For production traces the join also emits a ClaimRead whenever its reading of the trace changes (agent,
tools, final answer, claim): v_production_traces shows the latest. Simulated traces get none (their cases
carry the same facts).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from evaluation.claim_reader import read_claim
from evaluation.contradiction import is_contradiction
from streams import ids
from streams.events import ContradictionDetected, Event, OutcomeVerified, SpanRecorded
from streams.processors.base import Processor, Store
from streams.processors.trace_claims import (
    ClaimClassifier,
    alert_subject,
    calls_in_order,
    claim_read,
    inferred_claim,
    last_write_tool,
    take_span,
)
from streams.span_reading import read_span

CLAIM_ATTRIBUTE = "agenttwin.outcome.claimed"
CLAIM_INFERRED_ATTRIBUTE = "agenttwin.outcome.claim_inferred_by"  # an adapter read the claim from the answer
RULE = "claimed-success-disproved"
TOOL_ATTRIBUTE = "agenttwin.outcome.tool"  # the riskiest tool of the run, set on the claim
DEFAULT_HORIZON = timedelta(hours=1)


def _new_entry(tenant: str | None, trace_id: str) -> dict[str, Any]:
    return {
        "tenant": tenant,
        "trace_id": trace_id,
        "claim": None,
        "tools": {},
        "verified": {},
        "sent": [],
        "last_received": None,  # the latest receive time of the entry's events (the simulation clock)
    }


def _stored(key: str, value: Any) -> dict[str, Any]:
    """A stored entry; one written before entries were keyed by tenant is keyed by its bare trace id."""
    entry = dict(value)
    if "trace_id" not in entry:
        entry["tenant"] = (entry.get("claim") or {}).get("tenant")
        entry["trace_id"] = key.rpartition("|")[2]
    return entry


class OutcomeJoin(Processor):
    inputs = ("spans", "verified-outcomes")
    stateful = True

    def __init__(self, horizon: timedelta = DEFAULT_HORIZON, classifier: ClaimClassifier = read_claim) -> None:
        self.horizon = horizon
        self.classifier = classifier  # reads a claim from a final answer when the trace states none

    @property
    def name(self) -> str:
        return "outcome-join"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, SpanRecorded | OutcomeVerified):
            return []
        key = ids.join_key(event.tenant, event.trace_id)
        entry: dict[str, Any] = dict(store.get(key) or _new_entry(event.tenant, event.trace_id))
        last = entry.get("last_received")
        entry["last_received"] = event.received_time if last is None else max(last, event.received_time)
        out: list[Event] = []
        if isinstance(event, SpanRecorded):
            attrs = event.attributes
            reading = read_span(event)
            tool, risk = attrs.get("gen_ai.tool.name"), attrs.get("agenttwin.tool.risk")
            if tool:
                entry["tools"] = {**entry["tools"], tool: risk or ""}
            take_span(entry, event, reading)
            if CLAIM_ATTRIBUTE in attrs:
                entry["claim"] = {
                    "status": attrs[CLAIM_ATTRIBUTE].upper(),
                    "agent": attrs.get("agenttwin.agent.name") or attrs.get("gen_ai.agent.name") or entry.get("agent"),
                    "agent_version": attrs.get("agenttwin.agent.version")
                    or attrs.get("gen_ai.agent.version")
                    or entry.get("agent_version"),
                    "case_id": attrs.get("agenttwin.case.id"),
                    "scenario": attrs.get("agenttwin.scenario.id"),
                    "tool": attrs.get(TOOL_ATTRIBUTE),
                    "at": event.received_time,
                }
                if attrs.get(CLAIM_INFERRED_ATTRIBUTE):
                    entry["claim"]["inferred_by"] = attrs[CLAIM_INFERRED_ATTRIBUTE]
            elif entry["claim"] is None or entry["claim"].get("from_answer"):
                entry["claim"] = inferred_claim(entry, self.classifier)
            if not ids.is_simulation_tenant(event.tenant):
                read = claim_read(entry, entry["last_received"])
                if read is not None:
                    out.append(read)
        else:
            entry["verified"] = {**entry["verified"], event.evaluator_version: event}
        out += self._alerts(entry)
        store[key] = entry
        return out

    def _alerts(self, entry: dict[str, Any]) -> list[Event]:
        claim = entry["claim"]
        if claim is None:
            return []
        out: list[Event] = []
        for version, verified in sorted(entry["verified"].items()):
            if not is_contradiction(claim["status"], verified.status, verified.verified):
                continue
            alert = self._once(entry, version, "contradiction")
            if alert is None:
                continue
            by = claim.get("inferred_by")
            inferred = f" (inferred by {by} from the final answer)" if by else ""
            detail = f"claimed {claim['status']}{inferred}, verification found {verified.status}: {verified.reason}"
            out.append(self._alert(alert, "contradiction", entry, version, verified, detail))
        return out

    @staticmethod
    def _once(entry: dict[str, Any], version: str, kind: str) -> str | None:
        """The alert id if it was not emitted yet for this entry (and mark it emitted), else None."""
        alert = ids.alert_id(entry["tenant"], entry["trace_id"], version, kind)
        if alert in entry["sent"]:
            return None
        entry["sent"] = [*entry["sent"], alert]
        return alert

    def _alert(
        self,
        alert: str,
        kind: str,
        entry: dict[str, Any],
        version: str,
        verified: OutcomeVerified | None,
        detail: str,
    ) -> ContradictionDetected:
        claim = entry["claim"] or {}
        times = [t for t in (claim.get("at"), verified.received_time if verified else None) if t is not None]
        at = max(times)
        trace_id = entry["trace_id"]
        named = verified.subject if verified else None
        tool = claim.get("tool") or (entry.get("subjects", {}).get(named) if named else None) or last_write_tool(entry)
        return ContradictionDetected(
            event_id=alert,
            occurred_at=at,
            correlation_id=trace_id,
            tenant=entry["tenant"],
            alert_id=alert,
            kind=kind,
            trace_id=trace_id,
            case_id=claim.get("case_id") or (verified.case_id if verified else None),
            evaluation_id=verified.evaluation_id if verified else None,
            scenario_name=claim.get("scenario"),
            agent=claim.get("agent") or (verified.agent if verified else None),
            agent_version=claim.get("agent_version") or (verified.agent_version if verified else None),
            tool=tool,
            subject=alert_subject(entry, tool, named),
            claim_inferred_by=claim.get("inferred_by"),
            claimed_status=claim.get("status"),
            verified_status=verified.status if verified else None,
            verified=verified.verified if verified else False,
            source=verified.source if verified else None,
            evaluator_version=version,
            rule=RULE if kind == "contradiction" else kind,
            detected_at=at,
            detail=detail,
        )

    def tick(self, store: Store, now: datetime) -> list[Event]:
        """Report entries that stayed one-sided past the horizon (each once).

        `now` is the latest receive time the runtime saw. Simulated entries live on their cases' pinned
        clock, not on the wall clock: for them the horizon runs up to the latest simulated time in the
        store, so traffic from outside never makes a simulation's entries look overdue.
        """
        simulated = [
            entry["last_received"]
            for entry in store.values()
            if ids.is_simulation_tenant(entry.get("tenant")) and entry.get("last_received") is not None
        ]
        simulation_now = min(now, max(simulated)) if simulated else now
        out: list[Event] = []
        for key, value in list(store.items()):
            entry = _stored(key, value)
            clock = simulation_now if ids.is_simulation_tenant(entry["tenant"]) else now
            before = len(entry["sent"])
            out += self._overdue(entry, clock)
            if len(entry["sent"]) != before:
                store[key] = entry
        return out

    def _overdue(self, entry: dict[str, Any], now: datetime) -> list[Event]:
        claim, verified = entry["claim"], entry["verified"]
        out: list[Event] = []
        if claim is not None and not verified and claim["at"] + self.horizon <= now and _awaits_verification(entry):
            alert = self._once(entry, "*", "claim_never_verified")
            if alert is not None:
                detail = f"claimed {claim['status']}; no verification within {self.horizon}"
                out.append(self._alert(alert, "claim_never_verified", entry, "*", None, detail))
        if claim is None:
            for version, v in sorted(verified.items()):
                if v.received_time + self.horizon > now:
                    continue
                alert = self._once(entry, version, "verification_without_claim")
                if alert is not None:
                    detail = f"verified {v.status}; no claimed outcome within {self.horizon}"
                    out.append(self._alert(alert, "verification_without_claim", entry, version, v, detail))
        return out


def _awaits_verification(entry: dict[str, Any]) -> bool:
    """A stated claim always does; a claim read from the final answer only when it claims something (not
    UNKNOWN) about a trace that called a write tool — read-only traces are rarely verified by anyone."""
    claim = entry["claim"]
    if claim.get("inferred_by") is None:
        return True
    return claim["status"] != "UNKNOWN" and any(write for _, _, write in calls_in_order(entry))
