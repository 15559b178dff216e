"""Deterministic identities: the same fact always gets the same id, so redelivery and replay dedupe."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

# The twin's pinned clock (spec §2.7); events of a simulated case carry it as their event time.
PINNED_NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _digest(*parts: object) -> str:
    return hashlib.sha256("|".join(map(str, parts)).encode()).hexdigest()


def event_id(event_type: str, *identity: object) -> str:
    return _digest(event_type, *identity)[:32]


def trace_id_for_case(case_id: str) -> str:
    """A simulated case's trace id: 32 hex, like an OpenTelemetry trace id."""
    return _digest("trace", case_id)[:32]


def span_id(trace_id: str, index: int) -> str:
    return _digest("span", trace_id, index)[:16]


# Simulations run under this reserved tenant namespace; no ingest API key may map to a tenant in it
# (producers/otlp/keys.py refuses such a mapping), so nothing sent from outside shares a simulation's
# ids or its outcome-join entry, whatever trace ids it carries.
SIMULATION_NAMESPACE = "sim:"


def simulation_tenant(tenant: str | None) -> str:
    """The tenant a simulated case's trace events (spans, verified outcome, alerts) are recorded under."""
    return SIMULATION_NAMESPACE + (tenant or "")


def is_simulation_tenant(tenant: str | None) -> bool:
    return (tenant or "").strip().casefold().startswith(SIMULATION_NAMESPACE)


def span_event_id(tenant: str | None, trace_id: str, span_id: str) -> str:
    """A span's event id: the same span re-sent by its tenant dedupes; another tenant's never collides."""
    return event_id("SpanRecorded", tenant or "", trace_id, span_id)


def verification_event_id(tenant: str | None, trace_id: str, version: str, *identity: object) -> str:
    return event_id("OutcomeVerified", tenant or "", trace_id, version, *identity)


def join_key(tenant: str | None, trace_id: str) -> str:
    """The outcome join's entity: a trace id means something only within its tenant."""
    return f"{tenant or ''}|{trace_id}"


def alert_id(tenant: str | None, trace_id: str, evaluator_version: str, kind: str) -> str:
    return _digest("alert", tenant or "", trace_id, evaluator_version, kind)[:32]


def parse_time(value: str | None) -> datetime:
    """A case's clock: the scenario's `context.now` when it sets one, else the pinned default."""
    if not value:
        return PINNED_NOW
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
