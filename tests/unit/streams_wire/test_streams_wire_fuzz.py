"""Property tests: any byte string decodes or raises WireError; generated records round-trip."""

from __future__ import annotations

import datetime as dt
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from streams.wire import HEADER_SIZE, MAGIC, SchemaStore, WireError, WireErrorReason

ORDER = "test.wire.OrderPlaced"
_SETTINGS = settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])


def _decode_or_wire_error(store: SchemaStore, data: bytes) -> None:
    """Anything but a WireError escaping fails the test; so does an error without a known reason."""
    failure: WireError | None = None
    try:
        decoded = store.decode(data)
    except WireError as error:
        failure = error
    if failure is None:
        assert decoded.name in store.names()
    else:
        assert failure.reason in set(WireErrorReason)
        assert failure.message


@_SETTINGS
@given(data=st.binary(max_size=200))
def test_random_bytes_only_raise_wire_error(store: SchemaStore, data: bytes) -> None:
    _decode_or_wire_error(store, data)


@_SETTINGS
@given(choice=st.integers(min_value=0, max_value=10), body=st.binary(max_size=200))
def test_random_bodies_behind_known_fingerprints_only_raise_wire_error(
    store: SchemaStore, choice: int, body: bytes
) -> None:
    versions = [v for name in store.names() for v in store.versions(name)]
    fingerprint = versions[choice % len(versions)].fingerprint
    _decode_or_wire_error(store, MAGIC + fingerprint + body)


_RECORDS = st.builds(
    lambda event_id, amount, tags, attrs, note: _order(event_id, amount, tags, attrs, note),
    st.text(max_size=20),
    st.floats(allow_nan=False),
    st.lists(st.text(max_size=8), max_size=5),
    st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4),
    st.none() | st.text(max_size=10),
)


@_SETTINGS
@given(
    record=_RECORDS,
    cut=st.integers(min_value=0, max_value=400),
    flip=st.integers(min_value=0, max_value=400),
    bit=st.integers(0, 7),
)
def test_mutated_valid_messages_only_raise_wire_error(
    store: SchemaStore, record: dict[str, Any], cut: int, flip: int, bit: int
) -> None:
    original = store.encode(ORDER, record)
    assert store.decode(original).record == record  # what was encoded is what decodes
    data = bytearray(original)
    where = flip % len(data)
    data[where] ^= 1 << bit
    mutated = bytes(data[: max(cut, 1)])
    _decode_or_wire_error(store, mutated)
    if where < HEADER_SIZE and len(mutated) > where:
        # a changed header byte is never read as this event: not the magic, not this writer
        try:
            decoded = store.decode(mutated)
        except WireError:
            pass
        else:
            raise AssertionError(f"header byte {where} changed, yet decoded {decoded.record!r}")


def test_every_changed_header_byte_is_rejected(store: SchemaStore) -> None:
    """Both magic bytes and all 8 fingerprint bytes, each with every one of its 255 other values."""
    original = store.encode(ORDER, _order("e", 1.0, ["t"], {"k": "v"}, None))
    known = {v.fingerprint for name in store.names() for v in store.versions(name)}
    checked = 0
    for where in range(HEADER_SIZE):
        for xor in range(1, 256):
            data = bytearray(original)
            data[where] ^= xor
            if where >= 2 and bytes(data[2:HEADER_SIZE]) in known:
                continue  # another known writer's fingerprint: a different event, not a changed one
            with pytest.raises(WireError) as caught:
                store.decode(bytes(data))
            expected = WireErrorReason.BAD_MAGIC if where < 2 else WireErrorReason.UNKNOWN_FINGERPRINT
            assert caught.value.reason is expected, (where, xor)
            checked += 1
    assert checked == HEADER_SIZE * 255  # no one-byte change happened to name another known writer


def _order(event_id: str, amount: float, tags: list[str], attrs: dict[str, str], note: str | None) -> dict[str, Any]:
    envelope = {
        "event_id": event_id,
        "occurred_at": dt.datetime(2025, 1, 1, tzinfo=dt.UTC),
        "kind": "CLAIMED",
    }
    return {
        "envelope": envelope,
        "amount": amount,
        "tags": tags,
        "attrs": attrs,
        "note": note,
        "previous": None,
        "currency": "EUR",
    }


@_SETTINGS
@given(
    event_id=st.text(max_size=20),
    amount=st.floats(allow_nan=False),
    tags=st.lists(st.text(max_size=8), max_size=5),
    attrs=st.dictionaries(st.text(max_size=5), st.text(max_size=5), max_size=4),
    note=st.none() | st.text(max_size=10),
)
def test_generated_records_round_trip(
    store: SchemaStore, event_id: str, amount: float, tags: list[str], attrs: dict[str, str], note: str | None
) -> None:
    record = _order(event_id, amount, tags, attrs, note)
    assert store.decode(store.encode(ORDER, record)).record == record
