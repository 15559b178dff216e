"""Deterministic identities: the same fact always gets the same id, so redelivery and replay dedupe."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime

# The twin's pinned clock (spec §2.7); events of a simulated case carry it as their event time.
PINNED_NOW = datetime(2026, 1, 1, tzinfo=UTC)


def _digest(*parts: object) -> str:
    return hashlib.sha256("|".join(str(p) for p in parts).encode()).hexdigest()


def event_id(event_type: str, *identity: object) -> str:
    return _digest(event_type, *identity)[:32]


def trace_id_for_case(case_id: str) -> str:
    """A simulated case's trace id: 32 hex, like an OpenTelemetry trace id."""
    return _digest("trace", case_id)[:32]


def span_id(trace_id: str, index: int) -> str:
    return _digest("span", trace_id, index)[:16]


def alert_id(trace_id: str, evaluator_version: str, kind: str) -> str:
    return _digest("alert", trace_id, evaluator_version, kind)[:32]


def parse_time(value: str | None) -> datetime:
    """A case's clock: the scenario's `context.now` when it sets one, else the pinned default."""
    if not value:
        return PINNED_NOW
    parsed = datetime.fromisoformat(value.replace("Z", "+00:00"))
    return parsed if parsed.tzinfo else parsed.replace(tzinfo=UTC)
