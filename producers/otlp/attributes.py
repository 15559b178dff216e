"""OTLP AnyValue -> the string attributes a SpanRecorded carries.

Scalars become their plain text (bool -> true/false, like OTel's own string rendering), bytes become
base64, arrays and key-value lists become canonical JSON (sorted keys, compact) so the same value always
gives the same string.
"""

from __future__ import annotations

import base64
import json
import math
from collections.abc import Iterable
from typing import Any

from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue


def _double(value: float) -> float | str:
    # JSON has no NaN/Infinity; keep them readable as text instead of failing the span.
    return value if math.isfinite(value) else repr(value)


def to_python(value: AnyValue) -> Any:
    """The JSON-ready Python value of an AnyValue (None when unset)."""
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return value.bool_value
    if kind == "int_value":
        return value.int_value
    if kind == "double_value":
        return _double(value.double_value)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind == "array_value":
        return [to_python(v) for v in value.array_value.values]
    if kind == "kvlist_value":
        return {kv.key: to_python(kv.value) for kv in value.kvlist_value.values}
    return None


def to_text(value: AnyValue) -> str:
    kind = value.WhichOneof("value")
    if kind == "string_value":
        return value.string_value
    if kind == "bool_value":
        return "true" if value.bool_value else "false"
    if kind == "int_value":
        return str(value.int_value)
    if kind == "double_value":
        return repr(value.double_value)
    if kind == "bytes_value":
        return base64.b64encode(value.bytes_value).decode("ascii")
    if kind is None:
        return ""
    return json.dumps(to_python(value), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def flatten(attributes: Iterable[KeyValue]) -> dict[str, str]:
    """Key -> text; a key repeated in one list keeps its last value (OTLP leaves duplicates undefined)."""
    out: dict[str, str] = {}
    for kv in attributes:
        key = kv.key
        if key:
            value = kv.value  # most attributes are strings: read those without to_text's dispatch
            out[key] = value.string_value if value.WhichOneof("value") == "string_value" else to_text(value)
    return out
