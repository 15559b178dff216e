"""Kafka's own console consumer reads AgentTwin's topics: with infra/java's formatter, each record prints as
JSON decoded by the reference Java Avro library, with its identity headers and its event time (CreateTime)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from agenttwin.pipeline import evaluation_request
from schemas import AVRO_DIR
from streams.embedded import EmbeddedRuntime
from streams.events import Event
from streams.identity import SCHEMA_FINGERPRINT_HEADER, SCHEMA_NAME_HEADER, SINGLE_OBJECT, event_time_ms
from streams.kafka.clients import ensure_topics
from streams.kafka.publisher import KafkaPublisher
from streams.processors import Planner, Simulator
from streams.topics import ALL_TOPICS
from streams.wire import SchemaStore, fingerprint_text
from tests.integration.java_interop import interop_classpath
from tests.integration.kafka.kafka_pipeline_support import new_naming
from tests.integration.kafka_tools import kafka_tool


def simulated_events(data_dir: Path) -> list[Event]:
    """One evaluation planned and simulated on the embedded runtime: requests, pairs, plans, cases, calls, spans."""
    request = evaluation_request(
        "demo:1.2.4", "demo:1.3.0", suite=["demo"], twin=None, seed=42, evaluation_id=None, evaluator_version="1.1.0"
    )
    with EmbeddedRuntime(data_dir) as runtime:
        runtime.publish([request])
        runtime.run([Planner(), Simulator()])
        return [e for t in ALL_TOPICS for e in runtime.read_events(t.name)]


@pytest.mark.kafka
def test_console_consumer_with_the_avro_formatter_prints_every_event(kafka_bootstrap: str, tmp_path: Path) -> None:
    events = simulated_events(tmp_path / "embedded")
    naming = new_naming()
    ensure_topics(kafka_bootstrap, naming)
    with KafkaPublisher(kafka_bootstrap, naming) as publisher:
        publisher.publish(events)
    out = kafka_tool(
        "console-consumer",
        "--bootstrap-server", kafka_bootstrap,
        "--include", re.escape(naming.prefix) + ".*",
        "--from-beginning",
        "--max-messages", str(len(events)),
        "--timeout-ms", "60000",
        "--formatter", "dev.agenttwin.interop.AvroFormatter",
        "--formatter-property", f"schemas.dir={AVRO_DIR}",
        classpath=interop_classpath(),
    )  # fmt: skip
    printed = [json.loads(line) for line in out.splitlines() if line.startswith("{")]
    assert len(printed) == len(events) > 100
    by_id = {e.event_id: e for e in events}
    store = SchemaStore.from_directory(AVRO_DIR)
    problems = []
    for line in printed:
        event = by_id.get(line.get("event_id", ""))
        if event is None or "error" in line:
            problems.append(f"undecoded or unknown: {line}")
            continue
        checks = {
            "topic": (line["topic"], naming.topic(event.TOPIC)),
            "key": (line["key"], event.key),
            "timestamp": ((line["timestamp_type"], line["timestamp_ms"]), ("CreateTime", event_time_ms(event))),
            "schema": (line["schema_name"], event.SCHEMA),
            "header name": (line["headers"][SCHEMA_NAME_HEADER], event.SCHEMA),
            "fingerprint": (line["schema_fingerprint"], fingerprint_text(store.current(event.SCHEMA).fingerprint)),
            "header fingerprint": (line["headers"][SCHEMA_FINGERPRINT_HEADER], line["schema_fingerprint"]),
            "content-type": (line["headers"]["content-type"], SINGLE_OBJECT),
            "event type": (line["record"]["event_type"], event.event_type),
        }
        problems += [
            f"{event.event_id} {what}: {got!r} != {want!r}" for what, (got, want) in checks.items() if got != want
        ]
    assert problems == [], "\n".join(problems[:10])
    assert {line["event_id"] for line in printed} == set(by_id)
