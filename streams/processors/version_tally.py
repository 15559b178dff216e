"""The version watch's first stage: each production trace's tally, re-keyed by (tenant, agent).

Inputs keyed by trace id (claim readings, verified outcomes, contradiction alerts) meet here per trace;
whenever the trace's tally (evaluation/version_watch.trace_tally) changes, a TraceTallied with the next
revision goes to `version-traces`, keyed by tenant and agent so the second stage (VersionWatch) sees all
of one agent's versions in one partition. A trace is tallied once its claim was read and names an agent
and a version; simulated evaluations (the `sim:` tenants) are not production and are left out. Its window
is the minute of the earliest receive time of its spans: a time of the trace itself, so the same traffic
gives the same windows in any arrival order (a claim reading's time is the join's, which depends on it).
The store holds plain data (strings for times) and is reassigned, never mutated in place.

The store is bounded: a trace is dropped RETENTION after the last event that changed it (two of the outcome
join's horizons: by then the join has read its claim, met its verification and raised its alert, or dropped
it). The timer finds due traces through a time index (`_expiry.TimeIndex`), never by scanning. An event
received at or before the latest time dropped changes nothing (as in the subject join), so a redelivered
duplicate cannot tally a dropped trace again.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from evaluation.version_watch import trace_tally, window_start
from streams import ids
from streams.events import ClaimRead, ContradictionDetected, Event, OutcomeVerified, SpanRecorded, TraceTallied
from streams.processors._expiry import Retention, check_entity_key
from streams.processors.base import Processor, Store
from streams.processors.outcome_join import DEFAULT_HORIZON

RETENTION = 2 * DEFAULT_HORIZON


def watch_key(tenant: str | None, agent: str) -> str:
    return f"{tenant or ''}|{agent}"


class VersionTally(Processor):
    inputs = ("claims", "verified-outcomes", "contradictions", "spans")
    stateful = True

    def __init__(self, retention: timedelta = RETENTION) -> None:
        self._kept = Retention(retention)

    @property
    def name(self) -> str:
        return "version-tally"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if ids.is_simulation_tenant(event.tenant):
            return []
        key = check_entity_key(ids.join_key(event.tenant, getattr(event, "trace_id", "")))
        if self._kept.too_late(store, event.received_time):
            return []  # at or before what was dropped: a duplicate, or too late to change a tally
        known = store.get(key)
        if isinstance(event, SpanRecorded):
            at = event.received_time.isoformat()
            if known is not None and known.get("first_at") is not None and known["first_at"] <= at:
                return []  # most spans: nothing to write
        entry: dict[str, Any] = dict(known or {"tenant": event.tenant})
        if isinstance(event, SpanRecorded):
            entry["first_at"] = at
        elif isinstance(event, ClaimRead):
            if event.revision <= entry.get("claim_revision", 0):
                return []
            at = event.received_time.isoformat()
            entry["claim_revision"] = event.revision
            entry["claim"] = {
                "claimed_status": event.claimed_status,
                "tools": list(event.tools),
                "failed_tools": list(event.failed_tools),
                "agent": event.agent,
                "agent_version": event.agent_version,
            }
            entry.setdefault("first_at", at)  # the spans' earliest time replaces it (they precede the reading)
        elif isinstance(event, OutcomeVerified):
            previous = entry.get("verification")
            if previous is not None and previous["verified"] and not event.verified:
                return []  # a verified outcome is not undone by an unverifiable one
            entry["verification"] = {"status": event.status, "verified": event.verified}
        elif isinstance(event, ContradictionDetected):
            if event.kind != "contradiction" or entry.get("alert_id"):
                return []
            entry["alert_id"] = event.alert_id
        else:
            return []
        out = self._tally(entry, event.trace_id, event.received_time)
        self._kept.put(store, key, entry, entry.get(Retention.CHANGED), event.received_time)
        return out

    def tick(self, store: Store, now: datetime) -> list[Event]:
        """Drop the traces whose last change is RETENTION behind `now` (event time); emits nothing."""
        self._kept.expire(store, now)
        return []

    def _tally(self, entry: dict[str, Any], trace_id: str, at: datetime) -> list[Event]:
        claim = entry.get("claim")
        if claim is None or not claim.get("agent") or not claim.get("agent_version"):
            return []
        tally = trace_tally(claim, entry.get("verification"), alerted=bool(entry.get("alert_id")))
        content = {
            **tally,
            "agent": claim["agent"],
            "agent_version": claim["agent_version"],
            "window_start": window_start(datetime.fromisoformat(entry["first_at"])).isoformat(),
            "alert_id": entry.get("alert_id"),
        }
        if content == entry.get("tallied"):
            return []
        revision = int(entry.get("revision", 0)) + 1
        entry["tallied"], entry["revision"] = content, revision
        tenant = entry["tenant"]
        return [
            TraceTallied(
                event_id=ids.event_id("TraceTallied", tenant or "", trace_id, revision),
                occurred_at=at,
                correlation_id=trace_id,
                tenant=tenant,
                watch_key=watch_key(tenant, claim["agent"]),
                trace_id=trace_id,
                revision=revision,
                agent=claim["agent"],
                agent_version=claim["agent_version"],
                window_start=datetime.fromisoformat(content["window_start"]),
                claimed_status=tally["claimed_status"],
                verified_status=tally["verified_status"],
                contradicted=tally["contradicted"],
                verified_failure=tally["verified_failure"],
                tool_errors=tally["tool_errors"],
                escalated=tally["escalated"],
                alert_id=content["alert_id"],
            )
        ]
