"""Single-object encoding through SchemaStore: layout, fingerprints, evolution, errors."""

from __future__ import annotations

import datetime as dt
import io
import json
from pathlib import Path
from typing import Any

import avro.schema
import fastavro
import pytest

from streams.wire import (
    MAGIC,
    SchemaStore,
    SchemaStoreError,
    WireError,
    WireErrorReason,
    check_backward_compatible,
)

NS = "test.wire"
ORDER = f"{NS}.OrderPlaced"
WHEN = dt.datetime(2025, 3, 1, 12, 30, tzinfo=dt.UTC)


def envelope(event_id: str = "e-1") -> dict[str, Any]:
    return {"event_id": event_id, "occurred_at": WHEN, "kind": "VERIFIED"}


def order(**overrides: Any) -> dict[str, Any]:
    record = {
        "envelope": envelope(),
        "amount": 12.5,
        "tags": ["a", "ü"],
        "attrs": {"k": "v"},
        "note": None,
        "previous": envelope("e-0"),
        "currency": "USD",
    }
    return {**record, **overrides}


def test_round_trip_and_layout(store: SchemaStore) -> None:
    data = store.encode(ORDER, order())
    current = store.current(ORDER)
    assert data[:2] == MAGIC == b"\xc3\x01"
    assert data[2:10] == current.fingerprint
    decoded = store.decode(data)
    assert decoded.name == ORDER
    assert decoded.record == order()
    assert decoded.fingerprint == int.from_bytes(current.fingerprint, "little")
    # the body is plain schemaless Avro
    assert fastavro.schemaless_reader(io.BytesIO(data[10:]), current.parsed, None) == order()


def test_fingerprint_matches_the_avro_reference_implementation(store: SchemaStore, schemas: Any) -> None:
    # Envelope lives in another file; the canonical form must inline it at first use only
    fields = json.loads(json.dumps(schemas.ORDER_V2["fields"]))
    fields[0]["type"] = json.loads(json.dumps(schemas.ENVELOPE))
    # python avro keeps {"type":"long"} for a logical type; Java's SchemaNormalization (and fastavro)
    # write "long". Compare on the plain primitive, which both canonicalise the same way.
    fields[0]["type"]["fields"][1]["type"] = "long"
    reference = avro.schema.parse(json.dumps({**schemas.ORDER_V2, "fields": fields}))
    assert store.current(ORDER).fingerprint == reference.fingerprint("CRC-64-AVRO")
    assert store.current(ORDER).canonical_form == reference.canonical_form
    assert store.current(ORDER).canonical_form.count('"name":"test.wire.Envelope","type":"record"') == 1


def test_spec_fingerprint_of_null_schema() -> None:
    # Avro spec: CRC-64-AVRO of "null" read as little-endian int64 is 7195948357588979594
    digest = fastavro.schema.fingerprint(fastavro.schema.to_parsing_canonical_form("null"), "CRC-64-AVRO")
    assert int.from_bytes(bytes.fromhex(digest), "little") == 7195948357588979594


def test_names_and_versions(store: SchemaStore) -> None:
    assert store.names() == [f"{NS}.Envelope", ORDER, f"{NS}.RefundIssued"]
    versions = store.versions(ORDER)
    assert len(versions) == 2
    assert versions[0] is store.current(ORDER)
    assert versions[1].source is not None
    assert versions[1].source.parent.name == "old"


def test_old_writer_version_is_resolved_to_the_current_reader(store: SchemaStore) -> None:
    old = store.versions(ORDER)[1]
    body = io.BytesIO()
    record_v1 = {k: v for k, v in order().items() if k != "currency"}
    fastavro.schemaless_writer(body, old.parsed, record_v1)
    decoded = store.decode(MAGIC + old.fingerprint + body.getvalue())
    assert decoded.record == {**record_v1, "currency": "EUR"}  # v2's default fills the new field
    assert decoded.fingerprint == int.from_bytes(old.fingerprint, "little")
    assert decoded.name == ORDER


def test_old_versions_only_register_fingerprints(tmp_path: Path, schemas: Any) -> None:
    # an old folder holding a type that no longer exists: its bytes are recognised, not readable
    directory = schemas.write(
        tmp_path, {"envelope.avsc": schemas.ENVELOPE}, {"refund.v1.avsc": schemas.REFUND}
    )
    store = SchemaStore.from_directory(directory)
    assert store.names() == [f"{NS}.Envelope"]
    gone = store.versions(f"{NS}.RefundIssued")[0]
    with pytest.raises(WireError) as caught:
        store.decode(MAGIC + gone.fingerprint + b"\x00")
    assert caught.value.reason is WireErrorReason.SCHEMA_RESOLUTION


def test_compatibility_helper(schemas: Any) -> None:
    both = {"Envelope": schemas.ENVELOPE}
    v1, v2 = schemas.ORDER_V1, schemas.ORDER_V2
    assert check_backward_compatible(_with(v2, both), _with(v1, both)) == []
    no_default = {**v1, "fields": [*v1["fields"], {"name": "region", "type": "string"}]}
    problems = check_backward_compatible(_with(no_default, both), _with(v1, both))
    assert len(problems) == 1
    assert "region" in problems[0]
    assert "reader_field_missing_default_value" in problems[0]


def _with(schema: dict[str, Any], named: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Parse with the envelope available, as the store does."""
    table: dict[str, Any] = {}
    for dependency in named.values():
        fastavro.parse_schema(dependency, named_schemas=table)
    parsed: dict[str, Any] = fastavro.parse_schema(schema, named_schemas=table)
    return parsed


def test_store_reports_compatibility_of_every_old_version(store: SchemaStore) -> None:
    assert store.compatibility_problems() == {store.versions(ORDER)[1].fingerprint.hex(): []}


def test_reader_name_other_than_the_writer_is_a_resolution_error(store: SchemaStore) -> None:
    data = store.encode(f"{NS}.RefundIssued", {"envelope": envelope(), "count": 2})
    with pytest.raises(WireError) as caught:
        store.decode(data, reader_name=ORDER)
    assert caught.value.reason is WireErrorReason.SCHEMA_RESOLUTION
    with pytest.raises(WireError) as missing:
        store.decode(data, reader_name=f"{NS}.Nope")
    assert missing.value.reason is WireErrorReason.SCHEMA_RESOLUTION


@pytest.mark.parametrize(
    ("data", "reason"),
    [
        (b"", WireErrorReason.BAD_MAGIC),
        (b"\xc3\x01\x00", WireErrorReason.BAD_MAGIC),
        (b"\x00" + b"\x00" * 12, WireErrorReason.BAD_MAGIC),
        (MAGIC + b"\x01" * 8 + b"\x00", WireErrorReason.UNKNOWN_FINGERPRINT),
    ],
)
def test_undecodable_headers(store: SchemaStore, data: bytes, reason: WireErrorReason) -> None:
    with pytest.raises(WireError) as caught:
        store.decode(data)
    assert caught.value.reason is reason
    assert str(caught.value).startswith(reason.value)


def test_truncated_and_padded_bodies_are_corrupt(store: SchemaStore) -> None:
    data = store.encode(ORDER, order())
    for broken in (data[:-1], data[:12], data + b"\x00"):
        with pytest.raises(WireError) as caught:
            store.decode(broken)
        assert caught.value.reason is WireErrorReason.CORRUPT_BODY


def test_bad_enum_index_is_corrupt(store: SchemaStore) -> None:
    data = bytearray(store.encode(f"{NS}.Envelope", envelope("x")))
    data[-1] = 0x7E  # kind: enum index 63 of 2 symbols
    with pytest.raises(WireError) as caught:
        store.decode(bytes(data))
    assert caught.value.reason is WireErrorReason.CORRUPT_BODY


def test_encode_errors(store: SchemaStore) -> None:
    with pytest.raises(WireError) as unknown:
        store.encode(f"{NS}.Nope", {})
    assert unknown.value.reason is WireErrorReason.UNKNOWN_SCHEMA
    for bad in (order(amount="lots"), order(unexpected=1), {"amount": 1.0}):
        with pytest.raises(WireError) as invalid:
            store.encode(ORDER, bad)
        assert invalid.value.reason is WireErrorReason.INVALID_RECORD
    # a missing field that has a default is fine
    without_note = {k: v for k, v in order().items() if k != "note"}
    assert store.decode(store.encode(ORDER, without_note)).record["note"] is None


def test_raw_documents_are_accepted_by_the_compatibility_helper(schemas: Any) -> None:
    old = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]}
    new = {"type": "record", "name": "R", "fields": [{"name": "a", "type": "long"}]}  # int promotes to long
    assert check_backward_compatible(new, old) == []
    assert check_backward_compatible(old, new) != []  # long does not narrow to int


def test_directory_errors(tmp_path: Path, schemas: Any) -> None:
    ENVELOPE, ORDER_V2, write_schemas = schemas.ENVELOPE, schemas.ORDER_V2, schemas.write
    with pytest.raises(SchemaStoreError, match="unknown named type"):
        SchemaStore.from_directory(write_schemas(tmp_path / "a", {"order.avsc": ORDER_V2}))
    with pytest.raises(SchemaStoreError, match="also defined"):
        SchemaStore.from_directory(
            write_schemas(tmp_path / "b", {"e1.avsc": ENVELOPE, "e2.avsc": ENVELOPE, "o.avsc": ORDER_V2})
        )
    changed = {**ENVELOPE, "name": "Other", "fields": [{"name": "x", "type": ENVELOPE["fields"][2]["type"]}]}
    changed["fields"][0]["type"] = {**ENVELOPE["fields"][2]["type"], "symbols": ["X"]}
    with pytest.raises(SchemaStoreError, match="redefines"):
        SchemaStore.from_directory(write_schemas(tmp_path / "c", {"e.avsc": ENVELOPE, "o.avsc": changed}))
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "broken.avsc").write_text("{not json", encoding="utf-8")
    with pytest.raises(SchemaStoreError, match=r"broken\.avsc"):
        SchemaStore.from_directory(tmp_path / "d")
    with pytest.raises(SchemaStoreError, match="not a directory"):
        SchemaStore.from_directory(tmp_path / "missing")


def test_from_schemas_matches_from_directory(store: SchemaStore, schemas: Any) -> None:
    memory = SchemaStore.from_schemas(
        [schemas.ENVELOPE, schemas.ORDER_V2, schemas.REFUND], old=[schemas.ORDER_V1]
    )
    assert memory.names() == store.names()
    assert [v.fingerprint for v in memory.versions(ORDER)] == [v.fingerprint for v in store.versions(ORDER)]
    assert memory.decode(store.encode(ORDER, order())).record == order()
