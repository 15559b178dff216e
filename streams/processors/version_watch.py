"""The version watch's second stage: per (tenant, agent), window rows and the sequential version test.

Input: TraceTallied (keyed by tenant and agent, so one agent's traces are in one partition). For each new
revision of a trace it takes back the trace's previous counts and adds its new ones: in its one-minute
window row (a VersionWindowed with the next revision) and, once verified, in its version's test counts.
Then evaluation/version_watch.assess decides, under the VersionPolicy, which VersionRegressed and
VersionCleared to emit; each alarm is emitted once (its id is deterministic) and remembered in the store.

The store is bounded like the version tally's: a trace's entry and a window row are dropped RETENTION after
their last change (event time), found through a time index; a TraceTallied at or before the latest time
dropped changes nothing. What stays is per agent: its versions' test counts, alarms and evidence.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any

from evaluation.version_policy import load_version_policy
from evaluation.version_watch import (
    MAX_EVIDENCE_TRACES,
    REGRESSED,
    WINDOW_COUNTS,
    Decision,
    VersionPolicy,
    add_counts,
    alarm_key,
    assess,
    observation,
    pair_key,
    recorded,
    window_contribution,
)
from streams import ids
from streams.events import Event, TraceTallied, VersionCleared, VersionRegressed, VersionWindowed
from streams.processors._expiry import Retention
from streams.processors.base import Processor, Store
from streams.processors.version_tally import RETENTION


def alarm_id(tenant: str | None, agent: str, baseline: str, candidate: str, metric: str) -> str:
    return ids.event_id("VersionAlarm", tenant or "", agent, baseline, candidate, metric)


class VersionWatch(Processor):
    inputs = ("version-traces",)
    stateful = True

    def __init__(self, policy: VersionPolicy | None = None, retention: timedelta = RETENTION) -> None:
        self.policy = policy or load_version_policy()
        self._kept = Retention(retention)

    @property
    def name(self) -> str:
        return "version-watch"

    def handle(self, store: Store, event: Event) -> list[Event]:
        if not isinstance(event, TraceTallied):
            return []
        if self._kept.too_late(store, event.occurred_at):
            return []  # at or before what was dropped: a duplicate, or too late to count
        trace_key = f"trace|{event.tenant or ''}|{event.trace_id}"
        before: dict[str, Any] = store.get(trace_key) or {}
        if event.revision <= before.get("revision", 0):
            return []
        tally = {
            "claimed_status": event.claimed_status,
            "verified_status": event.verified_status,
            "contradicted": event.contradicted,
            "verified_failure": event.verified_failure,
            "tool_errors": event.tool_errors,
            "escalated": event.escalated,
        }
        window = [event.agent_version, event.window_start.isoformat()]
        counts, obs = window_contribution(tally), observation(tally)
        after: dict[str, Any] = {"revision": event.revision, "window": window, "counts": counts, "obs": obs}
        self._kept.put(store, trace_key, after, before.get(Retention.CHANGED), event.occurred_at)
        out: list[Event] = []
        # the window rows: take back the previous counts, add the new ones
        changes: dict[tuple[str, str], dict[str, int]] = {}
        if before:
            old = (before["window"][0], before["window"][1])
            changes[old] = add_counts(changes.get(old, {}), before["counts"], -1)
        new = (window[0], window[1])
        changes[new] = add_counts(changes.get(new, {}), counts)
        for (version, start), delta in sorted(changes.items()):
            if any(delta.values()):
                out.append(self._window(store, event, version, start, delta))
        # the version test counts and the decisions
        agent_key = f"agent|{event.watch_key}"
        state: dict[str, Any] = dict(
            store.get(agent_key) or {"versions": {}, "alarms": {}, "cleared": [], "evidence": {}}
        )
        versions = dict(state["versions"])
        if before.get("obs"):
            versions[before["window"][0]] = add_counts(versions.get(before["window"][0], {}), before["obs"], -1)
        if obs:
            versions[event.agent_version] = add_counts(versions.get(event.agent_version, {}), obs)
        evidence = dict(state["evidence"])
        listed = list(evidence.get(event.agent_version, []))
        if event.contradicted and event.trace_id not in listed and len(listed) < MAX_EVIDENCE_TRACES:
            evidence[event.agent_version] = [*listed, event.trace_id]
        cleared = set(state["cleared"])
        decisions = assess(versions, state["alarms"], cleared, self.policy)
        alarms, cleared = recorded(state["alarms"], cleared, decisions)
        store[agent_key] = {"versions": versions, "alarms": alarms, "cleared": sorted(cleared), "evidence": evidence}
        out += [self._decision(event, d, evidence) for d in decisions]
        return out

    def tick(self, store: Store, now: datetime) -> list[Event]:
        """Drop the trace entries and window rows whose last change is RETENTION behind `now`; emits nothing."""
        self._kept.expire(store, now)
        return []

    def _window(self, store: Store, event: TraceTallied, version: str, start: str, delta: dict[str, int]) -> Event:
        key = f"window|{event.watch_key}|{version}|{start}"
        row: dict[str, Any] = store.get(key) or {"counts": {}, "revision": 0}
        counts = add_counts(row["counts"], delta)
        revision = int(row["revision"]) + 1
        self._kept.put(
            store, key, {"counts": counts, "revision": revision}, row.get(Retention.CHANGED), event.occurred_at
        )
        return VersionWindowed(
            event_id=ids.event_id("VersionWindowed", event.watch_key, version, start, revision),
            occurred_at=event.occurred_at,
            correlation_id=event.watch_key,
            tenant=event.tenant,
            watch_key=event.watch_key,
            agent=event.agent,
            agent_version=version,
            window_start=datetime.fromisoformat(start),
            revision=revision,
            **{name: int(counts.get(name, 0)) for name in WINDOW_COUNTS},  # type: ignore[arg-type]
        )

    def _decision(self, event: TraceTallied, d: Decision, evidence: dict[str, list[str]]) -> Event:
        tenant, agent, policy = event.tenant, event.agent, self.policy
        if d.kind == REGRESSED and d.metric is not None:
            test = d.tests[d.metric]
            return VersionRegressed(
                event_id=ids.event_id(
                    "VersionRegressed", tenant or "", agent, d.baseline_version, d.candidate_version, d.metric
                ),
                occurred_at=event.occurred_at,
                correlation_id=event.watch_key,
                tenant=tenant,
                watch_key=event.watch_key,
                alarm_id=alarm_id(tenant, agent, d.baseline_version, d.candidate_version, d.metric),
                agent=agent,
                baseline_version=d.baseline_version,
                candidate_version=d.candidate_version,
                metric=d.metric,
                baseline_traces=test.baseline_trials,
                baseline_events=test.baseline_events,
                baseline_rate=round(test.baseline_rate, 6),
                candidate_traces=test.candidate_trials,
                candidate_events=test.candidate_events,
                candidate_rate=round(test.candidate_rate, 6),
                e_value=round(test.e_value, 6),
                log_e_value=round(test.log_e, 6),
                threshold=round(policy.threshold, 6),
                alpha=policy.alpha,
                policy=policy.name,
                detected_at=event.occurred_at,
                detail=(
                    f"{agent} {d.candidate_version}: {d.metric.replace('_', ' ')} {test.candidate_rate:.1%} of "
                    f"{test.candidate_trials} verified traces vs {test.baseline_rate:.1%} of {test.baseline_trials} "
                    f"on {d.baseline_version} (e-value {test.e_value:.3g} >= {policy.threshold:.3g})"
                ),
                contradicted_traces=list(evidence.get(d.candidate_version, [])),
            )
        first = d.tests[policy.metrics[0]]
        aid = alarm_id(tenant, agent, d.baseline_version, d.candidate_version, d.metric) if d.metric else None
        if d.replaced_by:
            detail = f"{d.replaced_by} cleared against {d.baseline_version}: the alarm on {d.candidate_version} closes"
        else:
            rates = ", ".join(f"{m} {t.candidate_rate:.1%} vs {t.baseline_rate:.1%}" for m, t in d.tests.items())
            detail = (
                f"{d.candidate_version}: {first.candidate_trials} verified traces and no alarm against "
                f"{d.baseline_version} ({rates})"
            )
        return VersionCleared(
            event_id=ids.event_id(
                "VersionCleared", tenant or "", agent, d.baseline_version, d.candidate_version, d.metric or "", d.reason
            ),
            occurred_at=event.occurred_at,
            correlation_id=event.watch_key,
            tenant=tenant,
            watch_key=event.watch_key,
            agent=agent,
            baseline_version=d.baseline_version,
            candidate_version=d.candidate_version,
            reason=d.reason,
            baseline_traces=first.baseline_trials,
            candidate_traces=first.candidate_trials,
            policy=policy.name,
            cleared_at=event.occurred_at,
            detail=detail,
            alarm_id=aid,
            metric=d.metric,
            replaced_by=d.replaced_by,
        )


__all__ = ["VersionWatch", "alarm_id", "alarm_key", "pair_key"]
