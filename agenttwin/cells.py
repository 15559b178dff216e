"""Query values as text and as JSON: every type the warehouse returns (DateTime/DateTime64, Date, Nullable,
arrays, maps, tuples, UInt64 and wider integers, Bool, Decimal, UUID, IP addresses, floats incl. nan/inf)."""

from __future__ import annotations

import datetime as dt
import json
import math
from decimal import Decimal
from typing import Any


def json_value(value: Any) -> Any:
    """A JSON-serialisable form: datetimes as ISO 8601 (UTC offset kept), containers element by element,
    nan/inf as null (JSON has no such numbers), anything else unknown as its text."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dt.datetime):
        return _iso(value)
    if isinstance(value, dt.date):
        return value.isoformat()
    if isinstance(value, dict):
        return {_key(k): json_value(v) for k, v in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_value(v) for v in value]
    if isinstance(value, Decimal):
        return str(value)
    if isinstance(value, bytes):
        return value.decode("utf-8", "backslashreplace")
    return str(value)


def text_cell(value: Any) -> str:
    """One table or CSV cell: NULL empty, booleans true/false, datetimes ISO 8601, containers as JSON."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return value
    if isinstance(value, float) and not math.isfinite(value):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, dict | list | tuple | set | frozenset):
        return json.dumps(json_value(value), ensure_ascii=False, separators=(",", ":"))
    plain = json_value(value)
    return plain if isinstance(plain, str) else str(plain)


def _iso(value: dt.datetime) -> str:
    return value.isoformat(timespec="milliseconds" if value.microsecond % 1000 == 0 else "microseconds")


def _key(key: Any) -> str:
    plain = json_value(key)
    return plain if isinstance(plain, str) else json.dumps(plain)
