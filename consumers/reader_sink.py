"""Projections a reader queries while another process writes the data directory (`agenttwin sql` beside
`agenttwin ingest`).

chDB runs one process per directory, and the writer may own `<data dir>/clickhouse` (or open it at any
moment), so a reader never touches it. It projects the log — opened read-only, no lock — into a copy of
its own: `<data dir>/readers/clickhouse-<slot>`, one chDB directory per slot, each flocked by the one
process using it (`slot-<n>.lock`); concurrent readers take free slots (READER_SLOTS of them), and wait for
one when all are busy. A copy is kept between runs and brought up to date incrementally: its progress
(`progress.json`, topic -> next offset) is saved after each batch is inserted; a batch redone after a
crash carries the same offsets, so the same dedup tokens, and ReplacingMergeTree keeps one row under FINAL.
Undecodable records are skipped here: dead-lettering them is the writer's job (its own sink does it).
With `AGENTTWIN_CLICKHOUSE_URL` set, the copy is that server (its rows are the same events; FINAL keeps
one row each), with the slot's progress file beside it.
"""

from __future__ import annotations

import fcntl
import json
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from consumers.clickhouse import Warehouse, open_warehouse
from consumers.embedded_sink import SinkStats
from consumers.sink import Delivered, ensure_schema, write_batch
from streams.embedded import DecodeError
from streams.log_reader import READERS_DIR, ReadOnlyLog
from streams.topics import ALL_TOPICS

READER_SLOTS = 4
WAIT_S = 120.0
PROGRESS_FILE = "progress.json"


class ReadersBusy(Exception):
    """Every reader slot stayed taken for the whole wait."""


@dataclass
class ReaderSlot:
    number: int
    directory: Path
    fd: int

    def progress(self) -> dict[str, int]:
        path = self.directory / PROGRESS_FILE
        try:
            loaded = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):  # none yet, or torn: start again from 0 (inserts dedupe, FINAL collapses)
            return {}
        if not isinstance(loaded, dict):
            return {}
        return {str(k): int(v) for k, v in loaded.items() if isinstance(v, int) and not isinstance(v, bool) and v >= 0}

    def save(self, progress: dict[str, int]) -> None:
        path = self.directory / PROGRESS_FILE
        tmp = path.with_name(f".{PROGRESS_FILE}.tmp")
        tmp.write_text(json.dumps(progress, sort_keys=True), encoding="utf-8")
        os.replace(tmp, path)


@contextmanager
def reader_slot(data_dir: Path, *, wait_s: float = WAIT_S, poll_s: float = 0.2) -> Iterator[ReaderSlot]:
    """The first free slot under `<data dir>/readers` (flocked until the block ends)."""
    root = Path(data_dir) / READERS_DIR
    root.mkdir(parents=True, exist_ok=True)
    deadline = time.monotonic() + wait_s
    while True:
        for number in range(READER_SLOTS):
            fd = os.open(root / f"slot-{number}.lock", os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                os.close(fd)
                continue
            directory = root / f"clickhouse-{number}"
            directory.mkdir(exist_ok=True)
            try:
                yield ReaderSlot(number, directory, fd)
            finally:
                os.close(fd)  # releases the flock
            return
        if time.monotonic() >= deadline:
            raise ReadersBusy(f"all {READER_SLOTS} reader slots of {root} stayed busy for {wait_s:g} s")
        time.sleep(poll_s)


def sync_read_only(reader: ReadOnlyLog, warehouse: Warehouse, slot: ReaderSlot, *, batch_size: int = 5000) -> SinkStats:
    """Project what the slot's copy does not hold yet; save its progress after each inserted batch."""
    ensure_schema(warehouse)
    progress = slot.progress()
    stats = SinkStats()
    log = reader.log
    for topic in ALL_TOPICS:
        if topic.name not in log.topics():
            continue
        start = progress.get(topic.name, 0)
        if start > log.end_offset(topic.name):  # a copy ahead of its log (the log was replaced): start again
            start = 0
        batch: list[Delivered] = []
        end = start
        for record in log.read(topic.name, start):
            end = record.offset + 1
            try:
                batch.append(Delivered(topic.name, 0, record.offset, reader.decode(record)))
            except DecodeError:
                stats.dead_letters += 1  # counted, not written: the writer's sink dead-letters it
            if len(batch) >= batch_size:
                stats.rows += write_batch(warehouse, batch)
                progress[topic.name] = end
                slot.save(progress)
                batch = []
        if batch:
            stats.rows += write_batch(warehouse, batch)
        if end > start:
            progress[topic.name] = end
            slot.save(progress)
    return stats


@contextmanager
def reader_warehouse(data_dir: Path, clickhouse_url: str | None) -> Iterator[Warehouse]:
    """A warehouse holding every event of the data directory's log, for a reader: its own up-to-date copy."""
    with reader_slot(data_dir) as slot, ReadOnlyLog(data_dir) as reader:
        warehouse = open_warehouse(clickhouse_url, slot.directory)
        try:
            sync_read_only(reader, warehouse, slot)
            yield warehouse
        finally:
            warehouse.close()
