"""Receive time and clock skew of events that come from outside (spans, verified outcomes).

A sender writes its own event time; the pipeline stamps `received_at` when the event reaches it. Joins
and horizons run on the receive time. An event time further than MAX_FUTURE_SKEW ahead of its receive
time, or more than MAX_AGE behind it, is flagged (`clock_skew`), never trusted for anything.
Simulated events carry their case's pinned clock in both fields, so simulations stay deterministic.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

MAX_FUTURE_SKEW = timedelta(minutes=5)
MAX_AGE = timedelta(days=7)
FUTURE = "future"  # the event time is later than the receive time plus MAX_FUTURE_SKEW
TOO_OLD = "too_old"  # the event time is earlier than the receive time minus MAX_AGE


def wall_clock() -> datetime:
    """Now, for receive times of events from outside (never used for simulated events)."""
    return datetime.now(UTC)


def clock_skew(occurred_at: datetime, received_at: datetime) -> str | None:
    """FUTURE, TOO_OLD or None (within the documented skew)."""
    if occurred_at > received_at + MAX_FUTURE_SKEW:
        return FUTURE
    if occurred_at < received_at - MAX_AGE:
        return TOO_OLD
    return None
