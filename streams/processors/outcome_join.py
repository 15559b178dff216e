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
For production traces the join also emits a ClaimRead when its reading of the trace changes (agent,
tools, final answer, claim): v_production_traces shows the latest. A claimless reading that changes only what
the version tally does not count waits (trace_claims.py), at the latest until the entry closes. Simulated
traces get none (their cases carry the same facts).

State stays bounded. One horizon after an entry's last event it is *closed*: its one-sided outcomes are
reported, then it shrinks to what a late claim or verification needs (`_compact`): the claim, the
verifications unless a stated claim was compared with them, the subjects and the write calls an alert may name
(evaluation/contradiction.disproved_write), the reading last emitted and the alerts sent; a late verification
is still compared with that claim, a late span counts only when it states a claim (the reading stays as it
was, with that claim: revisions go on), a duplicate changes nothing. One `retention` later the closed entry is
evicted (a tombstone on Kafka); an event received at or before the last event of an evicted entry (a
redelivered duplicate: Kafka does not dedupe by event id) is then ignored, so it can neither reopen the entry
nor alert again. A span of the trace received later still opens a new entry: its alerts are its own, and its
ClaimRead revisions start again from 1 (they do not replace the higher revision in `claims`). The timer finds
due entries through a time index kept in the store (`_expiry.TimeIndex`), never by scanning it; simulated
entries have their own index, on the simulations' clock (their events all carry pinned times, so they are
never taken for late ones).
"""

from __future__ import annotations

from datetime import datetime, timedelta
from functools import lru_cache
from typing import Any

from evaluation.claim_reader import read_claim
from evaluation.claim_status import describe_inference
from evaluation.contradiction import disproved_write, is_contradiction
from streams import ids
from streams.events import ContradictionDetected, Event, OutcomeVerified, SpanRecorded
from streams.processors._expiry import INDEX_PREFIX, TimeIndex, check_entity_key
from streams.processors.base import Processor, Store
from streams.processors.trace_claims import (
    ClaimClassifier,
    calls_in_order,
    claim_read,
    inferred_claim,
    take_span,
)
from streams.span_reading import read_span

CLAIM_ATTRIBUTE = "agenttwin.outcome.claimed"
CLAIM_INFERRED_ATTRIBUTE = "agenttwin.outcome.claim_inferred_by"  # an adapter read the claim from the answer
CLAIM_RULE_ATTRIBUTE = "agenttwin.outcome.claim_rule"  # ... by this rule
CLAIM_CONFIDENCE_ATTRIBUTE = "agenttwin.outcome.claim_confidence"  # ... with this confidence
RULE = "claimed-success-disproved"
TOOL_ATTRIBUTE = "agenttwin.outcome.tool"  # the riskiest tool of the run, set on the claim
DEFAULT_HORIZON = timedelta(hours=1)
BUCKETS_PER_HORIZON = 120  # time-index granularity: a timer reads at most 1/120 of a horizon it need not
SIMULATION_CLOCK = f"{INDEX_PREFIX}sim-clock"  # the latest receive time of any simulated event
INDEXED = f"{INDEX_PREFIX}indexed"  # set once every entry of the store is in a time index
# An entry's alert ids are asked for on every event of its trace (when is it due, was it sent): hashed once
_alert_id = lru_cache(maxsize=8192)(ids.alert_id)
# The latest last-receive time of an evicted live entry: an event received at or before it belongs to an
# entry that is gone (a redelivered duplicate, or later than horizon + retention): it changes nothing.
EVICTED_BEFORE = f"{INDEX_PREFIX}evicted-before"


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
    if entry.get("last_received") is None:  # written before receive times were kept: its latest event time
        times = [(entry.get("claim") or {}).get("at"), *(v.received_time for v in entry["verified"].values())]
        entry["last_received"] = max((t for t in times if t is not None), default=None)
    return entry


class OutcomeJoin(Processor):
    inputs = ("spans", "verified-outcomes")
    stateful = True

    def __init__(
        self,
        horizon: timedelta = DEFAULT_HORIZON,
        classifier: ClaimClassifier = read_claim,
        retention: timedelta | None = None,
    ) -> None:
        self.horizon = horizon
        self.classifier = classifier  # reads a claim from a final answer when the trace states none
        self.retention = horizon if retention is None else retention
        width = max(horizon / BUCKETS_PER_HORIZON, timedelta(milliseconds=1))
        self._live = TimeIndex("due", width)
        self._sim = TimeIndex("sim-due", width)

    @property
    def name(self) -> str:
        return "outcome-join"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, SpanRecorded | OutcomeVerified):
            return []
        key = check_entity_key(ids.join_key(event.tenant, event.trace_id))
        self._ensure_indexed(store)
        stored = store.get(key)
        simulated = ids.is_simulation_tenant(event.tenant)
        if stored is None and not simulated:
            evicted = store.get(EVICTED_BEFORE)
            if evicted is not None and event.received_time <= evicted:
                return []  # its entry was evicted: a duplicate, or too late to join anything
        entry = _stored(key, stored) if stored is not None else _new_entry(event.tenant, event.trace_id)
        closed = bool(entry.get("closed"))
        if closed and isinstance(event, SpanRecorded) and CLAIM_ATTRIBUTE not in event.attributes:
            return []  # past the horizon a span matters only when it states a claim
        due_before = self._due(entry) if stored is not None else None
        last = entry.get("last_received")
        entry["last_received"] = event.received_time if last is None else max(last, event.received_time)
        out: list[Event] = []
        if isinstance(event, SpanRecorded):
            attrs = event.attributes
            tool, risk = attrs.get("gen_ai.tool.name"), attrs.get("agenttwin.tool.risk")
            if tool and not closed:
                entry["tools"] = {**entry["tools"], tool: risk or ""}
            frozen = entry.get("reading") if closed else None  # a closed entry's reading changes only its claim
            if frozen is None:
                take_span(entry, event, read_span(event))
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
                    entry["claim"]["rule"] = attrs.get(CLAIM_RULE_ATTRIBUTE)
                    entry["claim"]["confidence"] = _confidence(attrs.get(CLAIM_CONFIDENCE_ATTRIBUTE))
            elif entry["claim"] is None or entry["claim"].get("from_answer"):
                entry["claim"] = inferred_claim(entry, self.classifier)
            if not ids.is_simulation_tenant(event.tenant):
                read = claim_read(entry, entry["last_received"], frozen=frozen)
                if read is not None:
                    out.append(read)
        else:
            entry["verified"] = {**entry["verified"], event.evaluator_version: event}
        out += self._alerts(entry)
        if closed:
            entry = self._compact(entry)
        store[key] = entry
        if simulated:
            clock = store.get(SIMULATION_CLOCK)
            if clock is None or event.received_time > clock:
                store[SIMULATION_CLOCK] = event.received_time
        due = self._due(entry)
        index = self._sim if simulated else self._live
        if due is not None and (due_before is None or index.bucket(due) != index.bucket(due_before)):
            index.add(store, key, due)
        return out

    def _ensure_indexed(self, store: Store) -> None:
        """A store written before the time index existed gets every entry indexed, once."""
        if store.get(INDEXED) is not None:
            return
        for key, value in list(store.items()):
            if key.startswith(INDEX_PREFIX):
                continue
            entry = _stored(key, value)
            due = self._due(entry)
            if due is not None:
                (self._sim if ids.is_simulation_tenant(entry["tenant"]) else self._live).add(store, key, due)
        store[INDEXED] = 1

    def _due(self, entry: dict[str, Any]) -> datetime | None:
        """When the timer must next look at an entry: an unsent one-sided report, closing, or eviction."""
        last = entry.get("last_received")
        if last is None:
            return None
        if entry.get("closed"):
            due: datetime = last + self.horizon + self.retention
        else:
            due = last + self.horizon
        claim, verified = entry["claim"], entry["verified"]
        if claim is not None and not verified and not entry.get("matched") and _awaits_verification(entry):
            alert = _alert_id(entry["tenant"], entry["trace_id"], "*", "claim_never_verified")
            if alert not in entry["sent"]:
                due = min(due, claim["at"] + self.horizon)
        if claim is None:
            for version, v in verified.items():
                alert = _alert_id(entry["tenant"], entry["trace_id"], version, "verification_without_claim")
                if alert not in entry["sent"]:
                    due = min(due, v.received_time + self.horizon)
        return due

    @staticmethod
    def _compact(entry: dict[str, Any]) -> dict[str, Any]:
        """A closed entry: what a late claim or verification needs, not the spans' detail.

        Verifications go once a stated claim was compared with them; with a claim read from the answer
        they stay, for a stated claim may still replace it. Of the tool calls only the first write and the
        last failed one stay (an alert names one of them; `_awaits_verification` asks whether there was
        one); the answer and the cached reading of it go (the reading last emitted stays, so revisions go on)."""
        claim = entry["claim"]
        stated = claim is not None and not claim.get("from_answer")
        matched = bool(entry.get("matched")) or (claim is not None and bool(entry["verified"]))
        verified = {} if stated else entry["verified"]
        writes = sorted(
            ((span_id, call) for span_id, call in entry.get("calls", {}).items() if call[3]),
            key=lambda item: (item[1][0], item[0]),
        )
        kept = {k: v for k, v in entry.items() if k not in ("answer", "inferred")}
        calls = dict(writes[:1] + [w for w in writes if w[1][2]][-1:])  # what disproved_write may name
        return {**kept, "tools": {}, "calls": calls, "verified": verified, "matched": matched, "closed": True}

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
            how = describe_inference(by, claim.get("rule"), claim.get("confidence"), source="from the final answer")
            inferred = f" ({how})" if by else ""
            detail = f"claimed {claim['status']}{inferred}, verification found {verified.status}: {verified.reason}"
            out.append(self._alert(alert, "contradiction", entry, version, verified, detail))
        return out

    @staticmethod
    def _once(entry: dict[str, Any], version: str, kind: str) -> str | None:
        """The alert id if it was not emitted yet for this entry (and mark it emitted), else None."""
        alert = _alert_id(entry["tenant"], entry["trace_id"], version, kind)
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
        tool, subject = disproved_write(calls_in_order(entry), entry.get("subjects", {}), named, claim.get("tool"))
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
            # the trace's agent as its reading names it (v_production_traces), so one name everywhere
            agent=entry.get("agent") or claim.get("agent") or (verified.agent if verified else None),
            agent_version=claim.get("agent_version") or (verified.agent_version if verified else None),
            tool=tool,
            subject=subject,
            claim_inferred_by=claim.get("inferred_by"),
            claim_rule=claim.get("rule") if claim.get("inferred_by") else None,
            claim_confidence=claim.get("confidence") if claim.get("inferred_by") else None,
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
        """Report entries that stayed one-sided past the horizon (each once), close and evict old ones.

        `now` is the latest receive time the runtime saw. Simulated entries live on their cases' pinned
        clock, not on the wall clock: for them the horizon runs up to the latest simulated receive time,
        so traffic from outside never makes a simulation's entries look overdue.
        """
        self._ensure_indexed(store)
        simulated = store.get(SIMULATION_CLOCK)
        simulation_now = min(now, simulated) if simulated is not None else now
        out: list[Event] = []
        for index, clock in ((self._live, now), (self._sim, simulation_now)):

            def due_of(key: str) -> datetime | None:
                value = store.get(key)
                return None if value is None else self._due(_stored(key, value))

            def on_due(key: str, index: TimeIndex = index, clock: datetime = clock) -> None:
                entry = _stored(key, store[key])
                while True:  # report, close, evict: as many steps as this clock allows at once
                    out.extend(self._overdue(entry, clock))
                    last = entry["last_received"]
                    if entry.get("closed") and last + self.horizon + self.retention <= clock:
                        del store[key]  # evicted: past the horizon and the retention after it
                        if index is self._live:
                            evicted = store.get(EVICTED_BEFORE)
                            if evicted is None or last > evicted:
                                store[EVICTED_BEFORE] = last
                        return
                    if not entry.get("closed") and last + self.horizon <= clock:
                        if not ids.is_simulation_tenant(entry["tenant"]):  # the reading held back, if any
                            read = claim_read(entry, last, closing=True)
                            if read is not None:
                                out.append(read)
                        entry = self._compact(entry)
                    due = self._due(entry)
                    if due is None or due > clock:
                        break
                store[key] = entry
                if due is not None:
                    index.add(store, key, due)

            index.expire(store, clock, due_of, on_due)
        return out

    def _overdue(self, entry: dict[str, Any], now: datetime) -> list[Event]:
        claim, verified = entry["claim"], entry["verified"]
        out: list[Event] = []
        if (
            claim is not None
            and not verified
            and not entry.get("matched")
            and claim["at"] + self.horizon <= now
            and _awaits_verification(entry)
        ):
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


def _confidence(value: object) -> float | None:
    """A span's claim confidence attribute as a number in [0, 1], else None (sent by anyone: never trusted)."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        return None
    try:
        number = float(value)
    except ValueError:
        return None
    return number if 0.0 <= number <= 1.0 else None


def _awaits_verification(entry: dict[str, Any]) -> bool:
    """A stated claim always does; a claim read from the final answer only when it claims something (not
    UNKNOWN) about a trace that called a write tool — read-only traces are rarely verified by anyone."""
    claim = entry["claim"]
    if claim.get("inferred_by") is None:
        return True
    return claim["status"] != "UNKNOWN" and any(write for _, _, write in calls_in_order(entry))
