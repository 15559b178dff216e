"""Outcome join: claimed outcomes (from spans) x verified outcomes -> contradiction alerts.

Keyed by trace id; either side may arrive first and at any delay. A claim is compared with each
evaluator version's verification. One-sided entries older than the horizon are reported
(claim never verified / verification without a claim), never dropped silently.
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
        key = event.trace_id
        entry: dict[str, Any] = dict(store.get(key) or {"claim": None, "tools": {}, "verified": {}, "sent": []})
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
                    "at": event.occurred_at,
                    "tenant": event.tenant,
                }
        else:
            entry["verified"] = {**entry["verified"], event.evaluator_version: event}
        out = self._alerts(key, entry)
        store[key] = entry
        return out

    def _alerts(self, trace_id: str, entry: dict[str, Any]) -> list[Event]:
        claim = entry["claim"]
        if claim is None:
            return []
        out: list[Event] = []
        for version, verified in sorted(entry["verified"].items()):
            if not is_contradiction(claim["status"], verified.status, verified.verified):
                continue
            alert = ids.alert_id(trace_id, version, "contradiction")
            if alert in entry["sent"]:
                continue
            entry["sent"] = [*entry["sent"], alert]
            out.append(
                self._alert(
                    alert,
                    "contradiction",
                    trace_id,
                    entry,
                    version,
                    verified,
                    f"claimed {claim['status']}, verification found {verified.status}: {verified.reason}",
                )
            )
        return out

    def _alert(
        self,
        alert: str,
        kind: str,
        trace_id: str,
        entry: dict[str, Any],
        version: str,
        verified: OutcomeVerified | None,
        detail: str,
    ) -> ContradictionDetected:
        claim = entry["claim"] or {}
        times = [t for t in (claim.get("at"), verified.occurred_at if verified else None) if t is not None]
        at = max(times)
        return ContradictionDetected(
            event_id=alert,
            occurred_at=at,
            correlation_id=trace_id,
            tenant=claim.get("tenant") or (verified.tenant if verified else None),
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
        """Report entries that stayed one-sided past the horizon (each once)."""
        out: list[Event] = []
        for trace_id, value in list(store.items()):
            entry: dict[str, Any] = dict(value)
            claim, verified = entry["claim"], entry["verified"]
            if claim is not None and not verified and claim["at"] + self.horizon <= now:
                alert = ids.alert_id(trace_id, "*", "claim_never_verified")
                if alert not in entry["sent"]:
                    entry["sent"] = [*entry["sent"], alert]
                    out.append(
                        self._alert(
                            alert,
                            "claim_never_verified",
                            trace_id,
                            entry,
                            "*",
                            None,
                            f"claimed {claim['status']}; no verification within {self.horizon}",
                        )
                    )
            if claim is None:
                for version, v in sorted(verified.items()):
                    alert = ids.alert_id(trace_id, version, "verification_without_claim")
                    if alert in entry["sent"] or v.occurred_at + self.horizon > now:
                        continue
                    entry["sent"] = [*entry["sent"], alert]
                    out.append(
                        self._alert(
                            alert,
                            "verification_without_claim",
                            trace_id,
                            entry,
                            version,
                            v,
                            f"verified {v.status}; no claimed outcome within {self.horizon}",
                        )
                    )
            store[trace_id] = entry
        return out
