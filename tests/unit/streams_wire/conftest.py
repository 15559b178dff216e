"""Small Avro schemas for the wire-format tests: an envelope shared across files, an event in two
versions (v2 adds a defaulted field; v1 lives in old/), and a second event type."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from streams.wire import SchemaStore

NS = "test.wire"
ENVELOPE: dict[str, Any] = {
    "type": "record",
    "name": "Envelope",
    "namespace": NS,
    "fields": [
        {"name": "event_id", "type": "string"},
        {"name": "occurred_at", "type": {"type": "long", "logicalType": "timestamp-millis"}},
        {"name": "kind", "type": {"type": "enum", "name": "Kind", "symbols": ["CLAIMED", "VERIFIED"]}},
    ],
}
_ORDER_FIELDS: list[dict[str, Any]] = [
    {"name": "envelope", "type": "Envelope"},
    {"name": "amount", "type": "double"},
    {"name": "tags", "type": {"type": "array", "items": "string"}},
    {"name": "attrs", "type": {"type": "map", "values": "string"}},
    {"name": "note", "type": ["null", "string"], "default": None},
    {"name": "previous", "type": ["null", f"{NS}.Envelope"], "default": None},
]
ORDER_V1: dict[str, Any] = {"type": "record", "name": "OrderPlaced", "namespace": NS, "fields": _ORDER_FIELDS}
ORDER_V2: dict[str, Any] = {
    **ORDER_V1,
    "fields": [*_ORDER_FIELDS, {"name": "currency", "type": "string", "default": "EUR"}],
}
REFUND: dict[str, Any] = {
    "type": "record",
    "name": "RefundIssued",
    "namespace": NS,
    "fields": [{"name": "envelope", "type": "Envelope"}, {"name": "count", "type": "int"}],
}


class Schemas:
    """The documents above, handed to tests as a fixture (conftest is not importable here)."""

    NS = NS
    ENVELOPE = ENVELOPE
    ORDER_V1 = ORDER_V1
    ORDER_V2 = ORDER_V2
    REFUND = REFUND

    @staticmethod
    def write(directory: Path, current: dict[str, Any], old: dict[str, Any] | None = None) -> Path:
        return write_schemas(directory, current, old)


@pytest.fixture(scope="session")
def schemas() -> type[Schemas]:
    return Schemas


def write_schemas(directory: Path, current: dict[str, Any], old: dict[str, Any] | None = None) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    for file_name, schema in current.items():
        (directory / file_name).write_text(json.dumps(schema), encoding="utf-8")
    for file_name, schema in (old or {}).items():
        (directory / "old").mkdir(exist_ok=True)
        (directory / "old" / file_name).write_text(json.dumps(schema), encoding="utf-8")
    return directory


@pytest.fixture(scope="session")
def schema_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    # "a_" sorts the file that references Envelope before the file defining it: order must not matter
    return write_schemas(
        tmp_path_factory.mktemp("avro"),
        {"a_order_placed.avsc": ORDER_V2, "envelope.avsc": ENVELOPE, "refund_issued.avsc": REFUND},
        {"order_placed.v1.avsc": ORDER_V1},
    )


@pytest.fixture(scope="session")
def store(schema_dir: Path) -> SchemaStore:
    return SchemaStore.from_directory(schema_dir)
