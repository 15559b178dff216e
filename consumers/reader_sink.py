"""Projections a reader queries while another process writes the data directory (`agenttwin sql` beside
`agenttwin ingest`).

chDB runs one process per directory, and the writer may own `<data dir>/clickhouse` (or open it at any
moment), so a reader never touches it. It projects the log — opened read-only, no lock — into a copy of
its own: `<data dir>/readers/clickhouse-<slot>`, one chDB directory per slot, each flocked by the one
process using it (`slot-<n>.lock`); concurrent readers take free slots (READER_SLOTS of them), and wait for
one when all are busy. A copy is a warehouse like any other: the sink's loop (consumers/embedded_sink.py)
brings it up to date from the offsets stored in it (`sink_offsets`), a batch cut short is redone exactly,
and its statements name their database. Undecodable records are skipped here: dead-lettering them is the
writer's job (its own sink does it). A copy whose tables no longer match its offsets (a newer version's
table, a table dropped by hand, offsets past the end of topics that were replaced) is re-projected from
offset 0: it is a cache, nothing else reads it.
With `AGENTTWIN_CLICKHOUSE_URL` naming a server, there is no copy: the reader brings that server's database
up to date from the offsets stored there (shared with every sink of that warehouse) and queries it.
"""

from __future__ import annotations

import fcntl
import os
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from consumers.clickhouse import Warehouse, open_warehouse, resolve_chdb_path
from consumers.embedded_sink import ProgressPastLogError, SinkStats, project_log
from consumers.sink import MissingProjectionError, drop_projections
from streams.embedded import DecodeError
from streams.embedded_log import LogRecord
from streams.log_reader import READERS_DIR, ReadOnlyLog

READER_SLOTS = 4
WAIT_S = 120.0


class ReadersBusy(Exception):
    """Every reader slot stayed taken for the whole wait."""


@dataclass(frozen=True)
class ReaderSlot:
    number: int
    directory: Path
    fd: int


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


def sync_read_only(
    reader: ReadOnlyLog, warehouse: Warehouse, *, own_copy: bool = True, batch_size: int = 5000
) -> SinkStats:
    """Project what the copy does not hold yet (its progress is in the copy); `dead_letters` counts the
    records skipped as undecodable, not letters written. Only a reader's own copy is ever re-projected."""

    def skip(exc: DecodeError, record: LogRecord) -> int:
        return 1

    try:
        return project_log(reader.log, reader.decode, warehouse, undecodable=skip, batch_size=batch_size)
    except (MissingProjectionError, ProgressPastLogError):
        if not own_copy:  # a server's projections are everyone's: `agenttwin rebuild` is the owner's call
            raise
        drop_projections(warehouse)
        return project_log(reader.log, reader.decode, warehouse, undecodable=skip, batch_size=batch_size)


@contextmanager
def reader_warehouse(data_dir: Path, clickhouse_url: str | None) -> Iterator[Warehouse]:
    """A warehouse holding every event of the data directory's log, for a reader: its own up-to-date copy
    (chDB in the slot's directory, whatever chDB path the setting names), or the configured server."""
    own_copy = resolve_chdb_path(clickhouse_url, Path(data_dir)) is not None
    with reader_slot(data_dir) as slot, ReadOnlyLog(data_dir) as reader:
        warehouse = open_warehouse(None if own_copy else clickhouse_url, slot.directory)
        try:
            sync_read_only(reader, warehouse, own_copy=own_copy)
            yield warehouse
        finally:
            warehouse.close()
