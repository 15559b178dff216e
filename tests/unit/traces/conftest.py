"""Fixtures for the production-traces tests: the real embedded log as the Publisher, a live receiver on
127.0.0.1, and OTLP request builders."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, InstrumentationScope, KeyValue
from opentelemetry.proto.resource.v1.resource_pb2 import Resource
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span, Status

from producers.otlp import ApiKeys, IngestServer, make_server
from streams.embedded import EmbeddedRuntime

KEYS = {"key-acme": "acme", "key-beta": "beta"}
TRACE = bytes.fromhex("0af7651916cd43dd8448eb211c80319c")
ROOT = bytes.fromhex("b7ad6b7169203331")
CHILD = bytes.fromhex("00f067aa0ba902b7")
START = 1_767_225_600_000_000_000  # 2026-01-01T00:00:00Z
RECEIVED = datetime(2026, 1, 1, 0, 0, 1, tzinfo=UTC)  # when the receiver got agent_trace() in mapping tests


def any_value(value: Any) -> AnyValue:
    if isinstance(value, bool):
        return AnyValue(bool_value=value)
    if isinstance(value, int):
        return AnyValue(int_value=value)
    if isinstance(value, float):
        return AnyValue(double_value=value)
    if isinstance(value, bytes):
        return AnyValue(bytes_value=value)
    if isinstance(value, list):
        out = AnyValue()
        out.array_value.values.extend(any_value(v) for v in value)
        return out
    if isinstance(value, dict):
        out = AnyValue()
        out.kvlist_value.values.extend(KeyValue(key=k, value=any_value(v)) for k, v in value.items())
        return out
    return AnyValue(string_value=str(value))


def kvs(attrs: dict[str, Any]) -> list[KeyValue]:
    return [KeyValue(key=k, value=any_value(v)) for k, v in attrs.items()]


def span(
    span_id: bytes = ROOT,
    *,
    trace_id: bytes = TRACE,
    parent: bytes = b"",
    name: str = "invoke_agent refund-agent",
    attrs: dict[str, Any] | None = None,
    kind: int = Span.SpanKind.SPAN_KIND_INTERNAL,
    start: int = START,
    end: int = START + 5_000_000,
    status: int = Status.StatusCode.STATUS_CODE_UNSET,
) -> Span:
    return Span(
        trace_id=trace_id,
        span_id=span_id,
        parent_span_id=parent,
        name=name,
        kind=kind,  # type: ignore[arg-type]
        start_time_unix_nano=start,
        end_time_unix_nano=end,
        attributes=kvs(attrs or {}),
        status=Status(code=status, message="boom" if status == Status.StatusCode.STATUS_CODE_ERROR else ""),  # type: ignore[arg-type]
    )


def request(*spans: Span, resource: dict[str, Any] | None = None) -> ExportTraceServiceRequest:
    res = Resource(attributes=kvs(resource if resource is not None else {"service.name": "refund-agent"}))
    scope = ScopeSpans(scope=InstrumentationScope(name="agenttwin", version="0.1.0"), spans=list(spans))
    return ExportTraceServiceRequest(resource_spans=[ResourceSpans(resource=res, scope_spans=[scope])])


def agent_trace(trace: bytes = TRACE, root: bytes = ROOT, child: bytes = CHILD) -> ExportTraceServiceRequest:
    """A run that claims SUCCESS after a write-irreversible tool call."""
    return request(
        span(
            root,
            trace_id=trace,
            attrs={"gen_ai.operation.name": "invoke_agent", "agenttwin.outcome.claimed": "SUCCESS"},
        ),
        span(
            child,
            trace_id=trace,
            parent=root,
            name="execute_tool refund_payment",
            kind=Span.SpanKind.SPAN_KIND_CLIENT,
            attrs={"gen_ai.tool.name": "refund_payment", "agenttwin.tool.risk": "WRITE_IRREVERSIBLE"},
        ),
    )


@pytest.fixture
def runtime(tmp_path: Path) -> Iterator[EmbeddedRuntime]:
    with EmbeddedRuntime(tmp_path / "data", fsync=False) as rt:
        yield rt


@pytest.fixture
def server(runtime: EmbeddedRuntime) -> Iterator[IngestServer]:
    srv = make_server("127.0.0.1", 0, runtime, ApiKeys.from_mapping(KEYS), max_body_bytes=64 * 1024)
    srv.start()
    yield srv
    srv.close()
