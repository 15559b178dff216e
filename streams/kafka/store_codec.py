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


_SCALARS = frozenset({str, int, float, bool, type(None)})
# An event's Avro bytes never change (events are frozen): a stored event is written again with every change
# of its entry (a verification in an outcome-join entry), so the last ones encoded are kept by identity.
_ENCODED_MAX = 4096
_encoded: dict[int, tuple[Event, str]] = {}


def _event_plain(value: Event) -> dict[str, str]:
    hit = _encoded.get(id(value))
    if hit is not None and hit[0] is value:
        return {_EVENT: hit[1]}
    raw = _schemas().encode_event(value)
    text = base64.b64encode(raw).decode("ascii")
    if len(_encoded) >= _ENCODED_MAX:
        _encoded.clear()
    _encoded[id(value)] = (value, text)  # the event is held, so its id is not reused while cached
    return {_EVENT: text}


def to_plain(value: Any) -> Any:
    kind = type(value)
    if kind in _SCALARS:
        return value
    if kind is dict:
        out = {}
        for k, v in value.items():
            if not isinstance(k, str) or k.startswith("$"):
                raise TypeError(f"store dict keys must be strings not starting with '$': {k!r}")
            out[k] = v if type(v) in _SCALARS else to_plain(v)
        return out
    if kind is list or kind is tuple:
        return [v if type(v) in _SCALARS else to_plain(v) for v in value]
    if isinstance(value, Event):
        return _event_plain(value)
    if isinstance(value, datetime):
        return {_TIME: value.isoformat()}
    if isinstance(value, bytes):
        return {_BYTES: base64.b64encode(value).decode("ascii")}
    if isinstance(value, dict):
        return to_plain(dict(value))
    if isinstance(value, list | tuple):
        return [to_plain(v) for v in value]
    if isinstance(value, str | int | float | bool):  # subclasses (an enum of str): as JSON writes them
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
