"""The staged view a Kafka worker gives a processor: per-event views folded into a per-batch view."""

from __future__ import annotations

from typing import Any

from streams.kafka.staged_store import DELETED, StagedStore


def test_writes_stay_staged_until_the_worker_persists_them() -> None:
    store: dict[str, Any] = {"a": 1, "b": 2}
    view = StagedStore(store)
    view["a"] = 10
    del view["b"]
    view["c"] = 3
    assert store == {"a": 1, "b": 2}
    assert dict(view) == {"a": 10, "c": 3}
    assert sorted(view.changes(), key=lambda kv: kv[0]) == [("a", 10), ("b", DELETED), ("c", 3)]


def test_an_event_that_raises_leaves_nothing_in_the_batch() -> None:
    store: dict[str, Any] = {"case": {"calls": 1}}
    batch = StagedStore(store)
    first = StagedStore(batch)
    first["case"] = {"calls": 2}
    first.fold()  # the first event returned
    second = StagedStore(batch)
    second["case"] = {"calls": 99}
    second["other"] = True  # ... and then its processor raised: never folded
    assert batch.changes() == [("case", {"calls": 2})]
    assert store == {"case": {"calls": 1}}


def test_a_key_created_and_removed_within_a_batch_is_no_change() -> None:
    batch = StagedStore({})
    event = StagedStore(batch)
    event["tmp"] = 1
    event.fold()
    later = StagedStore(batch)
    del later["tmp"]
    later.fold()
    assert batch.changes() == []
    assert dict(batch) == {}
