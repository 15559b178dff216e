"""Checkpoints of the embedded runtime: a stateful processor's store and input offsets, committed together.

One SQLite database per consumer group, `<data dir>/checkpoints/<group>.sqlite`:

    kv(key, value, crc)   the store: one row per key, values in the changelog codec (store_codec), CRC-32 each
    meta(doc, crc)        format, code tag, group, input offsets, clock, row count and digest; CRC-32 of doc

A commit writes only the keys changed since the previous commit, with the offsets, in one transaction,
after the outputs those changes stand for are durable in the log. A process that dies rolls back to the
previous checkpoint and the events after it are handled again; their outputs dedupe by event id. Commits
are not fsync'ed (synchronous=OFF): the log they derive from is, so a checkpoint lost or torn by a power
failure costs a rebuild, never a result, and the checks below catch a torn one. Reads go to disk on first
use and are cached until the next commit, so memory holds what a command touched, not the whole store.
A long-running processor (the live joins beside the receiver) gives a `budget`: after each commit the
`budget` keys written or read most recently stay in memory, the rest are on disk only (docs/guides/live-join-state.md).

Trusted only when its format and code tag are this code's, the meta row's CRC matches, and the row count
and an order-independent digest of every (key, CRC) match the meta row; each value's CRC is checked when
it is read. Otherwise `CheckpointCorrupt`: the runtime moves the files aside and rebuilds from offset 0.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import sqlite3
import zlib
from collections.abc import Iterator, MutableMapping
from datetime import datetime
from pathlib import Path
from typing import Any

from streams._errors import StreamsError
from streams.kafka.store_codec import dumps, loads

FORMAT = "agenttwin-checkpoint/1"
# Store keys a long-running join keeps in memory across commits; the rest of its state is on disk. An
# outcome-join trace takes about two keys (its entry, its time-index item) and a few KB in memory. The live
# joins beside the receiver use it per join (producers/otlp/live.py), the Kafka batch worker over all its
# partitions (streams/kafka/batch_worker.py); docs/guides/live-join-state.md, docs/guides/kafka-workers.md.
STATE_BUDGET = 50_000
_ABSENT = object()  # cached: the key is not in the store

_log = logging.getLogger(__name__)


class CheckpointCorrupt(StreamsError):
    """A checkpoint that cannot be trusted: damaged, partial, or written by another version of the code."""


def _row_hash(key: bytes, crc: int) -> int:
    return int.from_bytes(hashlib.blake2b(key + crc.to_bytes(4, "big"), digest_size=8).digest(), "big")


class Checkpoint(MutableMapping[str, Any]):
    """A processor's store backed by one checkpoint file; `commit` makes the changes and offsets durable."""

    def __init__(self, path: Path, group: str, tag: str, *, budget: int | None = None) -> None:
        self.path = path
        self.budget = budget  # keys kept in memory across commits (None: none, as for a batch command)
        self.group = group
        self.tag = tag
        fresh = not path.exists()
        path.parent.mkdir(parents=True, exist_ok=True)
        self._db = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
        try:
            self._db.execute("PRAGMA synchronous=OFF")  # see the module docstring: the log is what is durable
            if fresh:
                self._create()
            self.offsets, self.clock, self._rows, self._digest = self._validate()
        except sqlite3.DatabaseError as exc:
            self._db.close()
            raise CheckpointCorrupt(f"{path}: unreadable checkpoint ({exc})") from exc
        except BaseException:
            self._db.close()
            raise
        self.replaced: Path | None = None  # where an untrusted predecessor was set aside
        self._cache: dict[str, Any] = {}
        self._crcs: dict[str, int | None] = {}  # CRC of each key's stored row, as last read (None: no row)
        self._dirty: set[str] = set()

    # -- opening -------------------------------------------------------------------------------------

    def _create(self) -> None:
        self._db.execute("BEGIN IMMEDIATE")
        self._db.execute("CREATE TABLE kv (key BLOB PRIMARY KEY, value BLOB NOT NULL, crc INTEGER NOT NULL)")
        self._db.execute("CREATE TABLE meta (id INTEGER PRIMARY KEY CHECK (id = 1), doc TEXT NOT NULL, crc INTEGER)")
        self._write_meta({}, None, 0, 0)
        self._db.execute("COMMIT")

    def _write_meta(self, offsets: dict[str, int], clock: datetime | None, rows: int, digest: int) -> None:
        doc = json.dumps(
            {
                "format": FORMAT,
                "tag": self.tag,
                "group": self.group,
                "offsets": offsets,
                "clock": None if clock is None else clock.isoformat(),
                "rows": rows,
                "digest": f"{digest:016x}",
            },
            sort_keys=True,
        )
        self._db.execute("INSERT OR REPLACE INTO meta (id, doc, crc) VALUES (1, ?, ?)", (doc, zlib.crc32(doc.encode())))

    def _validate(self) -> tuple[dict[str, int], datetime | None, int, int]:
        row = self._db.execute("SELECT doc, crc FROM meta WHERE id = 1").fetchone()
        if row is None:
            raise CheckpointCorrupt(f"{self.path}: no meta row")
        doc, crc = row
        if zlib.crc32(doc.encode()) != crc:
            raise CheckpointCorrupt(f"{self.path}: meta row fails its CRC")
        meta = json.loads(doc)
        if meta.get("format") != FORMAT or meta.get("group") != self.group:
            raise CheckpointCorrupt(f"{self.path}: format {meta.get('format')!r} of group {meta.get('group')!r}")
        if meta.get("tag") != self.tag:
            raise CheckpointCorrupt(f"{self.path}: written by another version of the processor's code")
        rows, digest = 0, 0
        for key, crc_ in self._db.execute("SELECT key, crc FROM kv"):
            rows += 1
            digest ^= _row_hash(bytes(key), crc_)
        if rows != meta["rows"] or f"{digest:016x}" != meta["digest"]:
            raise CheckpointCorrupt(
                f"{self.path}: {rows} rows with digest {digest:016x}, expected {meta['rows']} with {meta['digest']}"
            )
        clock = None if meta["clock"] is None else datetime.fromisoformat(meta["clock"])
        offsets = {str(k): int(v) for k, v in meta["offsets"].items()}
        return offsets, clock, rows, digest

    # -- the mapping ----------------------------------------------------------------------------------

    def __getitem__(self, key: str) -> Any:
        value = self._cache[key] if key in self._cache else self._load(key)
        if value is _ABSENT:
            raise KeyError(key)
        return value

    def _load(self, key: str) -> Any:
        try:
            row = self._db.execute("SELECT value, crc FROM kv WHERE key = ?", (key.encode(),)).fetchone()
        except sqlite3.DatabaseError as exc:
            raise CheckpointCorrupt(f"{self.path}: unreadable row ({exc})") from exc
        if row is None:
            self._crcs[key] = None
            self._cache[key] = _ABSENT
            return _ABSENT
        data, crc = bytes(row[0]), row[1]
        if zlib.crc32(data) != crc:
            raise CheckpointCorrupt(f"{self.path}: the value of key {key!r} fails its CRC")
        try:
            value = loads(data)
        except Exception as exc:  # a CRC-valid row that still does not decode: never trusted
            raise CheckpointCorrupt(f"{self.path}: the value of key {key!r} does not decode ({exc})") from exc
        self._crcs[key] = crc
        self._cache[key] = value
        return value

    def __setitem__(self, key: str, value: Any) -> None:
        self._cache.pop(key, None)  # the cache's order is the order of last change: trimmed oldest first
        self._cache[key] = value
        self._dirty.add(key)

    def __delitem__(self, key: str) -> None:
        if key not in self:
            raise KeyError(key)
        self._cache.pop(key, None)
        self._cache[key] = _ABSENT
        self._dirty.add(key)

    def __iter__(self) -> Iterator[str]:
        stored = [bytes(k).decode() for (k,) in self._db.execute("SELECT key FROM kv ORDER BY key")]
        for key in stored:
            if self._cache.get(key) is not _ABSENT:
                yield key
        listed = set(stored)
        for key, value in list(self._cache.items()):
            if key not in listed and value is not _ABSENT:
                yield key

    def __len__(self) -> int:
        return sum(1 for _ in self)

    # -- commit ---------------------------------------------------------------------------------------

    @property
    def pending(self) -> int:
        """Keys changed since the last commit."""
        return len(self._dirty)

    def commit(self, offsets: dict[str, int], clock: datetime | None) -> None:
        """Write the changed keys, the offsets and the clock in one transaction; then forget the cache."""
        if not self._dirty and offsets == self.offsets and clock == self.clock:
            self._trim()
            return
        rows, digest = self._rows, self._digest
        written: dict[str, int | None] = {}  # the CRC each changed key's row has now (None: no row)
        self._db.execute("BEGIN IMMEDIATE")
        try:
            for key in sorted(self._dirty):
                raw = key.encode()
                old = self._crcs[key] if key in self._crcs else self._stored_crc(raw)
                if old is not None:
                    rows, digest = rows - 1, digest ^ _row_hash(raw, old)
                value = self._cache[key]
                if value is _ABSENT:
                    if old is not None:
                        self._db.execute("DELETE FROM kv WHERE key = ?", (raw,))
                    written[key] = None
                    continue
                data = dumps(value)
                crc = zlib.crc32(data)
                self._db.execute("INSERT OR REPLACE INTO kv (key, value, crc) VALUES (?, ?, ?)", (raw, data, crc))
                rows, digest = rows + 1, digest ^ _row_hash(raw, crc)
                written[key] = crc
            self._write_meta(dict(offsets), clock, rows, digest)
            self._db.execute("COMMIT")
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._rows, self._digest = rows, digest
        self.offsets, self.clock = dict(offsets), clock
        self._dirty.clear()
        self._crcs.update(written)
        self._trim()

    def _trim(self) -> None:
        """After a commit (nothing dirty): keep the `budget` most recently changed keys, forget the rest."""
        if not self.budget:
            self._cache.clear()
            self._crcs.clear()
            return
        excess = len(self._cache) - self.budget
        if excess <= 0:
            return
        for key in list(itertools.islice(self._cache, excess)):
            del self._cache[key]
            self._crcs.pop(key, None)

    @property
    def in_memory(self) -> int:
        """Keys whose value (or absence) is held in memory."""
        return len(self._cache)

    def _stored_crc(self, raw: bytes) -> int | None:
        row = self._db.execute("SELECT crc FROM kv WHERE key = ?", (raw,)).fetchone()
        return None if row is None else int(row[0])

    def discard(self) -> None:
        """Forget the changes since the last commit (the next reads see the checkpoint again)."""
        self._dirty.clear()
        self._cache.clear()
        self._crcs.clear()

    def close(self) -> None:
        self._db.close()


def open_checkpoint(directory: Path, group: str, tag: str, *, budget: int | None = None) -> Checkpoint:
    """The group's checkpoint; one that cannot be trusted is moved aside (with a warning) for a fresh one."""
    path = directory / f"{group}.sqlite"
    try:
        return Checkpoint(path, group, tag, budget=budget)
    except CheckpointCorrupt as exc:
        aside = set_aside(path)
        _log.warning("%s; rebuilding %s from offset 0 (the old file is kept as %s)", exc, group, aside)
        checkpoint = Checkpoint(path, group, tag, budget=budget)
        checkpoint.replaced = aside
        return checkpoint


def set_aside(path: Path) -> Path:
    """Rename a checkpoint and its journal files to `<name>.bad-N` so a fresh one can take its place."""
    n = 1
    while path.with_name(f"{path.name}.bad-{n}").exists():
        n += 1
    target = path.with_name(f"{path.name}.bad-{n}")
    for suffix in ("", "-journal", "-wal", "-shm"):
        side = path.with_name(path.name + suffix)
        if side.exists():
            side.replace(target.with_name(target.name + suffix))
    return target
