"""The ClickHouse sink: events -> projection tables, batched, with insert dedup tokens.

At-least-once delivery becomes exactly-once rows: a batch's token is derived from the offsets it
covers (`<topic>-<partition>-<first>-<last>-<table>`), so a retried batch is dropped by ClickHouse,
and the tables are ReplacingMergeTree keyed by the event's identity, so a replayed event collapses
under FINAL. Offsets are committed only after the insert returned (the caller's job).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

from consumers.clickhouse import Warehouse
from consumers.projections import TABLE_BY_EVENT, columns_of, ddl, row_of
from streams.events import Event


@dataclass(frozen=True)
class Delivered:
    """One decoded event and where it came from."""

    topic: str
    partition: int
    offset: int
    event: Event


def ensure_schema(warehouse: Warehouse) -> None:
    warehouse.execute(ddl())


def write_batch(warehouse: Warehouse, batch: Sequence[Delivered]) -> int:
    """Insert one batch (any mix of topics and event types); returns the rows sent."""
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
