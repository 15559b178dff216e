"""Production traces end to end on a real Kafka broker: the STOCK OpenTelemetry SDK exports spans over
OTLP/HTTP to the receiver, the system of record reports a verified outcome through the AgentTwin SDK,
the outcome join runs as a faust worker, and the contradiction alert arrives on the alerts tail —
exactly once, whichever side reaches the join first."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor

from consumers.alerts import tail_kafka
from producers.otlp import ApiKeys, make_server
from producers.otlp.publishing import SerializedPublisher
from producers.sdk import AgentTwin, OutcomeReporter
from streams.kafka.batch_worker import BatchWorker
from streams.kafka.clients import ensure_topics
from streams.kafka.naming import Naming
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.runner import WorkerGroup
from streams.processors.outcome_join import OutcomeJoin
from tests.integration.kafka_broker import broker_bootstrap, release_broker, unique_name

API_KEY = "it-key-acme"
ALERT_DEADLINE_S = 60.0


@pytest.fixture(scope="module")
def kafka_bootstrap() -> Iterator[str]:
    bootstrap = broker_bootstrap()
    yield bootstrap
    release_broker()


def _agent_run(sdk: AgentTwin) -> str:
    """The canary incident: a timed-out refund retried without a key, then a claimed success."""
    with sdk.agent_run("support-refund-agent", "1.3.0", session_id="conv-3029") as run:
        with sdk.tool_call("lookup_order", {"order_id": "ORD-3029"}, risk="READ") as call:
            call.set_result("ok")
        for attempt in (1, 2):
            with sdk.tool_call(
                "refund_payment", {"order_id": "ORD-3029", "amount": 40.0}, risk="WRITE_IRREVERSIBLE", attempt=attempt
            ) as call:
                call.set_result("timeout" if attempt == 1 else "ok")
        run.claim_outcome("SUCCESS", "Done! I've refunded 40.00 USD")
        return run.trace_id


@pytest.mark.kafka
@pytest.mark.parametrize("verification_first", [True, False], ids=["verification-first", "claim-first"])
def test_contradiction_alert_from_a_stock_otel_export(
    kafka_bootstrap: str, tmp_path: Path, verification_first: bool
) -> None:
    naming = Naming(unique_name("traces-live") + ".")
    ensure_topics(kafka_bootstrap, naming)
    kafka = KafkaPublisher(kafka_bootstrap, naming)
    publisher = SerializedPublisher(kafka)
    server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping({API_KEY: "acme"}))
    server.start()
    provider = TracerProvider(resource=Resource.create({"service.name": "support-refund-agent"}))
    exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces", headers={"x-agenttwin-api-key": API_KEY})
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    reporter = OutcomeReporter(publisher, tenant="acme")
    sdk = AgentTwin(tracer_provider=provider, reporter=reporter)
    lines: list[str] = []

    def report(trace_id: str) -> None:
        assert sdk.report_outcome(trace_id, "FAILURE", True, "external_callback", {"refund_count": 2})
        assert reporter.flush(30)

    async def scenario() -> None:
        worker = BatchWorker(OutcomeJoin(), kafka_bootstrap, naming, tmp_path)
        async with WorkerGroup([worker]) as group:
            if verification_first:
                trace_id = format(0x5EED_0000_0000_0000_0000_0000_0000_3029, "032x")
                await asyncio.to_thread(report, trace_id)
                await group.wait_idle(idle_s=2.0, timeout_s=60)
                await asyncio.to_thread(_export_with_trace_id, sdk, trace_id)
            else:
                trace_id = await asyncio.to_thread(_agent_run, sdk)
                await group.wait_idle(idle_s=2.0, timeout_s=60)
                await asyncio.to_thread(report, trace_id)
            deadline = time.monotonic() + ALERT_DEADLINE_S
            await asyncio.to_thread(
                tail_kafka,
                kafka_bootstrap,
                lines.append,
                naming=naming,
                as_json=False,
                follow=True,
                max_alerts=1,
                stop=lambda: time.monotonic() > deadline,
            )
            group.check()
            # nothing more arrives: exactly one alert for the trace
            more: list[str] = []
            await asyncio.to_thread(
                tail_kafka, kafka_bootstrap, more.append, naming=naming, group="recount", follow=False, idle_s=3.0
            )
            assert len(more) == 1, more

    try:
        asyncio.run(scenario())
    finally:
        provider.shutdown()
        reporter.close()
        server.close()
        kafka.close()
    assert len(lines) == 1, lines
    assert "CONTRADICTION" in lines[0] and "[acme]" in lines[0] and "tool refund_payment" in lines[0]
    assert "claimed SUCCESS, verified FAILURE (external_callback)" in lines[0]
    assert server.receiver.stats.spans_written == 4 and server.receiver.stats.refused.total() == 0


def _export_with_trace_id(sdk: AgentTwin, trace_id: str) -> None:
    """Run the agent inside a remote parent context carrying `trace_id`, as a propagated request would."""
    from opentelemetry import context, trace
    from opentelemetry.trace import NonRecordingSpan, SpanContext, TraceFlags

    parent = SpanContext(int(trace_id, 16), 0x1, is_remote=True, trace_flags=TraceFlags(TraceFlags.SAMPLED))
    token = context.attach(trace.set_span_in_context(NonRecordingSpan(parent)))
    try:
        assert _agent_run(sdk) == trace_id
    finally:
        context.detach(token)


@pytest.mark.parametrize("verification_first", [True, False], ids=["verification-first", "claim-first"])
def test_contradiction_alert_from_a_stock_otel_export_embedded(tmp_path: Path, verification_first: bool) -> None:
    """The same story on the embedded runtime: OutcomeJoin through EmbeddedRuntime.run, tail read-only."""
    from consumers.alerts import tail_embedded
    from streams.embedded import EmbeddedRuntime

    with EmbeddedRuntime(tmp_path / "data", fsync=False) as runtime:
        publisher = SerializedPublisher(runtime)
        server = make_server("127.0.0.1", 0, publisher, ApiKeys.from_mapping({API_KEY: "acme"}))
        server.start()
        provider = TracerProvider(resource=Resource.create({"service.name": "support-refund-agent"}))
        exporter = OTLPSpanExporter(endpoint=f"{server.url}/v1/traces", headers={"x-agenttwin-api-key": API_KEY})
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        reporter = OutcomeReporter(publisher, tenant="acme")
        sdk = AgentTwin(tracer_provider=provider, reporter=reporter)

        def join() -> int:
            """New contradiction alerts of one run of the join (its ClaimRead events are not counted)."""
            with publisher.lock:
                before = len(runtime.read_events("contradictions")) if "contradictions" in runtime.log.topics() else 0
                runtime.run([OutcomeJoin()])
                return len(runtime.read_events("contradictions")) - before

        try:
            if verification_first:
                trace_id = format(0x5EED_0000_0000_0000_0000_0000_0000_3029, "032x")
                assert sdk.report_outcome(trace_id, "FAILURE", True, "external_callback", {"refund_count": 2})
                assert reporter.flush(10)
                assert join() == 0
                _export_with_trace_id(sdk, trace_id)
            else:
                trace_id = _agent_run(sdk)
                assert join() == 0
                assert sdk.report_outcome(trace_id, "FAILURE", True, "external_callback", {"refund_count": 2})
                assert reporter.flush(10)
            assert join() == 1
            assert join() == 0  # re-running adds nothing
        finally:
            provider.shutdown()
            reporter.close()
            server.close()
        lines: list[str] = []
        assert tail_embedded(tmp_path / "data", lines.append) == 1
    assert f"trace {trace_id}" in lines[0] and "[acme]" in lines[0] and "tool refund_payment" in lines[0]
    assert "claimed SUCCESS, verified FAILURE (external_callback)" in lines[0]
    assert server.receiver.stats.spans_written == 4
