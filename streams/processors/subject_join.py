"""Subject join: a verification that names a business subject (`order:ORD-1001`), not a trace, finds the
traces that acted on the subject.

Input: the `subjects` topic, keyed by subject — SubjectLinked (the receiver emits one per subject a span
names: a write tool's `order_id`, an `agenttwin.subject` attribute) and SubjectVerified (`POST /v1/outcomes`
with a subject). Keyed by (tenant, subject): a verification sees only its own tenant's links, whatever
subject it names. A link and a verification match when their receive times are at most the horizon apart,
in either arrival order. Each match becomes an OutcomeVerified on the trace (with `subject` set), which the
outcome join (keyed by tenant and trace) compares with the trace's claim like any verification by trace id.
This is a repartition join: on Kafka, the subjects topic puts a subject's links and verifications on one
partition, and the derived verifications go back to the trace's partition of `verified-outcomes`.

A verification no trace matched within the horizon is reported once (`verification_without_claim`, with
the subject and an empty trace id); links and verifications older than twice the horizon are dropped.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from streams import ids
from streams.events import ContradictionDetected, Event, OutcomeVerified, SubjectLinked, SubjectVerified
from streams.processors.base import Processor, Store

DEFAULT_HORIZON = timedelta(hours=1)
UNMATCHED = "verification_without_claim"


def _new_entry(tenant: str | None, subject: str) -> dict[str, Any]:
    return {"tenant": tenant, "subject": subject, "links": {}, "verifications": {}, "sent": [], "reported": []}


class SubjectJoin(Processor):
    inputs = ("subjects",)
    stateful = True

    def __init__(self, horizon: timedelta = DEFAULT_HORIZON) -> None:
        self.horizon = horizon

    @property
    def name(self) -> str:
        return "subject-join"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, SubjectLinked | SubjectVerified):
            return []
        key = ids.join_key(event.tenant, event.subject)
        entry: dict[str, Any] = dict(store.get(key) or _new_entry(event.tenant, event.subject))
        if isinstance(event, SubjectLinked):
            links = dict(entry["links"])
            known = links.get(event.trace_id)
            if known is None or event.received_time < known["at"]:
                links[event.trace_id] = {"at": event.received_time, "tool": event.tool or (known or {}).get("tool")}
            elif known.get("tool") is None and event.tool:
                links[event.trace_id] = {**known, "tool": event.tool}
            entry["links"] = links
        else:
            entry["verifications"] = {**entry["verifications"], event.event_id: event}
        out = self._matches(entry)
        store[key] = entry
        return out

    def _near(self, a: datetime, b: datetime) -> bool:
        return abs(a - b) <= self.horizon

    def _matches(self, entry: dict[str, Any]) -> list[Event]:
        out: list[Event] = []
        sent = list(entry["sent"])  # "<verification event id>|<trace id>" of each match made
        for vid, verification in sorted(entry["verifications"].items()):
            for trace_id, link in sorted(entry["links"].items()):
                if f"{vid}|{trace_id}" in sent or not self._near(link["at"], verification.received_time):
                    continue
                sent.append(f"{vid}|{trace_id}")
                out.append(self._on_trace(verification, trace_id))
        entry["sent"] = sent
        return out

    @staticmethod
    def _on_trace(v: SubjectVerified, trace_id: str) -> OutcomeVerified:
        return OutcomeVerified(
            event_id=ids.verification_event_id(v.tenant, trace_id, v.evaluator_version, "subject", v.event_id),
            occurred_at=v.occurred_at,
            received_at=v.received_at,
            clock_skew=v.clock_skew,
            correlation_id=trace_id,
            tenant=v.tenant,
            trace_id=trace_id,
            evaluator_version=v.evaluator_version,
            status=v.status,
            verified=v.verified,
            source=v.source,
            reason=v.reason,
            business_outcome=v.business_outcome,
            subject=v.subject,
        )

    def tick(self, store: Store, now: datetime) -> list[Event]:
        """Report verifications no trace matched within the horizon (once each); drop what can match no more."""
        out: list[Event] = []
        for key, value in list(store.items()):
            entry = dict(value)
            reported = list(entry["reported"])
            for vid, v in sorted(entry["verifications"].items()):
                if v.received_time + self.horizon > now or vid in reported:
                    continue
                if any(self._near(link["at"], v.received_time) for link in entry["links"].values()):
                    continue
                reported.append(vid)
                out.append(self._unmatched(v))
            keep = now - 2 * self.horizon
            links = {t: link for t, link in entry["links"].items() if link["at"] >= keep}
            verifications = {i: v for i, v in entry["verifications"].items() if v.received_time >= keep}
            if not links and not verifications:
                del store[key]
                continue
            if (links, verifications, reported) != (entry["links"], entry["verifications"], entry["reported"]):
                entry.update(
                    links=links,
                    verifications=verifications,
                    reported=[r for r in reported if r in verifications],
                    sent=[m for m in entry["sent"] if m.split("|", 1)[0] in verifications],
                )
                store[key] = entry
        return out

    def _unmatched(self, v: SubjectVerified) -> ContradictionDetected:
        alert = ids.alert_id(v.tenant, f"subject:{v.subject}", v.evaluator_version, f"{UNMATCHED}:{v.event_id}")
        at = v.received_time + self.horizon
        return ContradictionDetected(
            event_id=alert,
            occurred_at=at,
            correlation_id=v.subject,
            tenant=v.tenant,
            alert_id=alert,
            kind=UNMATCHED,
            trace_id="",
            subject=v.subject,
            verified_status=v.status,
            verified=v.verified,
            source=v.source,
            evaluator_version=v.evaluator_version,
            rule=UNMATCHED,
            detected_at=at,
            detail=f"verified {v.status} for {v.subject}; no trace of the tenant acted on it within {self.horizon}",
        )
