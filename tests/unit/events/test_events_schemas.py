"""The .avsc files, the Python event models and the ClickHouse columns stay in step; old events stay readable."""

from __future__ import annotations

import dataclasses
import io
import json
import re
from datetime import UTC, datetime
from pathlib import Path

import fastavro
import pytest

from consumers.projections import TABLE_BY_EVENT, columns_of
from schemas import AVRO_DIR, CLICKHOUSE_DIR
from streams.events import EVENT_TYPES, CaseFinished, Event, OutcomeVerified, SpanRecorded
from streams.topics import ALL_TOPICS, TOPIC_BY_NAME
from streams.wire import SchemaStore, check_backward_compatible

AT = datetime(2026, 1, 1, tzinfo=UTC)


def _avsc(event_type: type[Event]) -> dict[str, object]:
    name = event_type.SCHEMA.rsplit(".", 1)[1]
    snake = re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()
    return dict(json.loads((AVRO_DIR / f"{snake}.avsc").read_text()))


def _ddl_columns() -> dict[str, list[str]]:
    text = (CLICKHOUSE_DIR / "tables.sql").read_text()
    out: dict[str, list[str]] = {}
    for table, body in re.findall(r"CREATE TABLE IF NOT EXISTS (\w+)\s*\((.*?)\)\s*ENGINE", text, re.S):
        out[table] = re.findall(r"`(\w+)`", body)
    return out


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda e: e.__name__)
def test_avsc_model_and_clickhouse_columns_match(event_type: type[Event]) -> None:
    schema = _avsc(event_type)
    avro_fields = [f["name"] for f in schema["fields"]]  # type: ignore[index]
    assert f"{schema['namespace']}.{schema['name']}" == event_type.SCHEMA
    assert sorted(avro_fields) == sorted(columns_of(event_type))
    assert _ddl_columns()[TABLE_BY_EVENT[event_type]] == avro_fields
    assert event_type.TOPIC in TOPIC_BY_NAME


def test_every_avsc_file_has_a_model_and_every_table_an_event() -> None:
    files = {p.stem for p in AVRO_DIR.glob("*.avsc")}
    assert len(files) == len(EVENT_TYPES)
    assert set(_ddl_columns()) == set(TABLE_BY_EVENT.values())


def test_new_fields_have_defaults_so_old_readers_and_writers_resolve() -> None:
    # The evolution rule: a field added after version 1 needs a default (BACKWARD compatibility).
    store = SchemaStore.from_directory(AVRO_DIR)
    for old in sorted((AVRO_DIR / "old").glob("*.avsc")):
        old_schema = json.loads(old.read_text())
        current = json.loads((AVRO_DIR / (old.name.split(".v")[0] + ".avsc")).read_text())
        assert check_backward_compatible(current, old_schema) == [], old.name
    assert store.names()


def test_backward_check_catches_a_field_added_without_default() -> None:
    old = _avsc(OutcomeVerified)
    new = json.loads(json.dumps(old))
    new["fields"].append({"name": "brand_new", "type": "string"})
    problems = check_backward_compatible(new, old)
    assert problems and "brand_new" in " ".join(problems)


def test_current_schema_reads_an_event_written_with_version_1() -> None:
    old_schema = json.loads((AVRO_DIR / "old" / "outcome_verified.v1.avsc").read_text())
    store = SchemaStore.from_directory(AVRO_DIR)
    # Write with the OLD schema: single-object header with the old fingerprint + body.
    parsed = fastavro.parse_schema(old_schema)
    body = io.BytesIO()
    record = {
        "event_id": "e1",
        "event_type": "OutcomeVerified",
        "occurred_at": AT,
        "tenant": "demo-co",
        "correlation_id": "t1",
        "trace_id": "t1",
        "case_id": None,
        "evaluation_id": None,
        "evaluator_version": "1.1.0",
        "status": "FAILURE",
        "verified": True,
        "source": "tool_twin_state",
        "claimed_status": "SUCCESS",
        "business_outcome": None,
        "reason": "refund_count is 2",
    }
    fastavro.schemaless_writer(body, parsed, record)
    fingerprint = bytes.fromhex(
        fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form(parsed), "CRC-64-AVRO")
    )
    decoded = store.decode(b"\xc3\x01" + fingerprint + body.getvalue())
    event = OutcomeVerified.from_record(decoded.record)
    assert event.status == "FAILURE" and event.reason == "refund_count is 2"
    assert event.agent is None and event.agent_version is None  # added later, with defaults


def test_a_case_finished_event_of_version_1_reads_with_no_escalation_tools() -> None:
    old_schema = fastavro.parse_schema(json.loads((AVRO_DIR / "old" / "case_finished.v1.avsc").read_text()))
    store = SchemaStore.from_directory(AVRO_DIR)
    record: dict[str, object] = {f["name"]: None for f in old_schema["fields"]}
    record.update(
        event_id="e1", event_type="CaseFinished", occurred_at=AT, correlation_id="c1", case_id="c1", side="BASELINE",
        trace_id="t1", scenario_name="s", scenario_hash="h", twin_name="t", twin_hash="h", case_seed=1,
        agent="demo:1.2.4", agent_version="1.2.4", severity="high", tags=[], record_count=0, input_message="m",
        context_json="{}", expectations_json="[]", secrets=[], claimed_calls_json="[]", model_kind="deterministic-fake",
    )  # fmt: skip
    body = io.BytesIO()
    fastavro.schemaless_writer(body, old_schema, record)
    fingerprint = bytes.fromhex(
        fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form(old_schema), "CRC-64-AVRO")
    )
    event = CaseFinished.from_record(store.decode(b"\xc3\x01" + fingerprint + body.getvalue()).record)
    assert event.escalation_tools == []  # added later, with a default


def _sample(event_type: type[Event]) -> Event:
    values: dict[str, object] = {}
    for f in dataclasses.fields(event_type):
        t = str(f.type)
        if f.name == "event_type":
            continue
        if "datetime" in t:
            values[f.name] = AT
        elif t.startswith("list"):
            values[f.name] = ["a", "b"]
        elif t.startswith("dict"):
            values[f.name] = {"k": "v"}
        elif t.startswith("bool"):
            values[f.name] = True
        elif t.startswith("int"):
            values[f.name] = 7
        elif t.startswith("float"):
            values[f.name] = 1.5
        elif t.startswith("bytes"):
            values[f.name] = b"\x00\x01"
        else:
            values[f.name] = f"{f.name}-value"
    return event_type(**values)  # type: ignore[arg-type]


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda e: e.__name__)
def test_every_event_round_trips_through_the_wire_format(event_type: type[Event]) -> None:
    store = SchemaStore.from_directory(AVRO_DIR)
    event = _sample(event_type)
    data = store.encode(event.SCHEMA, event.to_record())
    assert data[:2] == b"\xc3\x01"
    assert event_type.from_record(store.decode(data).record) == event


def test_join_topics_share_a_partition_count() -> None:
    joined = [("cases", "twin-calls"), ("spans", "verified-outcomes")]
    for a, b in joined:
        assert TOPIC_BY_NAME[a].partitions == TOPIC_BY_NAME[b].partitions
    assert all(t.retention_ms == -1 for t in ALL_TOPICS)


def test_schema_files_ship_in_the_package() -> None:
    assert Path(AVRO_DIR, "old").is_dir()


@pytest.mark.parametrize(
    ("old_file", "event_type"),
    [("span_recorded.v1.avsc", SpanRecorded), ("outcome_verified.v2.avsc", OutcomeVerified)],
)
def test_events_written_before_the_receive_time_decode_without_it(old_file: str, event_type: type[Event]) -> None:
    """received_at and clock_skew came later, with defaults: an old event reads as not stamped, and the
    pipeline's clock falls back to its event time."""
    old_schema = json.loads((AVRO_DIR / "old" / old_file).read_text())
    assert {"received_at", "clock_skew"} <= {f.name for f in dataclasses.fields(event_type)}
    assert not {"received_at", "clock_skew"} & {f["name"] for f in old_schema["fields"]}
    sample = _sample(event_type).to_record()
    record = {f["name"]: sample[f["name"]] for f in old_schema["fields"]}
    parsed = fastavro.parse_schema(old_schema)
    body = io.BytesIO()
    fastavro.schemaless_writer(body, parsed, record)
    fingerprint = bytes.fromhex(
        fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form(parsed), "CRC-64-AVRO")
    )
    decoded = SchemaStore.from_directory(AVRO_DIR).decode(b"\xc3\x01" + fingerprint + body.getvalue())
    event = event_type.from_record(decoded.record)
    assert event.received_at is None and event.clock_skew is None  # type: ignore[attr-defined]
    assert event.received_time == event.occurred_at == AT
