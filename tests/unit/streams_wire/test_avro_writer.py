"""The compiled Avro writer writes exactly fastavro's bytes for every event schema, or hands the record back."""

from __future__ import annotations

import io
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

import pytest
from fastavro import schemaless_writer
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from schemas import AVRO_DIR
from streams._avro_writer import NotCompiled, compile_writer
from streams._log_record import PARSED as LOG_RECORD
from streams.events import EVENT_TYPES, Event
from streams.wire import MAGIC, SchemaStore, WireError

STORE = SchemaStore.from_directory(AVRO_DIR)
SCHEMAS = {name: STORE.current(name).parsed for name in STORE.names()} | {"LogRecord": LOG_RECORD}
_SETTINGS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])

_texts = st.text(max_size=12) | st.sampled_from(["", "é", "日本", "\U0001f600", "a\x00b"])
_ints = st.integers(min_value=-(1 << 64), max_value=1 << 64) | st.integers(min_value=-200, max_value=20000)
_times = st.datetimes(
    min_value=datetime(1900, 1, 1), max_value=datetime(2200, 1, 1), timezones=st.just(UTC) | st.just(None)
) | st.just(datetime(2026, 1, 1, 12, 0, 0, 999_999, tzinfo=timezone(timedelta(hours=-5))))
# values of the wrong Python type now and then: the writer must then refuse, never write something else
_odd = st.sampled_from([1, 2.5, True, None, b"x", "s", [], {}])


def _values(schema: Any) -> st.SearchStrategy[Any]:
    if isinstance(schema, list):
        return st.one_of(*(_values(s) for s in schema))
    if isinstance(schema, str):
        return {
            "string": _texts,
            "bytes": st.binary(max_size=8),
            "long": _ints,
            "int": _ints,
            "boolean": st.booleans(),
            "double": st.floats(allow_nan=False) | st.integers(-5, 5),
            "null": st.none(),
        }[schema]
    if schema.get("logicalType") == "timestamp-millis":
        return _times | st.integers(min_value=-(10**13), max_value=10**13)
    kind = schema["type"]
    if kind == "record":
        fields = {f["name"]: _values(f["type"]) for f in schema["fields"]}
        return st.fixed_dictionaries(fields)
    if kind == "array":
        return st.lists(_values(schema["items"]), max_size=3)
    if kind == "map":
        return st.dictionaries(_texts, _values(schema["values"]), max_size=3)
    return _values(kind)


def _fastavro(schema: Any, record: Any) -> bytes | type[Exception]:
    out = io.BytesIO()
    try:
        schemaless_writer(out, schema, record)
    except Exception as exc:
        return type(exc)
    return out.getvalue()


def test_every_event_schema_compiles() -> None:
    assert all(compile_writer(schema) is not None for schema in SCHEMAS.values())


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@_SETTINGS
@given(data=st.data())
def test_compiled_bytes_are_fastavros_or_the_record_is_handed_back(name: str, data: st.DataObject) -> None:
    schema = SCHEMAS[name]
    record = data.draw(_values(schema))
    if data.draw(st.booleans()) and record:  # now and then a field of the wrong type
        field = data.draw(st.sampled_from(sorted(record)))
        record = {**record, field: data.draw(_odd)}
    writer = compile_writer(schema)
    assert writer is not None
    out = bytearray()
    try:
        writer(out, record)
    except NotCompiled:
        return  # fastavro writes it (or refuses it): nothing to compare
    assert bytes(out) == _fastavro(schema, record)


def test_a_value_of_another_type_is_handed_back_not_written() -> None:
    writer = compile_writer(["null", "double"])
    assert writer is not None
    for value in (1, True, "1.0"):
        with pytest.raises(NotCompiled):
            writer(bytearray(), value)
    naive = compile_writer({"type": "long", "logicalType": "timestamp-millis"})
    assert naive is not None
    with pytest.raises(NotCompiled):  # fastavro reads a naive datetime as local time: its call
        naive(bytearray(), datetime(2026, 1, 1))


def test_the_store_encodes_what_fastavro_would_for_a_value_the_writer_hands_back() -> None:
    span = SCHEMAS["dev.agenttwin.events.SpanRecorded"]
    record = {f["name"]: None for f in span["fields"]}
    record.update(
        event_id="e", event_type="SpanRecorded", occurred_at=datetime(2026, 1, 1), correlation_id="t",
        trace_id="t", span_id="s", name="n", kind="k", start_unix_nano=1, end_unix_nano=2, status_code="OK",
        service_name="svc", source="production", attributes={}, resource_attributes={},
    )  # fmt: skip
    assert STORE.encode_body("dev.agenttwin.events.SpanRecorded", record) == _fastavro(span, record)


@pytest.mark.parametrize("event_type", EVENT_TYPES, ids=lambda e: e.__name__)
@_SETTINGS
@given(data=st.data())
def test_an_event_encodes_to_fastavros_single_object_bytes(event_type: type[Event], data: st.DataObject) -> None:
    schema = STORE.current(event_type.SCHEMA)
    event = event_type.from_record(data.draw(_values(schema.parsed)))
    expected = _fastavro(schema.parsed, event.to_record())
    if isinstance(expected, bytes):
        assert STORE.encode_event(event) == MAGIC + schema.fingerprint + expected
    else:  # fastavro refuses it: so does the store, with its own error
        with pytest.raises(WireError):
            STORE.encode_event(event)
