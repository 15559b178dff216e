"""The Kafka worker's partition stores on disk (streams/kafka/partition_stores.py), without a broker: a load
fills a fresh Checkpoint file, a commit trims memory to the budget, and forgetting or closing removes the
files; a load that fails keeps nothing. Reading from the changelog is tested on a broker
(tests/integration/kafka/test_kafka_partition_stores.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from streams.checkpoints import Checkpoint
from streams.kafka.partition_stores import PartitionStores, Store


def _fill(n: int) -> Callable[[Store], None]:
    def fill(store: Store) -> None:
        for i in range(n):
            store[f"k{i}"] = {"i": i}

    return fill


def test_a_loaded_partition_is_a_file_holding_only_the_budget_in_memory(tmp_path: Path) -> None:
    stores = PartitionStores(tmp_path / "w", budget=4)
    store = stores.load(2, _fill(50))
    assert isinstance(store, Checkpoint) and store.path == tmp_path / "w" / "p2.sqlite"
    assert store.in_memory == 4 and len(store) == 50
    assert store["k0"] == {"i": 0}  # read back from disk
    store["k1"] = {"i": -1}
    del store["k3"]
    stores.commit({2})
    assert store.in_memory <= 4
    assert store["k1"] == {"i": -1} and "k3" not in store and len(store) == 49


def test_each_load_starts_from_an_empty_file(tmp_path: Path) -> None:
    stores = PartitionStores(tmp_path / "w", budget=4)
    stores.load(0, _fill(10))
    stores.load(0, _fill(3))  # reloaded (e.g. assigned again): the old file is gone
    assert sorted(stores[0]) == ["k0", "k1", "k2"]


def test_a_failed_load_keeps_nothing(tmp_path: Path) -> None:
    stores = PartitionStores(tmp_path / "w", budget=4)

    def broken(store: Store) -> None:
        store["half"] = 1
        raise TimeoutError("the changelog was not read to its end")

    with pytest.raises(TimeoutError):
        stores.load(1, broken)
    assert not stores.loaded(1) and not (tmp_path / "w" / "p1.sqlite").exists()


def test_forget_and_close_remove_the_files(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    stores = PartitionStores(folder, budget=4)
    for p in (0, 1, 3):
        stores.load(p, _fill(5))
    stores.forget({1})
    assert not stores.loaded(1) and stores.loaded(0)
    assert sorted(f.name for f in folder.iterdir()) == ["p0.sqlite", "p3.sqlite"]
    stores.close()
    assert not folder.exists() and list(stores.items()) == []


def test_without_a_folder_stores_are_dicts(tmp_path: Path) -> None:
    stores = PartitionStores()
    assert stores.load(0, _fill(5)) == {f"k{i}": {"i": i} for i in range(5)}
    stores.close()
