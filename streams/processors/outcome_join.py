"""Outcome join: claimed outcomes (from spans) x verified outcomes -> contradiction alerts.

Keyed by (tenant, trace id): a trace id means something only within its tenant, so a span or a
verification from one tenant never touches another tenant's entry, and a verification matches only
claims of its own tenant. Either side may arrive first and at any delay. A claim is compared with each
evaluator version's verification; an alert is emitted once per (tenant, trace, evaluator version, kind)
even when the same events are handled again. One-sided entries older than the horizon are reported
(claim never verified / verification without a claim), never dropped silently. The horizon runs on the
time the pipeline received each event (`received_time`), never on a time the sender wrote.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from evaluation.contradiction import is_contradiction
from streams import ids
from streams.events import ContradictionDetected, Event, OutcomeVerified, SpanRecorded
from streams.processors.base import Processor, Store

CLAIM_ATTRIBUTE = "agenttwin.outcome.claimed"
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

    def __init__(self, horizon: timedelta = DEFAULT_HORIZON) -> None:
        self.horizon = horizon

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
        if isinstance(event, SpanRecorded):
            attrs = event.attributes
            tool, risk = attrs.get("gen_ai.tool.name"), attrs.get("agenttwin.tool.risk")
            if tool:
                entry["tools"] = {**entry["tools"], tool: risk or ""}
            if CLAIM_ATTRIBUTE in attrs:
                entry["claim"] = {
                    "status": attrs[CLAIM_ATTRIBUTE].upper(),
                    "agent": attrs.get("agenttwin.agent.name") or attrs.get("gen_ai.agent.name"),
                    "agent_version": attrs.get("agenttwin.agent.version"),
                    "case_id": attrs.get("agenttwin.case.id"),
                    "scenario": attrs.get("agenttwin.scenario.id"),
                    "tool": attrs.get(TOOL_ATTRIBUTE),
                    "at": event.received_time,
                }
        else:
            entry["verified"] = {**entry["verified"], event.evaluator_version: event}
        out = self._alerts(entry)
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
            detail = f"claimed {claim['status']}, verification found {verified.status}: {verified.reason}"
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
            tool=claim.get("tool"),
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
        if claim is not None and not verified and claim["at"] + self.horizon <= now:
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
