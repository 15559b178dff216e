"""`from agenttwin import sdk`: the public entry point, OTEL_EXPORTER_OTLP_* honoured, subjects, and
verifications over HTTP (by trace id or by subject) against a real receiver."""

from __future__ import annotations

import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

import producers.sdk
from agenttwin import sdk
from producers.otlp import IngestServer
from producers.sdk.http_outcomes import HttpOutcomePublisher, outcomes_url
from producers.sdk.setup import otlp_target, parse_headers
from streams.embedded import EmbeddedRuntime
from streams.events import OutcomeVerified, SpanRecorded, SubjectLinked, SubjectVerified


def test_the_public_sdk_is_the_producers_sdk() -> None:
    assert sdk.agent_run is producers.sdk.agent_run and sdk.OutcomeReporter is producers.sdk.OutcomeReporter
    for name in ("tracer_provider", "http_reporter", "current_trace_id", "set_subject", "report_outcome"):
        assert name in sdk.__all__ and getattr(sdk, name) is getattr(producers.sdk, name)


@pytest.mark.parametrize(
    ("endpoint", "env", "url"),
    [
        ("http://h:1", {}, "http://h:1/v1/traces"),
        ("http://h:1/v1/traces", {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"}, "http://h:1/v1/traces"),
        (
            None,
            {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://t:9/custom", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://x"},
            "http://t:9/custom",
        ),
        (None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318/"}, "http://b:4318/v1/traces"),
        (None, {"AGENTTWIN_OTLP_ENDPOINT": "http://a:1"}, "http://a:1/v1/traces"),
        (None, {}, "http://127.0.0.1:4318/v1/traces"),
    ],
)
def test_where_spans_go(endpoint: str | None, env: dict[str, str], url: str) -> None:
    assert otlp_target(endpoint, None, env)[0] == url


def test_headers_come_from_otel_and_the_key_from_agenttwin() -> None:
    env = {
        "OTEL_EXPORTER_OTLP_HEADERS": "x-agenttwin-api-key=k1,Team=a%20b,broken",
        "OTEL_EXPORTER_OTLP_TRACES_HEADERS": "",
    }
    assert otlp_target(None, None, env)[1] == {"x-agenttwin-api-key": "k1", "team": "a b"}
    assert otlp_target(None, None, {**env, "AGENTTWIN_API_KEY": "k2"})[1]["x-agenttwin-api-key"] == "k2"
    assert otlp_target(None, "k3", {**env, "AGENTTWIN_API_KEY": "k2"})[1]["x-agenttwin-api-key"] == "k3"
    traces = {"OTEL_EXPORTER_OTLP_TRACES_HEADERS": "authorization=Bearer%20k4", "OTEL_EXPORTER_OTLP_HEADERS": "a=b"}
    assert otlp_target(None, None, traces)[1] == {"authorization": "Bearer k4"}
    assert parse_headers("=v,k=,x=1") == {"k": "", "x": "1"}
    assert outcomes_url(None, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://b:4318"}) == "http://b:4318/v1/outcomes"
    assert (
        outcomes_url(None, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://b:1/v1/traces"}) == "http://b:1/v1/outcomes"
    )
    assert outcomes_url("http://r:2/", {}) == outcomes_url("http://r:2/v1/outcomes", {}) == "http://r:2/v1/outcomes"


def test_tracer_provider_honours_the_otel_environment(
    server: IngestServer, runtime: EmbeddedRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", server.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-agenttwin-api-key=key-beta")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "refund-agent")
    monkeypatch.delenv("AGENTTWIN_API_KEY", raising=False)
    provider = sdk.tracer_provider()
    twin = sdk.AgentTwin(tracer_provider=provider)
    with twin.agent_run("refund-agent", "1.3.0", subject="order:ORD-1") as run:
        assert sdk.current_trace_id() == run.trace_id
        with twin.tool_call("refund_payment", {"order_id": "ORD-1"}, risk="WRITE_IRREVERSIBLE") as call:
            call.set_result("ok")
        twin.claim_outcome("SUCCESS")
    assert provider.force_flush(10_000)
    provider.shutdown()
    spans = [e for e in runtime.read_events("spans") if isinstance(e, SpanRecorded)]
    assert {(s.tenant, s.service_name, s.trace_id) for s in spans} == {("beta", "refund-agent", run.trace_id)}
    links = [e for e in runtime.read_events("subjects") if isinstance(e, SubjectLinked)]
    assert {(link.subject, link.trace_id) for link in links} == {("order:ORD-1", run.trace_id)}
    assert sdk.current_trace_id() is None


def test_set_subject_names_the_run_and_refuses_a_malformed_subject() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    twin = sdk.AgentTwin(tracer_provider=provider)
    with twin.agent_run("a", "1") as run:
        twin.set_subject("order:ORD-1")
        run.set_subject("Customer:C-9")
        twin.set_subject("order:ORD-1")  # once
        twin.set_subject("not a subject")
    (root,) = exporter.get_finished_spans()
    assert root.attributes is not None and root.attributes["agenttwin.subject"] == "order:ORD-1,customer:C-9"
    assert twin.stats().dropped == 1


def test_verifications_over_http_by_trace_and_by_subject(server: IngestServer, runtime: EmbeddedRuntime) -> None:
    reporter = sdk.http_reporter(server.url, "key-acme", retry_delay_s=0.01)
    trace_id = "0af7651916cd43dd8448eb211c80319c"
    assert reporter.report_outcome(trace_id, "FAILURE", True, "external_callback", {"refund_count": 2})
    assert reporter.report_outcome(None, "FAILURE", True, "external_callback", "twice", subject="order:ORD-1001")
    assert reporter.report_outcome(None, "FAILURE", True, "external_callback", "twice", subject="order:ORD-1001")
    assert not reporter.report_outcome(None, "FAILURE", True, "x")  # neither trace nor subject: counted, not sent
    assert reporter.flush(10)
    stats = reporter.stats()
    assert (stats.queued, stats.sent, stats.failed, stats.errors) == (3, 3, 0, 1)
    (verified,) = runtime.read_events("verified-outcomes")
    assert isinstance(verified, OutcomeVerified) and (verified.tenant, verified.trace_id) == ("acme", trace_id)
    (by_subject,) = runtime.read_events("subjects")  # the retry with the same content is one report
    assert isinstance(by_subject, SubjectVerified) and (by_subject.tenant, by_subject.subject) == (
        "acme",
        "order:ORD-1001",
    )
    reporter.close()


def test_a_rejected_report_is_counted_as_failed_never_raised(server: IngestServer) -> None:
    reporter = sdk.http_reporter(server.url, "wrong-key", retry_delay_s=0.01, attempts=2)
    assert reporter.report_outcome(None, "FAILURE", True, "external_callback", subject="order:1")
    assert reporter.flush(10)
    stats = reporter.stats()
    assert (stats.sent, stats.failed) == (0, 1) and "401" in (stats.last_error or "")
    reporter.close()
    assert isinstance(reporter.publisher, HttpOutcomePublisher)
