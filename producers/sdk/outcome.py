"""A verified outcome reported by the system of record, as an OutcomeVerified event (spec §8.1).

Statuses outside SUCCESS/PARTIAL/FAILURE/UNKNOWN become UNKNOWN; sources outside the known list become
`unavailable`, and `unavailable` forces verified=false: a claim nobody could check is never disproved.
A verification belongs to one tenant and matches only that tenant's claims; it carries the time the
reporter made it (`received_at`), and the time the caller says it happened (`at`) is flagged when it is
beyond the documented skew (streams/clock.py).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from evaluation.outcome import MAX_BUSINESS_OUTCOME, UNAVAILABLE, normalize_outcome
from streams import clock, ids
from streams.events import OutcomeVerified, SubjectVerified
from streams.span_reading import normalize_subject
from twin_engine.canonical import canonical_json, sha256_hex

VERIFICATION_SOURCES = (
    "state_assertion",
    "tool_twin_state",
    "tool_result",
    "external_callback",
    "human_review",
    "semantic_judge",
    UNAVAILABLE,
)
# The join keys verifications by evaluator version; reports from a system of record share this one.
SYSTEM_OF_RECORD = "system-of-record"
MAX_REASON = 4000
_TRACE_ID = re.compile(r"^[0-9a-f]{32}$")

Evidence = str | Mapping[str, Any] | None


def normalize_status(status: str | None) -> str:
    return normalize_outcome(status) or "UNKNOWN"


def normalize_source(source: str | None) -> str:
    value = (source or "").strip().lower()
    return value if value in VERIFICATION_SOURCES else UNAVAILABLE


def normalize_trace_id(trace_id: str) -> str:
    value = trace_id.strip().lower()
    if not _TRACE_ID.match(value) or not value.strip("0"):
        raise ValueError(f"trace id must be 32 hex digits, not all zero: {trace_id!r}")
    return value


def evidence_text(evidence: Evidence) -> str:
    if evidence is None:
        return ""
    text = evidence if isinstance(evidence, str) else canonical_json(dict(evidence))
    return text[:MAX_REASON]


def outcome_event(
    trace_id: str,
    status: str | None,
    verified: bool,
    source: str | None,
    evidence: Evidence = None,
    *,
    tenant: str,
    at: datetime,
    received_at: datetime | None = None,
    business_outcome: str | None = None,
    claimed_status: str | None = None,
    agent: str | None = None,
    agent_version: str | None = None,
    verifier_version: str = SYSTEM_OF_RECORD,
    idempotency_key: str | None = None,
) -> OutcomeVerified:
    """`at`: when the outcome was verified, as the caller says; `received_at`: when it was reported (default `at`).
    With an `idempotency_key`, the tenant's reports with that key are one event whatever they say.

    Raises ValueError for a malformed trace id or an empty tenant (the reporter's guard counts it)."""
    if not tenant or not tenant.strip():
        raise ValueError("a verified outcome needs the tenant whose trace it verifies")
    received = received_at or at
    trace = normalize_trace_id(trace_id)
    norm_status, norm_source = normalize_status(status), normalize_source(source)
    is_verified = bool(verified) and norm_source != UNAVAILABLE
    reason = evidence_text(evidence)
    identity = (
        sha256_hex(["idempotency-key", idempotency_key])
        if idempotency_key
        else sha256_hex([norm_status, is_verified, norm_source, reason, business_outcome, claimed_status])
    )
    return OutcomeVerified(
        # the same report twice is one event; a corrected report is a new one (the join keeps the latest)
        event_id=ids.verification_event_id(tenant, trace, verifier_version, identity),
        occurred_at=at,
        received_at=received,
        clock_skew=clock.clock_skew(at, received),
        correlation_id=trace,
        tenant=tenant,
        trace_id=trace,
        evaluator_version=verifier_version,
        status=norm_status,
        verified=is_verified,
        source=norm_source,
        reason=reason,
        claimed_status=normalize_outcome(claimed_status),
        business_outcome=business_outcome[:MAX_BUSINESS_OUTCOME] if business_outcome else None,
        agent=agent,
        agent_version=agent_version,
    )


def subject_outcome_event(
    subject: str,
    status: str | None,
    verified: bool,
    source: str | None,
    evidence: Evidence = None,
    *,
    tenant: str,
    at: datetime,
    received_at: datetime | None = None,
    business_outcome: str | None = None,
    verifier_version: str = SYSTEM_OF_RECORD,
    idempotency_key: str | None = None,
) -> SubjectVerified:
    """A verification of a business subject (`order:ORD-1001`), for the tenant's traces that acted on it.

    Raises ValueError for a malformed subject or an empty tenant."""
    if not tenant or not tenant.strip():
        raise ValueError("a verified outcome needs the tenant whose work it verifies")
    norm_subject = normalize_subject(subject)
    if norm_subject is None:
        raise ValueError(f"a subject is entity:value, e.g. order:ORD-1001, not {subject!r}")
    received = received_at or at
    norm_status, norm_source = normalize_status(status), normalize_source(source)
    is_verified = bool(verified) and norm_source != UNAVAILABLE
    reason = evidence_text(evidence)
    identity = (
        sha256_hex(["idempotency-key", idempotency_key])
        if idempotency_key
        else sha256_hex([norm_status, is_verified, norm_source, reason, business_outcome])
    )
    return SubjectVerified(
        event_id=ids.event_id("SubjectVerified", tenant, norm_subject, verifier_version, identity),
        occurred_at=at,
        received_at=received,
        clock_skew=clock.clock_skew(at, received),
        correlation_id=norm_subject,
        tenant=tenant,
        subject=norm_subject,
        evaluator_version=verifier_version,
        status=norm_status,
        verified=is_verified,
        source=norm_source,
        reason=reason,
        business_outcome=business_outcome[:MAX_BUSINESS_OUTCOME] if business_outcome else None,
    )
