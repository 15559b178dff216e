"""Drive the ClickHouse sink over the embedded log: from the sink's committed offsets, in batches."""

from __future__ import annotations

from dataclasses import dataclass

from consumers.clickhouse import Warehouse
from consumers.sink import Delivered, ensure_schema, write_batch
from streams.embedded import DecodeError, EmbeddedRuntime, dead_letter
from streams.topics import ALL_TOPICS

SINK_GROUP = "clickhouse-sink"


@dataclass
class SinkStats:
    rows: int = 0
    dead_letters: int = 0


def sync(runtime: EmbeddedRuntime, warehouse: Warehouse, *, batch_size: int = 5000) -> SinkStats:
    """Project every topic's new events into ClickHouse; commit each batch only after it is inserted."""
    ensure_schema(warehouse)
    stats = SinkStats()
    for topic in ALL_TOPICS:  # dead-letters last, so letters written below are projected in this pass
        if topic.name not in runtime.log.topics():
            continue
        batch: list[Delivered] = []
        start = next_offset = runtime.log.committed(SINK_GROUP, topic.name)
        for record in runtime.log.read(topic.name, start):
            next_offset = record.offset + 1
            try:
                batch.append(Delivered(topic.name, 0, record.offset, runtime.decode(record)))
            except DecodeError as exc:
                stats.dead_letters += runtime.publish([dead_letter(SINK_GROUP, exc.reason, str(exc), record)])
            if len(batch) >= batch_size:
                stats.rows += write_batch(warehouse, batch)
                runtime.log.commit(SINK_GROUP, topic.name, record.offset + 1)
                batch = []
        if batch:
            stats.rows += write_batch(warehouse, batch)
        if next_offset > start:
            runtime.log.commit(SINK_GROUP, topic.name, next_offset)
    return stats
