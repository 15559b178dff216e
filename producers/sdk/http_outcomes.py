"""Verifications over HTTP: the OutcomeReporter's queue and retries, sending to the receiver's
`POST /v1/outcomes` (producers/otlp/outcomes.py) instead of writing to the log.

This is how a process other than the one that runs `agenttwin ingest` reports what its system of record
verified: the tenant is the API key's (the events built here carry a placeholder tenant the receiver never
reads), and each report goes with an idempotency key derived from its content, so a retry after a lost
answer is stored once. Where to send it: the `endpoint` argument, else `AGENTTWIN_OTLP_ENDPOINT`, else the
base of `OTEL_EXPORTER_OTLP_ENDPOINT` / `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`; the key: `api_key`, else
`AGENTTWIN_API_KEY`, else one in the OTEL headers (producers/sdk/setup.py).
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from typing import Any

import httpx

from producers.sdk.reporter import OutcomeReporter
from producers.sdk.setup import OUTCOMES_PATH, base_url, otlp_target
from streams.events import Event, OutcomeVerified, SubjectVerified

KEY_TENANT = "(the API key's tenant)"  # never sent: the receiver takes the tenant from the key


class OutcomeRejected(Exception):
    """The receiver did not store a report (the status and its message)."""


def outcomes_url(endpoint: str | None = None, env: Mapping[str, str] | None = None) -> str:
    env = os.environ if env is None else env
    if endpoint:
        return base_url(endpoint.rstrip("/").removesuffix(OUTCOMES_PATH)) + OUTCOMES_PATH
    if env.get("AGENTTWIN_OTLP_ENDPOINT", "").strip():
        return base_url(env["AGENTTWIN_OTLP_ENDPOINT"].strip()) + OUTCOMES_PATH
    traces, _ = otlp_target(None, None, env)
    return base_url(traces) + OUTCOMES_PATH


def report_document(event: OutcomeVerified | SubjectVerified) -> dict[str, Any]:
    """The outcome-report.v1 document of a verification event."""
    doc: dict[str, Any] = {
        "status": event.status,
        "verified": event.verified,
        "source": event.source,
        "verified_at": event.occurred_at.isoformat(),
        "idempotency_key": event.event_id,
    }
    if isinstance(event, SubjectVerified):
        doc["subject"] = event.subject
    else:
        doc["trace_id"] = event.trace_id
    if event.reason:
        doc["evidence"] = event.reason
    if event.business_outcome:
        doc["business_outcome"] = event.business_outcome
    return doc


class HttpOutcomePublisher:
    """A Publisher of verification events that POSTs each to `/v1/outcomes`; raises when one is not stored."""

    def __init__(
        self,
        endpoint: str | None = None,
        api_key: str | None = None,
        *,
        timeout_s: float = 10.0,
        client: httpx.Client | None = None,
        env: Mapping[str, str] | None = None,
    ) -> None:
        self.url = outcomes_url(endpoint, env)
        _, headers = otlp_target(None, api_key, env)
        self.headers = {**headers, "Content-Type": "application/json"}
        self._client = client or httpx.Client(timeout=timeout_s)

    def publish(self, events: Iterable[Event]) -> int:
        stored = 0
        for event in events:
            if not isinstance(event, OutcomeVerified | SubjectVerified):
                raise TypeError(f"only verifications go to {OUTCOMES_PATH}, not {event.event_type}")
            response = self._client.post(self.url, json=report_document(event), headers=self.headers)
            if response.status_code != 200:
                raise OutcomeRejected(f"{self.url} answered {response.status_code}: {response.text[:300]}")
            stored += 0 if response.json().get("duplicate") else 1
        return stored

    def close(self) -> None:
        self._client.close()


class HttpOutcomeReporter(OutcomeReporter):
    """An OutcomeReporter over its own HttpOutcomePublisher, which `close` closes too."""

    publisher: HttpOutcomePublisher

    def close(self, timeout: float = 5.0) -> bool:
        done = super().close(timeout)
        self.publisher.close()
        return done


def http_reporter(endpoint: str | None = None, api_key: str | None = None, **options: Any) -> HttpOutcomeReporter:
    """An OutcomeReporter that sends to an AgentTwin receiver over HTTP (never blocks or raises into the caller)."""
    return HttpOutcomeReporter(HttpOutcomePublisher(endpoint, api_key), tenant=KEY_TENANT, **options)
