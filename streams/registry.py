"""A Confluent-compatible schema registry client and the Confluent wire framing (`00` + 4-byte id + body).

Used only in the optional Confluent mode (`--wire confluent --schema-registry URL`): any registry that
speaks Confluent's REST API (Confluent Schema Registry, Apicurio Registry's `/apis/ccompat/v7`, Karapace).
Subjects follow Confluent's TopicRecordNameStrategy, `<physical topic>-<schema full name>`, so one topic
may carry several event types. Every subject is set to BACKWARD compatibility before the first
registration, so the registry refuses, at produce time, a schema that cannot read what was written
before. Schemas are registered in full (defaults, docs, logical types), not in canonical form.
"""

from __future__ import annotations

import json
import struct
import threading
import time
from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

import httpx
from fastavro.schema import SchemaParseException, parse_schema

from streams._avro_schemas import ParsedSchema, identify, self_contained
from streams._errors import StreamsError

CONFLUENT_MAGIC = b"\x00"
CONFLUENT_HEADER_SIZE = 5
COMPATIBILITY = "BACKWARD"
_CONTENT_TYPE = "application/vnd.schemaregistry.v1+json"
_ATTEMPTS = 4
CHECK_TIMEOUT_S = 5.0  # connect and answer, for the check a command makes before it starts


class RegistryError(StreamsError):
    """The registry refused a request (e.g. an incompatible schema) or could not be reached (status None)."""

    def __init__(self, message: str, status: int | None = None) -> None:
        super().__init__(message)
        self.status = status


def frame(schema_id: int, body: bytes) -> bytes:
    return CONFLUENT_MAGIC + struct.pack(">I", schema_id) + body


def schema_id_of(value: bytes) -> int | None:
    """The registry id of a Confluent-framed value, None for anything else."""
    if len(value) < CONFLUENT_HEADER_SIZE or value[:1] != CONFLUENT_MAGIC:
        return None
    (schema_id,) = struct.unpack(">I", value[1:CONFLUENT_HEADER_SIZE])
    return int(schema_id)


def full_schema_json(schema: ParsedSchema) -> str:
    """The schema as a self-contained JSON document (every named type it uses defined inline)."""
    return json.dumps(self_contained(schema.parsed, schema.parsed.get("__named_schemas", {})), sort_keys=True)


class SchemaRegistry:
    """Thread-safe, caching client of one registry's Confluent-compatible REST API (ids cached for good)."""

    def __init__(self, url: str, *, timeout_s: float = 10.0) -> None:
        if not url.startswith(("http://", "https://")):
            raise RegistryError(f"schema registry URL must be http(s)://..., got {url!r}")
        self.url = url.rstrip("/")
        self._timeout_s = timeout_s
        self._lock = threading.Lock()
        self._ids: dict[tuple[str, str], int] = {}
        self._by_id: dict[int, ParsedSchema] = {}
        self._configured: set[str] = set()

    def _call(self, method: str, path: str, body: Mapping[str, Any] | None = None) -> Any:
        content = json.dumps(body).encode() if body is not None else None
        headers = {"Accept": _CONTENT_TYPE, **({"Content-Type": _CONTENT_TYPE} if body is not None else {})}
        delay = 0.2
        for attempt in range(_ATTEMPTS):
            try:
                # one connection per call: calls are few (ids are cached) and no client outlives its codec
                response = httpx.request(
                    method, self.url + path, content=content, headers=headers, timeout=self._timeout_s
                )
            except httpx.HTTPError as exc:
                if attempt == _ATTEMPTS - 1:
                    raise RegistryError(f"schema registry {self.url} unreachable: {exc}") from exc
                time.sleep(delay)
                delay *= 2
                continue
            if response.status_code >= 500 and attempt < _ATTEMPTS - 1:
                time.sleep(delay)
                delay *= 2
                continue
            if response.status_code >= 400:
                detail = " ".join(response.text.split())[:500]
                message = f"schema registry {method} {path}: HTTP {response.status_code}: {detail}"
                raise RegistryError(message, response.status_code)
            return response.json()
        raise AssertionError("unreachable")

    def check(self, *, timeout_s: float = CHECK_TIMEOUT_S) -> None:
        """One request (`GET /subjects`) within `timeout_s`: RegistryError naming the URL when the registry does
        not answer, so a command fails in one line before it starts instead of waiting on a registry."""
        try:
            response = httpx.get(self.url + "/subjects", headers={"Accept": _CONTENT_TYPE}, timeout=timeout_s)
        except httpx.HTTPError as exc:
            raise RegistryError(
                f"schema registry {self.url} unreachable (no answer within {timeout_s:g} s): "
                f"{type(exc).__name__}: {' '.join(str(exc).split()) or 'no detail'}"
            ) from None
        if response.status_code >= 400:
            raise RegistryError(f"schema registry {self.url} answered HTTP {response.status_code} to GET /subjects")

    def register(self, subject: str, schema: ParsedSchema) -> int:
        """The id of `schema` under `subject`, registering it (BACKWARD enforced) when it is new."""
        document = full_schema_json(schema)
        key = (subject, document)
        with self._lock:
            known = self._ids.get(key)
        if known is not None:
            return known
        path = "/subjects/" + quote(subject, safe="")
        if subject not in self._configured:
            self._call("PUT", "/config/" + quote(subject, safe=""), {"compatibility": COMPATIBILITY})
            self._configured.add(subject)
        reply = self._call("POST", path + "/versions", {"schema": document})
        schema_id = int(reply["id"])
        with self._lock:
            self._ids[key] = schema_id
            self._by_id.setdefault(schema_id, schema)
        return schema_id

    def schema(self, schema_id: int) -> ParsedSchema:
        """The writer schema registered under `schema_id` (parsed; cached: ids never change meaning)."""
        with self._lock:
            known = self._by_id.get(schema_id)
        if known is not None:
            return known
        reply = self._call("GET", f"/schemas/ids/{schema_id}")
        text = reply.get("schema") if isinstance(reply, dict) else None
        if not isinstance(text, str):
            raise RegistryError(f"schema registry: id {schema_id} has no Avro schema")
        try:
            parsed = identify(parse_schema(json.loads(text), named_schemas={}), None)
        except (SchemaParseException, ValueError, TypeError, KeyError, StreamsError) as exc:
            raise RegistryError(f"schema registry: id {schema_id} is not a usable Avro schema: {exc}") from exc
        with self._lock:
            self._by_id[schema_id] = parsed
        return parsed
