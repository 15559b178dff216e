"""The ClickHouse sink: events -> projection tables, batched, with insert dedup tokens.

At-least-once delivery becomes exactly-once rows: a batch's token is derived from the offsets it
covers (`<topic>-<partition>-<first>-<last>-<table>`), so a retried batch is dropped by ClickHouse,
and the tables are ReplacingMergeTree keyed by the event's identity, so a replayed event collapses
under FINAL. The sink's progress is stored in the warehouse itself, around each batch
(consumers/sink_progress.py), so a batch cut short is redone with the very same tokens.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from consumers import sink_progress
from consumers.clickhouse import Warehouse, WarehouseError, qualified, sql_literal
from consumers.projections import SINK_TABLES, TABLE_BY_EVENT, columns_of, ddl, row_of, view_names
from streams.events import Event


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
    would stay empty for good (its events count as written): that is refused, `agenttwin rebuild` fixes it."""
    present = _existing(warehouse)
    missing = sorted(set(TABLE_BY_EVENT.values()) - present)
    if missing and "sink_offsets" in present:
        written = warehouse.query(f"SELECT count() FROM {qualified(warehouse, 'sink_offsets')}").rows[0][0]
        if int(written):
            raise MissingProjectionError(
                f"the warehouse {warehouse.database} lacks projection table(s) {', '.join(missing)} although "
                "its sink has written their events: run `agenttwin rebuild` to re-project them from the topics"
            )
    warehouse.execute(ddl(warehouse.database))


def drop_projections(warehouse: Warehouse) -> None:
    """Drop every projection table, view and the sink's offsets (not the warehouse's identity)."""
    for view in view_names():
        warehouse.execute(f"DROP VIEW IF EXISTS {qualified(warehouse, view)}")
    for table in [*sorted(TABLE_BY_EVENT.values()), SINK_TABLES[0]]:
        warehouse.execute(f"DROP TABLE IF EXISTS {qualified(warehouse, table)} SYNC")


def _existing(warehouse: Warehouse) -> set[str]:
    rows = warehouse.query(f"SELECT name FROM system.tables WHERE database = {sql_literal(warehouse.database)}").rows
    return {str(row[0]) for row in rows}


def write_batch(warehouse: Warehouse, batch: Sequence[Delivered]) -> int:
    """Insert one batch's rows (any mix of topics and event types); returns the rows sent."""
    groups: dict[tuple[str, int, type[Event]], list[Delivered]] = defaultdict(list)
    for item in batch:
        groups[(item.topic, item.partition, type(item.event))].append(item)
    sent = 0
    for (topic, partition, event_type), items in sorted(
        groups.items(), key=lambda kv: (kv[0][0], kv[0][1], kv[0][2].__name__)
    ):
        table = TABLE_BY_EVENT[event_type]
        first, last = min(i.offset for i in items), max(i.offset for i in items)
        token = f"{topic}-{partition}-{first}-{last}-{table}"
        warehouse.insert(table, columns_of(event_type), [row_of(i.event) for i in items], dedup_token=token)
        sent += len(items)
    return sent


def sink_batch(warehouse: Warehouse, source: str, batch: Sequence[Delivered], ranges: sink_progress.Ranges) -> int:
    """A batch and its progress: begin its ranges, insert its rows, finish its ranges; returns the rows sent.

    `ranges` covers every record the batch consumed (dead-lettered ones too), per source partition."""
    sink_progress.begin(warehouse, source, ranges)
    sent = write_batch(warehouse, batch)
    sink_progress.finish(warehouse, source, ranges)
    return sent
