"""Loading .avsc files into parsed fastavro schemas, and their Parsing Canonical Form fingerprints.

fastavro leaves a reference to a named type defined in another file as a bare name, and its
`expand=True` inlines *every* use; the Avro spec's canonical form inlines only the first use.
`self_contained` does the latter so our fingerprints match any other Avro implementation's.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from fastavro.schema import SchemaParseException, UnknownType, fingerprint, parse_schema
from fastavro.schema import to_parsing_canonical_form as _fastavro_pcf

from streams._errors import StreamsError

_NAMED_KINDS = frozenset({"record", "error", "enum", "fixed"})


class SchemaStoreError(StreamsError):
    """An .avsc file is unreadable, invalid, duplicated or references a type nobody defines."""


@dataclass(frozen=True)
class ParsedSchema:
    """One schema version: its full name, the fastavro-parsed form and its identity."""

    name: str
    parsed: dict[str, Any]
    canonical_form: str
    fingerprint: bytes  # the 8 header bytes: CRC-64-AVRO, little-endian
    source: Path | None
    field_names: frozenset[str]  # of a record; empty for enum and fixed


def fingerprint_text(fingerprint: bytes) -> str:
    """The one notation of a schema fingerprint (headers, errors, docs): the 8 CRC-64-AVRO bytes in wire
    order (as they follow `C3 01` in a single-object value) as 16 lowercase hex digits."""
    if len(fingerprint) != 8:
        raise ValueError(f"a CRC-64-AVRO fingerprint has 8 bytes, not {len(fingerprint)}")
    return fingerprint.hex()


def self_contained(schema: Any, named: Mapping[str, Any]) -> Any:
    """A copy of `schema` where the first use of each named type is its full definition."""
    return _inline(schema, named, set())


def _inline(schema: Any, named: Mapping[str, Any], seen: set[str]) -> Any:
    if isinstance(schema, str):
        if schema in named and schema not in seen:
            return _inline(named[schema], named, seen)
        return schema
    if isinstance(schema, list):
        return [_inline(branch, named, seen) for branch in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: value for key, value in schema.items() if not key.startswith("__")}
    kind = out.get("type")
    if kind in _NAMED_KINDS and isinstance(out.get("name"), str):
        seen.add(out["name"])
    if kind in ("record", "error"):
        out["fields"] = [{**field, "type": _inline(field["type"], named, seen)} for field in out["fields"]]
    elif kind == "array":
        out["items"] = _inline(out["items"], named, seen)
    elif kind == "map":
        out["values"] = _inline(out["values"], named, seen)
    elif isinstance(kind, dict | list) or (isinstance(kind, str) and kind in named):
        out["type"] = _inline(kind, named, seen)
    return out


def identify(parsed: Any, source: Path | None) -> ParsedSchema:
    """Name, canonical form and fingerprint of a parsed top-level named schema."""
    name = parsed.get("name") if isinstance(parsed, dict) else None
    if not isinstance(name, str) or parsed.get("type") not in _NAMED_KINDS:
        raise SchemaStoreError(f"{source}: the top level must be a named record, enum or fixed")
    full = self_contained(parsed, parsed.get("__named_schemas", {}))
    canonical = _fastavro_pcf(full)
    return ParsedSchema(
        name=name,
        parsed=parsed,
        canonical_form=canonical,
        fingerprint=bytes.fromhex(fingerprint(canonical, "CRC-64-AVRO")),
        source=source,
        field_names=frozenset(f["name"] for f in parsed.get("fields", ())),
    )


def read_avsc(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SchemaStoreError(f"{path}: cannot read schema: {exc}") from exc


def parse_current(paths: list[Path]) -> tuple[list[ParsedSchema], dict[str, Any]]:
    """Parse the current schemas; a file may use named types defined in any other file.

    Files are retried until no more resolve, so their order does not matter. Returns the schemas
    and the shared named-type table.
    """
    named: dict[str, Any] = {}
    pending = {path: read_avsc(path) for path in sorted(paths)}
    parsed: list[ParsedSchema] = []
    while pending:
        missing: dict[Path, str] = {}
        progressed = False
        for path, raw in list(pending.items()):
            trial = dict(named)
            try:
                result = parse_schema(raw, named_schemas=trial)
            except UnknownType as exc:
                missing[path] = str(exc.name)
                continue
            except (SchemaParseException, ValueError, TypeError, KeyError, AttributeError) as exc:
                raise SchemaStoreError(f"{path}: invalid Avro schema: {exc}") from exc
            redefined = sorted(k for k in named if trial[k] != named[k])
            if redefined:
                raise SchemaStoreError(f"{path}: redefines named type(s) {redefined} defined in another file")
            named = trial
            parsed.append(identify(result, path))
            del pending[path]
            progressed = True
        if not progressed:
            detail = ", ".join(f"{p.name}: {n}" for p, n in sorted(missing.items()))
            raise SchemaStoreError(f"unknown named type(s) referenced: {detail}")
    return parsed, named


def parse_old(path: Path, current_named: Mapping[str, Any]) -> ParsedSchema:
    """Parse an old version. Types it defines shadow the current ones; the rest resolve to current."""
    try:
        result = parse_schema(read_avsc(path), named_schemas=dict(current_named))
    except UnknownType as exc:
        raise SchemaStoreError(f"{path}: unknown named type {exc.name}") from exc
    except (SchemaParseException, ValueError, TypeError, KeyError, AttributeError) as exc:
        raise SchemaStoreError(f"{path}: invalid Avro schema: {exc}") from exc
    return identify(result, path)
