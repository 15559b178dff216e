"""A compiled Avro binary writer for the schemas the events use: the same bytes as fastavro, faster.

fastavro's `schemaless_writer` walks the schema for every record and resolves each union by trying its
branches; on the ingest path that walk (and the dict `Event.to_record` builds for it) was most of the time
spent per span. `compile_writer` turns a parsed schema into one generated Python function, once, for the
types the event schemas use (records, the primitive types, arrays, maps, `["null", T]` unions,
timestamp-millis). A record can be read from a dict (`v["name"]`) or, at the top, from an object's
attributes (an event dataclass: no dict built per event).

It accepts only values of the exact Python types the events hold (a str for a string, an int for a long,
a tz-aware datetime or an int for a timestamp, ...); anything else raises `NotCompiled`, and the caller
writes that record with fastavro, so an odd value gets fastavro's bytes or fastavro's error, never
different ones. A schema with a type not listed here is not compiled at all (`compile_writer` returns None).
"""

from __future__ import annotations

import struct
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

Writer = Callable[[bytearray, Any], None]

_INT64 = 1 << 63
_SMALL = 1 << 14  # varints of values below this are precomputed (at most two bytes each)


class NotCompiled(Exception):
    """A value this writer does not handle exactly as fastavro would: write the record with fastavro."""


def _varint_loop(z: int) -> bytes:
    out = bytearray()
    while z & ~0x7F:
        out.append((z & 0x7F) | 0x80)
        z >>= 7
    out.append(z)
    return bytes(out)


_VARINTS = [_varint_loop(z) for z in range(_SMALL)]
# 14 low bits as two groups that both say "more follows": a long varint is these, then a final short one
_GROUPS = [bytes(((c & 0x7F) | 0x80, (c >> 7) | 0x80)) for c in range(_SMALL)]


def _varint(z: int) -> bytes:
    if z < _SMALL:
        return _VARINTS[z]
    head = b""
    while z >= _SMALL:
        head += _GROUPS[z & 0x3FFF]
        z >>= 14
    return head + _VARINTS[z]


def _zigzag(n: int) -> bytes:
    """The Avro encoding of a long (zig-zag, then base-128 varint)."""
    if not -_INT64 <= n < _INT64:
        raise NotCompiled
    return _varint((n << 1) ^ (n >> 63))


_GLOBALS: dict[str, Any] = {
    "NC": NotCompiled,
    "V": _VARINTS,
    "VAR": _varint,
    "ZZ": _zigzag,
    "DOUBLE": struct.Struct("<d").pack,
    "EPOCH": datetime(1970, 1, 1, tzinfo=UTC),
    "MS": timedelta(milliseconds=1),
    "datetime": datetime,
    "HALF": _SMALL // 2,
}


class _Source:
    def __init__(self) -> None:
        self.lines: list[str] = []
        self.names = 0

    def var(self) -> str:
        self.names += 1
        return f"x{self.names}"

    def add(self, depth: int, line: str) -> None:
        self.lines.append("    " * depth + line)


def _length(src: _Source, depth: int, n: str) -> None:
    """A non-negative length or count `n` (its zig-zag is 2n)."""
    src.add(depth, f"out += V[{n} << 1] if {n} < HALF else VAR({n} << 1)")


def _emit(src: _Source, depth: int, schema: Any, x: str) -> bool:
    """Lines writing the value in variable `x` under `schema`; False when a type is not compiled here."""
    if isinstance(schema, list):
        if len(schema) != 2 or schema[0] != "null" or schema[1] == "null":
            return False
        src.add(depth, f"if {x} is None:")
        src.add(depth + 1, 'out += b"\\x00"')
        src.add(depth, "else:")
        src.add(depth + 1, 'out += b"\\x02"')
        return _emit(src, depth + 1, schema[1], x)
    if isinstance(schema, dict):
        kind, logical = schema.get("type"), schema.get("logicalType")
        if logical is not None:
            if (kind, logical) != ("long", "timestamp-millis"):
                return False
            # a naive datetime is fastavro's call (it reads it as local time); d // MS is fastavro's
            # (days * 86400 + seconds) * 1000 + int(microseconds / 1000): timedelta keeps those non-negative
            src.add(depth, f"if type({x}) is int:")
            src.add(depth + 1, f"out += ZZ({x})")
            src.add(depth, f"elif type({x}) is datetime and {x}.tzinfo is not None:")
            src.add(depth + 1, f"out += ZZ(({x} - EPOCH) // MS)")
            src.add(depth, "else:")
            src.add(depth + 1, "raise NC")
            return True
        if kind == "record":
            return _record(src, depth, schema, x, attributes=False)
        if kind in ("array", "map"):
            array = kind == "array"
            src.add(depth, f"if type({x}) is not {'list' if array else 'dict'}:")
            src.add(depth + 1, "raise NC")
            src.add(depth, f"if {x}:")
            n, item = src.var(), src.var()
            src.add(depth + 1, f"{n} = len({x})")
            _length(src, depth + 1, n)
            if array:
                src.add(depth + 1, f"for {item} in {x}:")
            else:
                key = src.var()
                src.add(depth + 1, f"for {key}, {item} in {x}.items():")
                _emit(src, depth + 2, "string", key)
            if not _emit(src, depth + 2, schema["items" if array else "values"], item):
                return False
            src.add(depth, 'out += b"\\x00"')
            return True
        if isinstance(kind, str) and len(schema) == 1:
            return _emit(src, depth, kind, x)
        return False
    if schema == "string":
        b, n = src.var(), src.var()
        src.add(depth, f"if type({x}) is not str:")
        src.add(depth + 1, "raise NC")
        src.add(depth, f"{b} = {x}.encode()")
        src.add(depth, f"{n} = len({b})")
        _length(src, depth, n)
        src.add(depth, f"out += {b}")
    elif schema == "bytes":
        src.add(depth, f"if type({x}) is not bytes:")
        src.add(depth + 1, "raise NC")
        n = src.var()
        src.add(depth, f"{n} = len({x})")
        _length(src, depth, n)
        src.add(depth, f"out += {x}")
    elif schema in ("long", "int"):
        bounded = "" if schema == "long" else f" or not -2147483648 <= {x} <= 2147483647"
        src.add(depth, f"if type({x}) is not int{bounded}:")
        src.add(depth + 1, "raise NC")
        src.add(depth, f"out += ZZ({x})")
    elif schema == "boolean":
        src.add(depth, f"if type({x}) is not bool:")
        src.add(depth + 1, "raise NC")
        src.add(depth, f'out += b"\\x01" if {x} else b"\\x00"')
    elif schema == "double":
        src.add(depth, f"if type({x}) is not float:")
        src.add(depth + 1, "raise NC")
        src.add(depth, f"out += DOUBLE({x})")
    elif schema == "null":
        src.add(depth, f"if {x} is not None:")
        src.add(depth + 1, "raise NC")
    else:
        return False
    return True


def _record(src: _Source, depth: int, schema: dict[str, Any], x: str, *, attributes: bool) -> bool:
    if not attributes:
        src.add(depth, f"if type({x}) is not dict:")
        src.add(depth + 1, "raise NC")
    for field in schema["fields"]:
        name = field["name"]
        if not name.isidentifier():
            return False
        value = src.var()
        # a missing field would take its default: fastavro's rules, not repeated here
        src.add(depth, f"{value} = {x}.{name}" if attributes else f"{value} = {x}.get({name!r}, NC)")
        if not attributes:
            src.add(depth, f"if {value} is NC:")
            src.add(depth + 1, "raise NC")
        if not _emit(src, depth, field["type"], value):
            return False
    return True


def compile_writer(schema: Any, *, attributes: bool = False) -> Writer | None:
    """A writer for a fastavro-parsed schema, or None when it uses a type not compiled here.

    `attributes`: the top record's fields are read as attributes of the value (an Event), not dict keys."""
    src = _Source()
    top = "v"
    if isinstance(schema, dict) and schema.get("type") == "record":
        ok = _record(src, 1, schema, top, attributes=attributes)
    elif attributes:
        return None
    else:
        ok = _emit(src, 1, schema, top)
    if not ok:
        return None
    code = "def write(out, v):\n" + "\n".join(src.lines or ["    pass"]) + "\n"
    namespace = dict(_GLOBALS)
    label = schema.get("name", "?") if isinstance(schema, dict) else str(schema)
    # the source is generated above from a parsed schema: its field names (identifiers) and types only
    exec(compile(code, f"<avro writer {label}>", "exec"), namespace)  # noqa: S102
    writer: Writer = namespace["write"]
    return writer
