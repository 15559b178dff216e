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
the subject and an empty trace id); a verification that matched a trace never is. Links and verifications
are dropped two horizons after they were received (an entry with neither is evicted: a tombstone on
Kafka); an event received at or before one that was dropped (a redelivered duplicate: Kafka does not dedupe
by event id) then changes nothing, so it can neither match again nor be reported again. The timer finds
due entries through a time index kept in the store (`_expiry.TimeIndex`), never by scanning it.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from streams import ids
from streams.events import ContradictionDetected, Event, OutcomeVerified, SubjectLinked, SubjectVerified
from streams.processors._expiry import INDEX_PREFIX, TimeIndex, check_entity_key
from streams.processors.base import Processor, Store

DEFAULT_HORIZON = timedelta(hours=1)
UNMATCHED = "verification_without_claim"
BUCKETS_PER_HORIZON = 120  # time-index granularity, as in the outcome join
INDEXED = f"{INDEX_PREFIX}indexed"  # set once every entry of the store is in the time index
# The latest receive time of a link or verification dropped: an event received at or before it is a
# duplicate, or too late to match anything that could still match.
DROPPED_BEFORE = f"{INDEX_PREFIX}dropped-before"
_AFTER = timedelta(microseconds=1)  # an item is dropped once it is *more* than two horizons old


def _new_entry(tenant: str | None, subject: str) -> dict[str, Any]:
    return {"tenant": tenant, "subject": subject, "links": {}, "verifications": {}, "sent": [], "reported": []}


class SubjectJoin(Processor):
    inputs = ("subjects",)
    stateful = True

    def __init__(self, horizon: timedelta = DEFAULT_HORIZON) -> None:
        self.horizon = horizon
        self._index = TimeIndex("due", max(horizon / BUCKETS_PER_HORIZON, timedelta(milliseconds=1)))

    @property
    def name(self) -> str:
        return "subject-join"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, SubjectLinked | SubjectVerified):
            return []
        key = check_entity_key(ids.join_key(event.tenant, event.subject))
        self._ensure_indexed(store)
        dropped = store.get(DROPPED_BEFORE)
        if dropped is not None and event.received_time <= dropped:
            return []  # older than what the join already dropped: a duplicate, or too late to match
        stored = store.get(key)
        entry: dict[str, Any] = dict(stored or _new_entry(event.tenant, event.subject))
        due_before = self._due(entry) if stored is not None else None
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
        due = self._due(entry)
        if due is not None and (due_before is None or self._index.bucket(due) != self._index.bucket(due_before)):
            self._index.add(store, key, due)
        return out

    def _ensure_indexed(self, store: Store) -> None:
        """A store written before the time index existed gets every entry indexed, once."""
        if store.get(INDEXED) is not None:
            return
        for key, value in list(store.items()):
            if not key.startswith(INDEX_PREFIX) and (due := self._due(dict(value))) is not None:
                self._index.add(store, key, due)
        store[INDEXED] = 1

    @staticmethod
    def _matched(entry: dict[str, Any], vid: str) -> bool:
        return any(m.split("|", 1)[0] == vid for m in entry["sent"])

    def _due(self, entry: dict[str, Any]) -> datetime | None:
        """When the timer must next look at an entry: a verification to report, or an item to drop."""
        times = [link["at"] + 2 * self.horizon + _AFTER for link in entry["links"].values()]
        for vid, v in entry["verifications"].items():
            times.append(v.received_time + 2 * self.horizon + _AFTER)
            if vid not in entry["reported"] and not self._matched(entry, vid):
                times.append(v.received_time + self.horizon)
        return min(times, default=None)

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
        """Report verifications no trace matched within the horizon (once each); drop what can match no more.

        Visits only the entries the time index says are due."""
        self._ensure_indexed(store)
        out: list[Event] = []

        def due_of(key: str) -> datetime | None:
            value = store.get(key)
            return None if value is None else self._due(dict(value))

        def on_due(key: str) -> None:
            entry = dict(store[key])
            reported = list(entry["reported"])
            for vid, v in sorted(entry["verifications"].items()):
                if v.received_time + self.horizon > now or vid in reported or self._matched(entry, vid):
                    continue
                reported.append(vid)
                out.append(self._unmatched(v))
            keep = now - 2 * self.horizon
            links = {t: link for t, link in entry["links"].items() if link["at"] >= keep}
            verifications = {i: v for i, v in entry["verifications"].items() if v.received_time >= keep}
            gone = [link["at"] for t, link in entry["links"].items() if t not in links]
            gone += [v.received_time for i, v in entry["verifications"].items() if i not in verifications]
            if gone:
                dropped = store.get(DROPPED_BEFORE)
                if dropped is None or max(gone) > dropped:
                    store[DROPPED_BEFORE] = max(gone)
            if not links and not verifications:
                del store[key]
                return
            if (links, verifications, reported) != (entry["links"], entry["verifications"], entry["reported"]):
                entry.update(
                    links=links,
                    verifications=verifications,
                    reported=[r for r in reported if r in verifications],
                    sent=[m for m in entry["sent"] if m.split("|", 1)[0] in verifications],
                )
                store[key] = entry
            due = self._due(entry)
            if due is not None:
                self._index.add(store, key, due)

        self._index.expire(store, now, due_of, on_due)
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
