"""What every record says about itself, on any topic and in either runtime: headers and event time.

Headers (UTF-8 strings; Kafka headers, or the `headers` map of an embedded log record):

- `event_id`, `event_type`: the event's deterministic id and its type (`CaseFinished`, ...).
- `schema_name`: the full name of the Avro schema the value was written with (`dev.agenttwin.events.CaseFinished`).
- `schema_fingerprint`: that writer schema's CRC-64-AVRO fingerprint (Parsing Canonical Form) in THE one
  notation AgentTwin prints anywhere (headers, errors, dead letters, docs): 16 lowercase hex digits of
  the 8 fingerprint bytes in wire order, i.e. exactly the bytes after `C3 01` in a single-object value
  (e.g. `29279538014cf2d5`). Java's `SchemaNormalization.parsingFingerprint("CRC-64-AVRO", s)` returns
  the same bytes; `parsingFingerprint64` is that value read as a little-endian signed long.
- `content-type`: how the value is framed: `application/avro; encoding=single-object` (`C3 01` +
  fingerprint + body) or `application/avro; encoding=confluent` (`00` + 4-byte registry id + body);
  in the Confluent framing `schema_id` holds the registry id too.

Event time: the record's timestamp is the event's `occurred_at` in milliseconds since the epoch (Kafka
CreateTime, set explicitly by every producer; `timestamp_ms` of an embedded log record), never the
time the record was produced.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from streams._avro_schemas import fingerprint_text
from streams.events import Event

EVENT_ID_HEADER = "event_id"
EVENT_TYPE_HEADER = "event_type"
SCHEMA_NAME_HEADER = "schema_name"
SCHEMA_FINGERPRINT_HEADER = "schema_fingerprint"
SCHEMA_ID_HEADER = "schema_id"
CONTENT_TYPE_HEADER = "content-type"
SINGLE_OBJECT = "application/avro; encoding=single-object"
CONFLUENT = "application/avro; encoding=confluent"

_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
_MS = timedelta(milliseconds=1)

__all__ = ["event_time_ms", "fingerprint_text", "record_headers"]


def event_time_ms(event: Event) -> int:
    """`occurred_at` as milliseconds since the epoch (naive datetimes are UTC), exact to the millisecond."""
    at = event.occurred_at if event.occurred_at.tzinfo else event.occurred_at.replace(tzinfo=UTC)
    return (at - _EPOCH) // _MS


def record_headers(
    event: Event,
    schema_name: str,
    fingerprint: bytes,
    *,
    content_type: str = SINGLE_OBJECT,
    schema_id: int | None = None,
) -> dict[str, str]:
    """Every header a record of `event` carries, in one fixed order."""
    headers = {
        EVENT_ID_HEADER: event.event_id,
        EVENT_TYPE_HEADER: event.event_type,
        SCHEMA_NAME_HEADER: schema_name,
        SCHEMA_FINGERPRINT_HEADER: fingerprint_text(fingerprint),
        CONTENT_TYPE_HEADER: content_type,
    }
    if schema_id is not None:
        headers[SCHEMA_ID_HEADER] = str(schema_id)
    return headers
