"""Indexes a processor keeps inside its own store, so they are checkpointed and changelogged with its state.

- `TimeIndex`: keys due at a time, in buckets of a fixed width; the timer reads only the buckets whose
  start has passed, never the whole store.
- `RecentKeys`: the last N keys in arrival order (a FIFO), to evict what is done once N newer keys came.

Both keep one store key per item plus a small header, never one growing list: on Kafka every store change
is a changelog message, so each change stays small (and a removal is a tombstone). Index keys start with
`INDEX_PREFIX`; a processor refuses an entity key that starts with it (`check_entity_key`).
"""

from __future__ import annotations

import bisect
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from streams.processors.base import Store

INDEX_PREFIX = "\x00"
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def check_entity_key(key: str) -> str:
    """An entity key may not look like an index key (it would overwrite the index)."""
    if key.startswith(INDEX_PREFIX):
        raise ValueError(f"entity key {key!r} starts with a control character reserved for the store's indexes")
    return key


class TimeIndex:
    """Keys by due time. `add` when a key's due time changes; `expire` visits each key once it is due.

    Store layout (name `n`): `\\0n` -> sorted bucket numbers in use; `\\0n|b` -> items ever added to bucket b;
    `\\0n|b|i` -> the key of item i. An item whose key has moved to another bucket since (its due time only
    grows) or is gone is dropped when its bucket is read: no removal on update.
    """

    def __init__(self, name: str, width: timedelta) -> None:
        if width <= timedelta(0):
            raise ValueError("a time index needs a positive bucket width")
        self._root = f"{INDEX_PREFIX}{name}"
        self.width = width

    def bucket(self, due: datetime) -> int:
        return (due - _EPOCH) // self.width

    def _start(self, bucket: int) -> datetime:
        return _EPOCH + bucket * self.width

    def add(self, store: Store, key: str, due: datetime) -> None:
        b = self.bucket(due)
        header = f"{self._root}|{b}"
        n: int = store.get(header) or 0
        store[f"{header}|{n}"] = key
        store[header] = n + 1
        if n == 0:
            buckets = list(store.get(self._root) or [])
            at = bisect.bisect_left(buckets, b)
            if at == len(buckets) or buckets[at] != b:
                buckets.insert(at, b)
                store[self._root] = buckets

    def expire(
        self,
        store: Store,
        now: datetime,
        due_of: Callable[[str], datetime | None],
        on_due: Callable[[str], None],
    ) -> None:
        """Call `on_due(key)` for every key whose due time (`due_of`, None when gone) is at or before `now`.

        Reads only buckets that start at or before `now`; a bucket with keys not yet due stays for later.
        `on_due` may `add` the key again (for a later time): that item is read in its own bucket."""
        drained: set[int] = set()
        for b in list(store.get(self._root) or []):
            if self._start(b) > now:
                break
            header = f"{self._root}|{b}"
            waiting = False
            i = 0
            while i < (store.get(header) or 0):  # re-read: on_due may add to this very bucket
                item = f"{header}|{i}"
                i += 1
                key = store.get(item)
                if key is None:
                    continue
                due = due_of(key)
                current = due is not None and self.bucket(due) == b
                if current and due is not None and due > now:
                    waiting = True
                    continue
                del store[item]
                if current:
                    on_due(key)
            if not waiting:
                store.pop(header, None)
                drained.add(b)
        if drained:
            remaining = [b for b in store.get(self._root) or [] if b not in drained or store.get(f"{self._root}|{b}")]
            if remaining:
                store[self._root] = remaining
            else:
                store.pop(self._root, None)

    def size(self, store: Store) -> int:
        """Buckets in use (for tests and metrics)."""
        return len(store.get(self._root) or [])


class RecentKeys:
    """The last `capacity` keys pushed, oldest first out: `push` returns the keys that fell off the end.

    Store layout (name `n`): `\\0n` -> [head, tail]; `\\0n|i` -> the key pushed i-th (head <= i < tail)."""

    def __init__(self, name: str, capacity: int) -> None:
        if capacity < 1:
            raise ValueError("capacity must be at least 1")
        self._root = f"{INDEX_PREFIX}{name}"
        self.capacity = capacity

    def push(self, store: Store, key: str) -> list[str]:
        head, tail = store.get(self._root) or (0, 0)
        store[f"{self._root}|{tail}"] = key
        tail += 1
        dropped: list[str] = []
        while tail - head > self.capacity:
            item = f"{self._root}|{head}"
            old = store.get(item)
            if old is not None:
                dropped.append(old)
                del store[item]
            head += 1
        store[self._root] = [head, tail]
        return dropped


class Retention:
    """Entries dropped `retention` after their last change (event time): each keeps it as `changed_at`,
    a TimeIndex finds the due ones, and the latest time dropped is kept so that a later event at or before
    it (a redelivered duplicate) can be refused with `too_late`."""

    CHANGED = "changed_at"

    def __init__(self, retention: timedelta, buckets: int = 120) -> None:
        self.retention = retention
        self._index = TimeIndex("due", max(retention / buckets, timedelta(milliseconds=1)))
        self._dropped = f"{INDEX_PREFIX}dropped-before"

    def too_late(self, store: Store, at: datetime) -> bool:
        dropped = store.get(self._dropped)
        return dropped is not None and at <= datetime.fromisoformat(dropped)

    def put(self, store: Store, key: str, value: dict[str, Any], previous: str | None, at: datetime) -> None:
        """Store `value` under `key` with its last change (`at`, or the `previous` one if later), indexed."""
        changed = at if previous is None else max(at, datetime.fromisoformat(previous))
        store[key] = {**value, self.CHANGED: changed.isoformat()}
        due = changed + self.retention
        if previous is None or self._index.bucket(due) != self._index.bucket(
            datetime.fromisoformat(previous) + self.retention
        ):
            self._index.add(store, key, due)

    def expire(self, store: Store, now: datetime) -> None:
        """Drop every entry whose last change is `retention` behind `now`."""

        def due_of(key: str) -> datetime | None:
            value = store.get(key)
            if value is None or value.get(self.CHANGED) is None:
                return None
            return datetime.fromisoformat(value[self.CHANGED]) + self.retention

        def on_due(key: str) -> None:
            changed_at = store.pop(key)[self.CHANGED]
            if not self.too_late(store, datetime.fromisoformat(changed_at)):
                store[self._dropped] = changed_at

        self._index.expire(store, now, due_of, on_due)
