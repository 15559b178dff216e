"""Confluent mode (`--wire confluent --schema-registry URL`) against a real registry (Apicurio Registry):
the pipeline runs end to end on `00` + id framed values, ClickHouse reads a topic as typed rows through
AvroConfluent with the registry, readers take either framing, and the registry refuses (at produce time)
a schema that is not BACKWARD compatible with what the subject holds."""

from __future__ import annotations

import json
import shutil
import struct
from pathlib import Path

import pytest
from confluent_kafka import OFFSET_BEGINNING, Consumer, KafkaError, TopicPartition

from consumers.clickhouse import qualified
from schemas import AVRO_DIR
from streams.embedded import DecodeError
from streams.events import CaseFinished
from streams.identity import CONFLUENT, CONTENT_TYPE_HEADER, SCHEMA_ID_HEADER
from streams.kafka.clients import ensure_topics
from streams.kafka.codec import KafkaCodec
from streams.kafka.naming import Naming, WireFormat
from streams.kafka.publisher import KafkaPublisher
from streams.kafka.reading import read_all
from streams.registry import RegistryError
from streams.topics import ALL_TOPICS, TOPIC_BY_NAME
from streams.wire import SchemaStore
from tests.integration.kafka.kafka_pipeline_support import Reference, differences, run_on_kafka, warehouse_for
from tests.integration.kafka.test_kafka_interop import simulated_events
from tests.integration.kafka_broker import unique_name


def raw_messages(bootstrap: str, topic: str) -> list[tuple[bytes, dict[str, bytes]]]:
    """Every committed record of a physical topic: value and headers, as Kafka holds them."""
    partitions = TOPIC_BY_NAME[topic.rsplit(".", 1)[-1]].partitions
    consumer = Consumer(
        {"bootstrap.servers": bootstrap, "group.id": unique_name("raw"), "enable.partition.eof": True,
         "isolation.level": "read_committed"}
    )  # fmt: skip
    consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
    out, ends = [], 0
    try:
        while ends < partitions:
            msg = consumer.poll(30)
            assert msg is not None, f"{topic}: no end reached"
            if msg.error() is not None:
                assert msg.error().code() == KafkaError._PARTITION_EOF
                ends += 1
                continue
            out.append((msg.value() or b"", {k: v for k, v in (msg.headers() or [])}))
    finally:
        consumer.close()
    return out


@pytest.mark.kafka
def test_confluent_mode_end_to_end_and_clickhouse_reads_typed_rows_with_the_registry(
    kafka_bootstrap: str, schema_registry: str, chdb_root: Path, reference: Reference, tmp_path: Path
) -> None:
    naming = Naming(unique_name("kc") + ".", WireFormat("confluent", schema_registry))
    with warehouse_for(chdb_root, "kafka_confluent") as warehouse:
        run_on_kafka(kafka_bootstrap, naming, warehouse, reference, tmp_path)
        problems = differences(reference, warehouse)
        assert problems == [], "\n".join(problems)
        messages = raw_messages(kafka_bootstrap, naming.topic("cases"))
        assert len(messages) == 36
        for value, headers in messages:
            assert value[:1] == b"\x00"
            assert headers[CONTENT_TYPE_HEADER].decode() == CONFLUENT
            assert int(headers[SCHEMA_ID_HEADER]) == struct.unpack(">I", value[1:5])[0]
        frames = tmp_path / "cases.confluent"
        frames.write_bytes(b"".join(value for value, _ in messages))
        columns = "event_id, case_id, side, record_count, tags, occurred_at, claimed_outcome, cost_usd"
        got = warehouse.query(
            f"SELECT {columns} FROM file('{frames}', 'AvroConfluent') ORDER BY event_id "
            f"SETTINGS format_avro_schema_registry_url = '{schema_registry}'"
        )
        want = warehouse.query(f"SELECT {columns} FROM {qualified(warehouse, 'cases')} FINAL ORDER BY event_id")
    assert len(got.rows) == 36
    assert got.rows == want.rows


@pytest.mark.kafka
def test_readers_take_either_framing_and_the_registry_refuses_an_incompatible_schema(
    kafka_bootstrap: str, schema_registry: str, tmp_path: Path
) -> None:
    events = simulated_events(tmp_path / "embedded")
    prefix = unique_name("kcmix") + "."
    plain, confluent = Naming(prefix), Naming(prefix, WireFormat("confluent", schema_registry))
    ensure_topics(kafka_bootstrap, plain)
    half = len(events) // 2
    with KafkaPublisher(kafka_bootstrap, plain) as publisher:
        publisher.publish(events[:half])
    with KafkaPublisher(kafka_bootstrap, confluent) as publisher:
        publisher.publish(events[half:])
    back = read_all(kafka_bootstrap, confluent, [t.name for t in ALL_TOPICS])
    assert sorted(e.event_id for e in back) == sorted(e.event_id for e in events)
    assert {e.event_id: e for e in back} == {e.event_id: e for e in events}

    case = next(e for e in events if isinstance(e, CaseFinished))
    framed = KafkaCodec(confluent).encode(case)
    with pytest.raises(DecodeError) as no_registry:
        KafkaCodec(plain).decode(framed.value)  # a reader with no registry dead-letters, it does not guess
    assert no_registry.value.reason == "NO_SCHEMA_REGISTRY"

    # the subject is BACKWARD: a new field without a default cannot read what was written, refused at produce
    avro = tmp_path / "avro"
    shutil.copytree(AVRO_DIR, avro)
    path = avro / "case_finished.avsc"
    doc = json.loads(path.read_text())
    path.write_text(json.dumps({**doc, "fields": [*doc["fields"], {"name": "ticket", "type": "string"}]}))
    with pytest.raises(RegistryError, match="409"):
        KafkaCodec(confluent, SchemaStore.from_directory(avro)).encode(case)
    # ... and a new field with a default is accepted as a new version
    path.write_text(
        json.dumps({**doc, "fields": [*doc["fields"], {"name": "ticket", "type": ["null", "string"], "default": None}]})
    )
    evolved = KafkaCodec(confluent, SchemaStore.from_directory(avro)).encode(case)
    assert struct.unpack(">I", evolved.value[1:5]) != struct.unpack(">I", framed.value[1:5])
