"""The changelog codec (streams/kafka/store_codec.py): the bytes a previous version wrote still load, and are
written the same way (the embedded checkpoints and Kafka changelogs hold them)."""

from __future__ import annotations

import gc
from datetime import UTC, datetime
from typing import Any

import pytest

from streams.events import OutcomeVerified
from streams.kafka.store_codec import dumps, loads

AT = datetime(2026, 3, 1, 12, 0, 0, 123000, tzinfo=UTC)

# What the codec wrote before its fast path and its cache of encoded events (commit 6abd2a7), for VALUE.
WRITTEN_BEFORE = (
    b'{"calls":{"s1":[1700000000000000000,"refund",false,true]},"claim":{"at":{"$datetime":'
    b'"2026-03-01T12:00:00.123000+00:00"},"rank":[1,2.5],"status":"SUCCESS","tool":null},"closed":true,"n":null,'
    b'"pair":["x",1],"raw":{"$bytes":"AP8="},"sent":["a-1"],"tenant":"acme","trace_id":"t-1","verified":{"1.1.0":'
    b'{"$event":"wwGfqe2D1NTvEAZ2LTEeT3V0Y29tZVZlcmlmaWVk9qmolJVnAghhY21lBnQtMQZ0LTEAAAoxLjEuMA5GQUlMVVJFASJleHRl'
    b'cm5hbF9jYWxsYmFjawAAIHJlZnVuZCBub3QgZm91bmQAAAL2qaiUlWcAAA=="}},"\\u00fcn\\u00ef":"c\\u00f6d\\u00e9"}'
)


def verification(reason: str = "refund not found") -> OutcomeVerified:
    return OutcomeVerified(
        event_id="v-1",
        occurred_at=AT,
        correlation_id="t-1",
        tenant="acme",
        trace_id="t-1",
        evaluator_version="1.1.0",
        status="FAILURE",
        verified=True,
        source="external_callback",
        reason=reason,
        received_at=AT,
    )


def value() -> dict[str, Any]:
    return {
        "tenant": "acme",
        "trace_id": "t-1",
        "claim": {"status": "SUCCESS", "at": AT, "tool": None, "rank": [1, 2.5]},
        "verified": {"1.1.0": verification()},
        "calls": {"s1": [1700000000000000000, "refund", False, True]},
        "sent": ["a-1"],
        "raw": b"\x00\xff",
        "pair": ("x", 1),
        "closed": True,
        "n": None,
        "ünï": "cödé",
    }


def test_a_value_written_by_the_previous_codec_loads_and_is_written_byte_for_byte_the_same() -> None:
    assert loads(WRITTEN_BEFORE) == {**value(), "pair": ["x", 1]}
    assert dumps(value()) == WRITTEN_BEFORE
    assert dumps(loads(WRITTEN_BEFORE)) == WRITTEN_BEFORE


def test_an_event_encoded_again_from_the_cache_is_that_event_not_another_one_at_the_same_address() -> None:
    first = verification("first")
    assert loads(dumps({"v": first}))["v"] == first
    assert loads(dumps({"v": first}))["v"] == first  # from the cache
    del first
    gc.collect()
    for i in range(50):  # new events, some likely at the freed address: each encodes as itself
        other = verification(f"other {i}")
        assert loads(dumps({"v": other}))["v"].reason == f"other {i}"


@pytest.mark.parametrize(
    "bad",
    [{"$event": "x"}, {1: "int key"}, {"nested": {"$datetime": "2026"}}, [{"ok": object()}], {"s": {1, 2}}],
)
def test_what_the_codec_cannot_read_back_is_refused(bad: Any) -> None:
    with pytest.raises(TypeError):
        dumps(bad)
