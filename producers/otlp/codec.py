"""OTLP/HTTP bodies in and out: content types, gzip, size limits, OTLP-JSON's hex ids.

Everything that makes a request unusable raises IngestError with the HTTP status to answer
(400 malformed or nested too deeply, 413 too large, 415 unsupported type or encoding); nothing is
written for those. Limits: the body, and a gzip body once inflated (all its members together), at most
`max_bytes`; JSON nested at most MAX_JSON_DEPTH arrays/objects deep; protobuf messages (binary or from
JSON) at most MAX_MESSAGE_DEPTH deep — the protobuf runtime's own limit.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
import zlib
from typing import Any

from google.protobuf import json_format  # type: ignore[import-untyped, unused-ignore]
from google.protobuf.message import DecodeError  # type: ignore[import-untyped, unused-ignore]
from google.rpc import status_pb2  # type: ignore[import-untyped, unused-ignore]
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTracePartialSuccess,
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)

PROTOBUF = "application/x-protobuf"
JSON = "application/json"
CONTENT_TYPES = (PROTOBUF, JSON)
DEFAULT_MAX_BODY_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 128  # nested arrays/objects in a JSON body (OTLP needs about 10 plus 3 per nested value)
MAX_MESSAGE_DEPTH = 100  # nested protobuf messages: upb's limit for binary bodies, applied to JSON too
# google.rpc.Code values used in error bodies
_RPC_CODE = {400: 3, 401: 16, 404: 5, 405: 12, 411: 3, 413: 8, 415: 3, 500: 13, 503: 14}


class IngestError(Exception):
    """A request the receiver refuses, with the HTTP status to answer."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


def media_type(header: str | None) -> str:
    """The request's content type without parameters; 415 unless protobuf or JSON."""
    value = (header or "").split(";", 1)[0].strip().lower()
    if value not in CONTENT_TYPES:
        shown = value or "none"
        raise IngestError(415, f"unsupported content type {shown}: use {PROTOBUF} or {JSON}")
    return value


def decompress(body: bytes, encoding: str | None, max_bytes: int) -> bytes:
    """Undo Content-Encoding (gzip or identity), never inflating past max_bytes.

    A gzip body may hold several members (RFC 1952 §2.2): they are decoded in turn and concatenated, all
    of them or none; anything after the last member that is not a member is a malformed body."""
    value = (encoding or "identity").strip().lower()
    if value == "identity":
        return body
    if value != "gzip":
        raise IngestError(415, f"unsupported content encoding {value}: use gzip or none")
    out = bytearray()
    rest, member = body, 1
    while True:
        inflater = zlib.decompressobj(wbits=16 + zlib.MAX_WBITS)
        try:
            out += inflater.decompress(rest, max_bytes + 1 - len(out))
        except zlib.error as exc:
            raise IngestError(400, f"invalid gzip body (member {member}): {exc}") from None
        if len(out) > max_bytes:
            raise IngestError(413, f"decompressed body exceeds {max_bytes} bytes")
        if not inflater.eof:
            raise IngestError(400, f"invalid gzip body (member {member}): truncated")
        rest, member = inflater.unused_data, member + 1
        if not rest:
            return bytes(out)


_ESCAPED = re.compile(rb"\\.", re.DOTALL)
_STRING = re.compile(rb'"[^"]*"')  # once escapes are gone, a string runs to the next quote
_NOT_BRACKETS = bytes(b for b in range(256) if b not in b"[]{}")


def json_too_deep(body: bytes, limit: int = MAX_JSON_DEPTH) -> bool:
    """True when arrays and objects nest deeper than `limit` (brackets inside strings do not count).

    Checked before parsing: the standard parser recurses once per level, and a body of 30,000 `[` would
    otherwise end in a RecursionError instead of an answer. Linear in the body's size."""
    brackets = _STRING.sub(b"", _ESCAPED.sub(b"", body)).translate(None, _NOT_BRACKETS)
    depth = 0
    for byte in brackets:
        if byte in b"[{":
            depth += 1
            if depth > limit:
                return True
        else:
            depth -= 1
    return False


def _hex_to_base64(value: Any) -> str:
    """OTLP-JSON ids are hex; protobuf-JSON wants base64. A bad id becomes empty, so that span alone
    is rejected as invalid (partial success) instead of failing the whole request."""
    if not isinstance(value, str):
        return ""
    try:
        return base64.b64encode(bytes.fromhex(value)).decode("ascii")
    except ValueError:
        return ""


_ID_FIELDS = ("traceId", "trace_id", "spanId", "span_id", "parentSpanId", "parent_span_id")


def _fix_ids(item: Any) -> None:
    if not isinstance(item, dict):
        return
    for name in _ID_FIELDS:
        if name in item:
            item[name] = _hex_to_base64(item[name])


def _spans_of(doc: dict[str, Any]) -> list[Any]:
    out: list[Any] = []
    for rs in _list(doc, "resourceSpans", "resource_spans"):
        for ss in _list(rs, "scopeSpans", "scope_spans"):
            out.extend(_list(ss, "spans"))
    return out


def _list(item: Any, *names: str) -> list[Any]:
    if not isinstance(item, dict):
        return []
    for name in names:
        value = item.get(name)
        if isinstance(value, list):
            return value
    return []


def parse_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    request = ExportTraceServiceRequest()
    if content_type == PROTOBUF:
        try:
            request.ParseFromString(body)
        except DecodeError as exc:
            raise IngestError(400, f"invalid protobuf body: {exc}") from None
        return request
    if json_too_deep(body):
        raise IngestError(400, f"invalid JSON body: nested deeper than {MAX_JSON_DEPTH} levels")
    try:
        doc = json.loads(body)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise IngestError(400, f"invalid JSON body: {exc}") from None
    except RecursionError:  # a backstop: json_too_deep already refused what could get here
        raise IngestError(400, "invalid JSON body: nested too deeply") from None
    if not isinstance(doc, dict):
        raise IngestError(400, "invalid JSON body: expected an object")
    for span in _spans_of(doc):
        _fix_ids(span)
        for link in _list(span, "links"):
            _fix_ids(link)
    try:
        json_format.ParseDict(doc, request, ignore_unknown_fields=True, max_recursion_depth=MAX_MESSAGE_DEPTH)
    except (json_format.ParseError, binascii.Error, TypeError, ValueError) as exc:
        raise IngestError(400, f"invalid OTLP JSON: {exc}") from None
    except RecursionError:
        raise IngestError(400, "invalid OTLP JSON: nested too deeply") from None
    return request


def encode(message: Any, content_type: str) -> bytes:
    if content_type == JSON:
        text: str = json_format.MessageToJson(message, indent=None)
        return text.encode("utf-8")
    data: bytes = message.SerializeToString()
    return data


def response_body(rejected: int, error_message: str, content_type: str) -> bytes:
    """ExportTraceServiceResponse; partial_success stays unset when every span was accepted."""
    response = ExportTraceServiceResponse()
    if rejected or error_message:
        response.partial_success.CopyFrom(
            ExportTracePartialSuccess(rejected_spans=rejected, error_message=error_message)
        )
    return encode(response, content_type)


def status_body(http_status: int, message: str, content_type: str) -> bytes:
    """The google.rpc.Status body OTLP/HTTP prescribes for failed requests."""
    status = status_pb2.Status(code=_RPC_CODE.get(http_status, 2), message=message)
    return encode(status, content_type)
