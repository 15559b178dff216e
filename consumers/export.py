"""Typed exports of a topic's events for analytics tools: Avro container, Parquet or JSON lines.

- avro: an Avro object container file whose schema is the event's current schema (old versions already
  resolved to it), deflate-compressed; any Avro reader, ClickHouse `file(..., 'Avro')`, Spark, DuckDB.
- parquet: one column per field, the schema flattened (a nested record's fields become `parent.child`
  columns; `[null, T]` unions are nullable T; other unions are JSON text), timestamps as UTC milliseconds,
  arrays as lists, maps as maps, bytes as binary.
- jsonl: one JSON object per event, fields in schema order, timestamps as ISO 8601 UTC text, bytes as base64.

A topic that carries several event types (`evaluations`) is exported one type at a time.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Iterable, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any

import fastavro
import pyarrow as pa
import pyarrow.parquet as pq

from streams.events import Event
from streams.topics import Topic, events_on
from streams.wire import SchemaStore

FORMATS = ("avro", "parquet", "jsonl")


class ExportError(ValueError):
    """The export cannot be made as asked (unknown event type, several types on the topic, ...)."""


def event_type_for(topic: Topic, name: str | None) -> type[Event]:
    """The event type to export from `topic`: `name` (class or schema full name), or its only type."""
    types = events_on(topic)
    if name is None:
        if len(types) != 1:
            choices = ", ".join(t.__name__ for t in types)
            raise ExportError(f"topic {topic.name} carries several event types ({choices}): pass --event TYPE")
        return types[0]
    for t in types:
        if name in (t.__name__, t.SCHEMA):
            return t
    have = ", ".join(t.__name__ for t in types)
    raise ExportError(f"topic {topic.name} carries no event type {name!r} (it has {have})")


def export(
    events: Iterable[Event], event_type: type[Event], fmt: str, target: Path, schemas: SchemaStore
) -> int:
    """Write the events of `event_type` to `target` in `fmt`; returns how many were written."""
    chosen = [e for e in events if isinstance(e, event_type)]
    schema = schemas.current(event_type.SCHEMA).parsed
    order = [f["name"] for f in schema["fields"]]
    records = [{name: record.get(name) for name in order} for record in (e.to_record() for e in chosen)]
    target.parent.mkdir(parents=True, exist_ok=True)
    tmp = target.with_name(f".{target.name}.tmp")
    if fmt == "avro":
        with tmp.open("wb") as out:
            fastavro.writer(out, schema, records, codec="deflate")
    elif fmt == "parquet":
        pq.write_table(_table(schema, records), tmp)
    elif fmt == "jsonl":
        with tmp.open("w", encoding="utf-8") as out:
            for record in records:
                out.write(json.dumps(record, default=_json_value, ensure_ascii=False) + "\n")
    else:
        raise ExportError(f"format {fmt!r}: one of {', '.join(FORMATS)}")
    tmp.replace(target)
    return len(chosen)


def _json_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat(timespec="milliseconds").replace("+00:00", "Z")
    if isinstance(value, bytes):
        return base64.b64encode(value).decode("ascii")
    raise TypeError(f"not JSON serializable: {type(value).__name__}")


# --- Parquet: the Avro schema flattened into Arrow columns --------------------------------------------

_PRIMITIVES: dict[str, pa.DataType] = {
    "string": pa.string(),
    "long": pa.int64(),
    "int": pa.int32(),
    "boolean": pa.bool_(),
    "double": pa.float64(),
    "float": pa.float32(),
    "bytes": pa.binary(),
}


def _nullable(schema: Any) -> bool:
    return isinstance(schema, list) and "null" in schema


def _arrow_type(schema: Any) -> tuple[pa.DataType, bool]:
    """(Arrow type, is JSON text) of a non-record Avro type."""
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return _arrow_type(branches[0]) if len(branches) == 1 else (pa.string(), True)
    if isinstance(schema, dict):
        logical, kind = schema.get("logicalType"), schema.get("type")
        if logical == "timestamp-millis":
            return pa.timestamp("ms", tz="UTC"), False
        if logical == "timestamp-micros":
            return pa.timestamp("us", tz="UTC"), False
        if kind == "array":
            item, _ = _arrow_type(schema["items"])
            return pa.list_(pa.field("element", item, nullable=_nullable(schema["items"]))), False
        if kind == "map":
            value, _ = _arrow_type(schema["values"])
            return pa.map_(pa.string(), pa.field("value", value, nullable=_nullable(schema["values"]))), False
        if kind in ("enum", "fixed"):
            return (pa.string(), False) if kind == "enum" else (pa.binary(), False)
        return _arrow_type(kind)
    if schema in _PRIMITIVES:
        return _PRIMITIVES[schema], False
    return pa.string(), True


def _record_of(schema: Any) -> dict[str, Any] | None:
    """The record schema behind a field type (a record or a [null, record] union), else None."""
    if isinstance(schema, list):
        branches = [b for b in schema if b != "null"]
        return _record_of(branches[0]) if len(branches) == 1 else None
    if isinstance(schema, dict) and schema.get("type") == "record":
        return schema
    return None


_Column = tuple[str, Sequence[str], pa.Field, bool]


def _columns(schema: dict[str, Any], prefix: str = "", optional: bool = False) -> list[_Column]:
    """(path of field names, Arrow field named `parent.child`, as JSON text) for every leaf of a record."""
    out: list[_Column] = []
    for field in schema["fields"]:
        name = prefix + field["name"]
        nullable = optional or _nullable(field["type"])
        nested = _record_of(field["type"])
        if nested is not None:
            out += [(col, [field["name"], *path], f, j) for col, path, f, j in _columns(nested, name + ".", nullable)]
        else:
            arrow, as_json = _arrow_type(field["type"])
            out.append((name, [field["name"]], pa.field(name, arrow, nullable=nullable or as_json), as_json))
    return out


def _leaf(record: Any, path: Sequence[str]) -> Any:
    for step in path:
        if record is None:
            return None
        record = record.get(step)
    return record


def _table(schema: dict[str, Any], records: list[dict[str, Any]]) -> pa.Table:
    arrays = []
    fields = []
    for _name, path, field, as_json in _columns(schema):
        values = [_leaf(r, path) for r in records]
        if as_json:
            values = [None if v is None else json.dumps(v, default=_json_value, sort_keys=True) for v in values]
        elif pa.types.is_map(field.type):
            values = [None if v is None else list(v.items()) for v in values]
        arrays.append(pa.array(values, type=field.type))
        fields.append(field)
    return pa.Table.from_arrays(arrays, schema=pa.schema(fields))
