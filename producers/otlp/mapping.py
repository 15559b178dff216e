"""ExportTraceServiceRequest -> SpanRecorded events, one per valid span.

The tenant is the one the API key authenticated, never a span attribute: attributes are what the
exporter says (claims), and `agenttwin.tenant` / `tenant` stay in the attributes as sent, while the
event's `tenant` field — the one every downstream stage filters on — is the key's. Event ids come from
(tenant, trace_id, span_id), so a batch re-sent by its tenant is deduplicated and another tenant's span
with the same ids is a different span. Every span carries the time the receiver got it (`received_at`);
an end time beyond the documented skew from it is flagged in `clock_skew` (streams/clock.py).

Whatever instrumentation wrote a span (AgentTwin's SDK, OpenTelemetry GenAI, OpenInference), what it says
is read once here (streams/span_reading.py) into the event's `span_role`, `tool_name`, `tool_error`,
`agent_name` and `agent_version`; the attributes stay as sent. Each business subject a span names (a write
tool's `order_id`, an `agenttwin.subject` attribute) becomes a SubjectLinked event keyed by the subject, so
a verification that names only the subject can find the trace (streams/processors/subject_join.py).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.trace.v1.trace_pb2 import ScopeSpans, Span, Status

from producers.otlp.attributes import flatten
from streams import clock, ids
from streams.events import SpanRecorded, SubjectLinked
from streams.span_reading import keep_reading, read_fields, read_span

SOURCE_ATTRIBUTE = "agenttwin.source"
PRODUCTION = "production"
SIMULATION = "simulation"
UNKNOWN_SERVICE = "unknown_service"  # the OTel SDK's default when service.name is unset
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_TRACE_ID_BYTES, _SPAN_ID_BYTES = 16, 8


@dataclass(frozen=True)
class MappedBatch:
    events: list[SpanRecorded]
    rejected: int = 0
    problems: dict[str, int] = field(default_factory=dict)  # reason -> spans rejected for it
    links: list[SubjectLinked] = field(default_factory=list)  # the business subjects the spans name

    @property
    def error_message(self) -> str:
        """The partial-success message: empty when everything was accepted."""
        if not self.rejected:
            return ""
        reasons = ", ".join(f"{n} {reason}" for reason, n in sorted(self.problems.items()))
        return f"rejected {self.rejected} span(s): {reasons}"


def _enum_name(full: str, prefix: str) -> str:
    return full.removeprefix(prefix) if full.startswith(prefix) else full


# enum number -> name, read once from the proto's descriptors (a lookup per span instead of a Name() call)
_KINDS = {n: _enum_name(name, "SPAN_KIND_") for name, n in Span.SpanKind.items()}
_STATUS_CODES = {n: _enum_name(name, "STATUS_CODE_") for name, n in Status.StatusCode.items()}


def span_kind(span: Span) -> str:
    return _KINDS.get(span.kind, "UNSPECIFIED")  # a number this proto version does not know: UNSPECIFIED


def status_code(span: Span) -> str:
    return _STATUS_CODES.get(span.status.code, "UNSET")


def event_time(nanos: int) -> datetime:
    return _EPOCH + timedelta(microseconds=nanos // 1000)


def problem(span: Span) -> str | None:
    """Why a span cannot be stored, or None. Ids must have their OTLP sizes and not be all zero."""
    if len(span.trace_id) != _TRACE_ID_BYTES or not any(span.trace_id):
        return "invalid trace_id"
    if len(span.span_id) != _SPAN_ID_BYTES or not any(span.span_id):
        return "invalid span_id"
    if span.parent_span_id and len(span.parent_span_id) != _SPAN_ID_BYTES:
        return "invalid parent_span_id"
    if span.end_time_unix_nano and span.end_time_unix_nano < span.start_time_unix_nano:
        return "end before start"
    return None


def source_of(attributes: dict[str, str], resource: dict[str, str]) -> str:
    said = attributes.get(SOURCE_ATTRIBUTE) or resource.get(SOURCE_ATTRIBUTE) or ""
    return SIMULATION if said.strip().lower() == SIMULATION else PRODUCTION


def _scope_attributes(scope_spans: ScopeSpans) -> dict[str, str]:
    out = {}
    if scope_spans.scope.name:
        out["otel.scope.name"] = scope_spans.scope.name
    if scope_spans.scope.version:
        out["otel.scope.version"] = scope_spans.scope.version
    return out


@dataclass(slots=True)  # not frozen: a frozen __init__ costs a call per field, and this lives for one reading
class _Fields:
    """What a reading reads of a span, before its event is built (streams.span_reading.SpanFields)."""

    attributes: dict[str, str]
    resource_attributes: dict[str, str]
    parent_span_id: str | None
    name: str
    status_code: str
    status_message: str | None


def to_event(
    span: Span, resource: dict[str, str], scope: dict[str, str], tenant: str, received_at: datetime
) -> SpanRecorded:
    """The span's event, what it says (streams/span_reading.py) filled in and kept on it for the join."""
    trace_id, span_id = span.trace_id.hex(), span.span_id.hex()
    attributes = {**scope, **flatten(span.attributes)}
    end = span.end_time_unix_nano or span.start_time_unix_nano
    parent = span.parent_span_id.hex() if any(span.parent_span_id) else None
    occurred_at = event_time(end)
    code, message = status_code(span), span.status.message or None
    reading = read_fields(_Fields(attributes, resource, parent, span.name, code, message))
    event = SpanRecorded(
        event_id=ids.span_event_id(tenant, trace_id, span_id),
        occurred_at=occurred_at,
        received_at=received_at,
        clock_skew=clock.clock_skew(occurred_at, received_at),
        correlation_id=trace_id,
        tenant=tenant,
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=span.name,
        kind=span_kind(span),
        start_unix_nano=span.start_time_unix_nano,
        end_unix_nano=end,
        status_code=code,
        status_message=message,
        service_name=resource.get("service.name") or UNKNOWN_SERVICE,
        source=source_of(attributes, resource),
        attributes=attributes,
        resource_attributes=resource,
        span_role=reading.role,
        tool_name=reading.tool_name,
        tool_error=reading.tool_error,
        agent_name=reading.agent_name,
        agent_version=reading.agent_version,
    )
    keep_reading(event, reading)
    return event


def interpreted(event: SpanRecorded) -> tuple[SpanRecorded, list[SubjectLinked]]:
    """The span with what it says filled in, and one link per business subject it names."""
    reading = read_span(event)
    said = (reading.role, reading.tool_name, reading.tool_error, reading.agent_name, reading.agent_version)
    span = event
    if (event.span_role, event.tool_name, event.tool_error, event.agent_name, event.agent_version) != said:
        span = replace(
            event,
            span_role=reading.role,
            tool_name=reading.tool_name,
            tool_error=reading.tool_error,
            agent_name=reading.agent_name,
            agent_version=reading.agent_version,
        )
        keep_reading(span, reading)
    return span, [
        SubjectLinked(
            event_id=ids.event_id("SubjectLinked", span.tenant or "", subject, span.trace_id, tool or ""),
            occurred_at=span.occurred_at,
            received_at=span.received_at,
            correlation_id=span.trace_id,
            tenant=span.tenant,
            subject=subject,
            trace_id=span.trace_id,
            tool=tool,
        )
        for subject, tool in reading.subjects
    ]


def map_request(request: ExportTraceServiceRequest, tenant: str, *, received_at: datetime) -> MappedBatch:
    """The request's valid spans under `tenant`, each stamped with the receive time `received_at`."""
    events: list[SpanRecorded] = []
    links: list[SubjectLinked] = []
    problems: Counter[str] = Counter()
    for resource_spans in request.resource_spans:
        resource = flatten(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            scope = _scope_attributes(scope_spans)
            for span in scope_spans.spans:
                reason = problem(span)
                if reason is not None:
                    problems[reason] += 1
                    continue
                event, linked = interpreted(to_event(span, resource, scope, tenant, received_at))
                events.append(event)
                links += linked
    return MappedBatch(events, sum(problems.values()), dict(problems), links=links)
