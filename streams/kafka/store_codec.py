"""The changelog codec of processor stores: store values as tagged JSON, events as Avro single-object bytes.

Stores hold plain data plus Event dataclasses and datetimes (processors/base.py). Pickle could hold
them too, but executes whatever a changelog message says; this codec only ever builds known events.
"""

from __future__ import annotations

import base64
import json
from datetime import datetime
from functools import cache
from typing import Any

from schemas import AVRO_DIR
from streams.events import EVENT_BY_SCHEMA, Event
from streams.wire import SchemaStore

_EVENT, _TIME, _BYTES = "$event", "$datetime", "$bytes"


@cache
def _schemas() -> SchemaStore:
    return SchemaStore.from_directory(AVRO_DIR)


def to_plain(value: Any) -> Any:
    if isinstance(value, Event):
        raw = _schemas().encode(value.SCHEMA, value.to_record())
        return {_EVENT: base64.b64encode(raw).decode("ascii")}
    if isinstance(value, datetime):
        return {_TIME: value.isoformat()}
    if isinstance(value, bytes):
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        for k in value:
            if not isinstance(k, str) or k.startswith("$"):
                raise TypeError(f"store dict keys must be strings not starting with '$': {k!r}")
        return {k: to_plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if value is None or isinstance(value, str | int | float | bool):
        return value
    raise TypeError(f"a processor store cannot hold {type(value).__name__}")


def from_plain(value: Any) -> Any:
    if isinstance(value, dict):
        if _EVENT in value:
            decoded = _schemas().decode(base64.b64decode(value[_EVENT]))
            return EVENT_BY_SCHEMA[decoded.name].from_record(decoded.record)
        if _TIME in value:
            return datetime.fromisoformat(value[_TIME])
        if _BYTES in value:
            return base64.b64decode(value[_BYTES])
        return {k: from_plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [from_plain(v) for v in value]
    return value


def dumps(value: Any) -> bytes:
    return json.dumps(to_plain(value), sort_keys=True, separators=(",", ":")).encode()


def loads(data: bytes) -> Any:
    return from_plain(json.loads(data))
