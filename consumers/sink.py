"""The ClickHouse sink: events -> projection tables, batched, with insert dedup tokens.

At-least-once delivery becomes exactly-once rows: a batch's token is derived from the offsets it
covers (`<topic>-<partition>-<first>-<last>-<table>`), so a retried batch is dropped by ClickHouse.
An event that reached its topic twice (at two offsets: a worker killed between writing its outputs and
recording it writes them again) is recognised by its id and row digest, kept in `sink_events`, and
not inserted again; the tables are ReplacingMergeTree keyed by the event's identity besides. So every
table holds each event once, read with FINAL or without. The sink's progress is stored in the warehouse
itself, around each batch (consumers/sink_progress.py), so a batch cut short is redone with the very
same tokens and the very same rows.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from consumers import sink_progress
from consumers.clickhouse import Warehouse, WarehouseError, qualified, split_sql_statements, sql_literal
from consumers.projections import (
    SINK_TABLES,
    TABLE_BY_EVENT,
    columns_of,
    created_names,
    ddl,
    ddl_digest,
    row_of,
    view_names,
)
from streams.events import Event

EVENTS_COLUMNS = ["projection", "event_id", "digest"]
LOOKUP_CHUNK = 1000


@dataclass(frozen=True)
class Delivered:
    """One decoded event and where it came from."""

    topic: str
    partition: int
    offset: int
    event: Event


class MissingProjectionError(WarehouseError):
    """A projection table is gone while the sink's progress says its rows were written."""


def ensure_schema(warehouse: Warehouse) -> None:
    """Create whatever is missing. A projection table missing from a warehouse whose sink has progress
    would stay empty for good (its events count as written): that is refused, `agenttwin rebuild` fixes it.

    The DDL runs only when this warehouse lacks a table or view it creates, or the digest of the DDL applied
    last (`sink_schema`) is not this DDL's: an upgraded DDL (new columns, replaced views) is still applied."""
    present = _existing(warehouse)
    digest = ddl_digest()
    if created_names() <= present and _applied(warehouse, digest):
        return
    missing = sorted(set(TABLE_BY_EVENT.values()) - present)
    if missing and "sink_offsets" in present:
        # only a table whose topic the sink has read is lost; one of a newer event type is simply new
        # (topics are stored with their Kafka prefix, and no topic's name ends another's)
        topics = sorted({e.TOPIC for e, table in TABLE_BY_EVENT.items() if table in missing})
        read = " OR ".join(f"endsWith(topic, {sql_literal(t)})" for t in topics)
        written = warehouse.query(f"SELECT count() FROM {qualified(warehouse, 'sink_offsets')} WHERE {read}").rows[0][0]
        if int(written):
            raise MissingProjectionError(
                f"the warehouse {warehouse.database} lacks projection table(s) {', '.join(missing)} although "
                "its sink has written their events: run `agenttwin rebuild` to re-project them from the topics"
            )
    warehouse.execute(";\n".join(s for s in split_sql_statements(ddl(warehouse.database)) if _needed(s, present)))
    # recorded after the DDL ran: one cut short is run again on the next pass
    warehouse.insert(sink_progress.qualified_name(warehouse, "sink_schema"), ["ddl_sha256"], [[digest]], None)


_ADD_COLUMN = re.compile(r"^\s*ALTER TABLE `[^`]+`\.`(\w+)` ADD COLUMN IF NOT EXISTS ", re.MULTILINE)


def _needed(statement: str, present: set[str]) -> bool:
    """False for an upgrade that adds a column to a table this same DDL is about to create (with it)."""
    match = _ADD_COLUMN.search(re.sub(r"--[^\n]*", "", statement))
    return match is None or match.group(1) in present


def _applied(warehouse: Warehouse, digest: str) -> bool:
    table = qualified(warehouse, "sink_schema")
    rows = warehouse.query(f"SELECT count() FROM {table} WHERE ddl_sha256 = {sql_literal(digest)}").rows
    return bool(int(rows[0][0]))


def drop_projections(warehouse: Warehouse) -> None:
    """Drop every projection table, view and the sink's record of them (offsets, the events held), not the
    warehouse's identity."""
    for view in view_names():
        warehouse.execute(f"DROP VIEW IF EXISTS {qualified(warehouse, view)}")
    for table in [*sorted(TABLE_BY_EVENT.values()), *(t for t in SINK_TABLES if t != "sink_identity")]:
        warehouse.execute(f"DROP TABLE IF EXISTS {qualified(warehouse, table)} SYNC")


def _existing(warehouse: Warehouse) -> set[str]:
    rows = warehouse.query(f"SELECT name FROM system.tables WHERE database = {sql_literal(warehouse.database)}").rows
    return {str(row[0]) for row in rows}


def write_batch(warehouse: Warehouse, batch: Sequence[Delivered]) -> int:
    """Insert one batch's rows (any mix of topics and event types), leaving out every event whose identical
    copy its table already holds (or that comes twice in the batch); returns the rows inserted.

    The rows go first, one insert per topic, partition and table, then their ids and digests (one insert):
    a batch cut short anywhere is redone with the same rows under the same tokens."""
    groups: dict[tuple[str, int, type[Event]], list[Delivered]] = defaultdict(list)
    for item in batch:
        groups[(item.topic, item.partition, type(item.event))].append(item)
    held = _held(warehouse, {(TABLE_BY_EVENT[type(i.event)], i.event.event_id) for i in batch})
    tokens: list[str] = []
    recorded: list[list[str]] = []
    for (topic, partition, event_type), items in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2].__name__)
    ):
        table = TABLE_BY_EVENT[event_type]
        first, last = min(i.offset for i in items), max(i.offset for i in items)
        token = f"{topic}-{partition}-{first}-{last}-{table}"
        rows = []
        for item in items:
            row = row_of(item.event)
            digest = row_digest(row)
            if held.get((table, item.event.event_id)) == digest:
                continue  # this very event is in the table already
            held[(table, item.event.event_id)] = digest
            rows.append(row)
            recorded.append([table, item.event.event_id, digest])
        if rows:
            warehouse.insert(table, columns_of(event_type), rows, dedup_token=token)
            tokens.append(token)
    if recorded:
        token = "sink-events-" + hashlib.sha256("|".join(tokens).encode()).hexdigest()
        warehouse.insert(sink_progress.qualified_name(warehouse, "sink_events"), EVENTS_COLUMNS, recorded, token)
    return len(recorded)


def row_digest(row: Sequence[Any]) -> str:
    """A digest of a row's values (row_of): equal for two copies of one event, different once it changed."""
    return hashlib.blake2b(json.dumps(row, default=str, ensure_ascii=False).encode(), digest_size=16).hexdigest()


def _held(warehouse: Warehouse, keys: set[tuple[str, str]]) -> dict[tuple[str, str], str]:
    """(table, event id) -> the digest of the row the table holds for it, for those of `keys` it holds.

    One lookup for every table of the batch (per LOOKUP_CHUNK keys): a query costs chDB milliseconds."""
    held: dict[tuple[str, str], str] = {}
    ordered = sorted(keys)
    for start in range(0, len(ordered), LOOKUP_CHUNK):  # a query stays far below max_query_size
        pairs = [f"({sql_literal(t)}, {sql_literal(e)})" for t, e in ordered[start : start + LOOKUP_CHUNK]]
        chunk = ", ".join(pairs * 2 if len(pairs) == 1 else pairs)  # `IN ((a, b))` would read as `IN (a, b)`
        rows = warehouse.query(
            f"SELECT projection, event_id, digest FROM {qualified(warehouse, 'sink_events')} FINAL "
            f"WHERE (projection, event_id) IN ({chunk})"
        ).rows
        held.update({(str(table), str(event_id)): str(digest) for table, event_id, digest in rows})
    return held


def sink_batch(warehouse: Warehouse, source: str, batch: Sequence[Delivered], ranges: sink_progress.Ranges) -> int:
    """A batch and its progress: begin its ranges, insert its rows, finish its ranges; returns the rows sent.

    `ranges` covers every record the batch consumed (dead-lettered ones too), per source partition."""
    sink_progress.begin(warehouse, source, ranges)
    sent = write_batch(warehouse, batch)
    sink_progress.finish(warehouse, source, ranges)
    return sent
