"""`POST /v1/outcomes`: a verification from any system of record, as JSON (schemas/json/outcome-report.v1).

The body names the work by `trace_id` or by `subject` (`order:ORD-1001`), never both; the tenant is the
API key's. A report by trace id becomes an OutcomeVerified on the trace; a report by subject becomes a
SubjectVerified, which the subject join matches to the tenant's traces that acted on the subject within
the horizon. Same refusals as for spans (401, 400, 411, 413, 415), and a 200 only once the event is
durable. With an `idempotency_key`, the tenant's reports with that key are one event: a retry is answered
200 with `"duplicate": true` and stores nothing new.
"""

from __future__ import annotations

import json
from datetime import datetime
from functools import cache
from typing import Any

from jsonschema import Draft202012Validator

from producers.otlp.codec import IngestError, json_too_deep
from producers.sdk.outcome import outcome_event, subject_outcome_event
from schemas import JSON_DIR
from streams.events import OutcomeVerified, SubjectVerified

OUTCOMES_PATH = "/v1/outcomes"
SCHEMA_FILE = "outcome-report.v1.schema.json"


@cache
def _validator() -> Draft202012Validator:
    return Draft202012Validator(json.loads((JSON_DIR / SCHEMA_FILE).read_text(encoding="utf-8")))


def parse_report(body: bytes) -> dict[str, Any]:
    """The report as a checked document; IngestError(400) says what is wrong with it."""
    if json_too_deep(body):
        raise IngestError(400, "invalid JSON body: nested too deeply")
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise IngestError(400, f"invalid JSON body: {exc}") from None
    if not isinstance(doc, dict):
        raise IngestError(400, "invalid outcome report: expected a JSON object")
    if ("trace_id" in doc) == ("subject" in doc):
        raise IngestError(400, "invalid outcome report: give either trace_id or subject (e.g. order:ORD-1001)")
    errors = sorted(_validator().iter_errors(doc), key=lambda e: (list(e.absolute_path), e.message))
    if errors:
        first = errors[0]
        where = ".".join(str(p) for p in first.absolute_path) or "(report)"
        raise IngestError(400, f"invalid outcome report: {where}: {first.message[:300]}")
    if "verified_at" in doc:
        doc["verified_at"] = _timestamp(doc["verified_at"])
    return doc


def _timestamp(text: str) -> datetime:
    try:
        value = datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise IngestError(400, f"invalid outcome report: verified_at: {text!r} is not an RFC 3339 time") from None
    if value.tzinfo is None:
        raise IngestError(400, "invalid outcome report: verified_at needs a time zone (e.g. 2026-01-01T10:00:00Z)")
    return value


def report_event(doc: dict[str, Any], tenant: str, received_at: datetime) -> OutcomeVerified | SubjectVerified:
    """The event a checked report becomes, under `tenant`, received at `received_at`."""
    common: dict[str, Any] = {
        "tenant": tenant,
        "at": doc.get("verified_at") or received_at,
        "received_at": received_at,
        "business_outcome": doc.get("business_outcome"),
        "idempotency_key": doc.get("idempotency_key"),
    }
    args = (doc["status"], doc["verified"], doc["source"], doc.get("evidence"))
    try:
        if "trace_id" in doc:
            return outcome_event(doc["trace_id"], *args, **common)
        return subject_outcome_event(doc["subject"], *args, **common)
    except ValueError as exc:  # the schema's patterns already hold; this is the models' own check
        raise IngestError(400, f"invalid outcome report: {exc}") from None
