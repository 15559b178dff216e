"""Drive the ClickHouse sink over the embedded log: from the warehouse's own offsets, in batches."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from consumers import sink_progress
from consumers.clickhouse import Warehouse, WarehouseError
from consumers.sink import Delivered, drop_projections, ensure_schema, sink_batch
from streams.embedded import DecodeError, EmbeddedRuntime, dead_letter
from streams.embedded_log import EmbeddedLog, LogRecord
from streams.events import Event
from streams.topics import ALL_TOPICS

SINK_GROUP = "clickhouse-sink"  # the sink's stage name in dead letters (its progress is in the warehouse)


class ProgressPastLogError(WarehouseError):
    """The warehouse's offsets are past the end of a topic: it projected other records than the log holds
    (the topics were deleted or replaced by an older copy), and events at those offsets would be skipped."""


@dataclass
class SinkStats:
    rows: int = 0
    dead_letters: int = 0


def sync(runtime: EmbeddedRuntime, warehouse: Warehouse, *, batch_size: int = 5000) -> SinkStats:
    """Project every topic's events the warehouse does not hold yet (a new warehouse: all of them).

    Each batch is recorded in the warehouse's `sink_offsets` around its insert; a batch left unfinished
    by a crash is redone first, exactly, so no row is ever inserted twice."""

    def letter(exc: DecodeError, record: LogRecord) -> int:  # its id is fixed by its offset: a redo adds none
        return runtime.publish([dead_letter(SINK_GROUP, exc.reason, str(exc), record)])

    return project_log(runtime.log, runtime.decode, warehouse, undecodable=letter, batch_size=batch_size)


def project_log(
    log: EmbeddedLog,
    decode: Callable[[LogRecord], Event],
    warehouse: Warehouse,
    *,
    undecodable: Callable[[DecodeError, LogRecord], int],
    batch_size: int = 5000,
) -> SinkStats:
    """The sink's loop over an embedded log (the writer's, or one opened read-only by a reader): from the
    warehouse's own offsets, batch by batch; `undecodable` handles a record that does not decode and says
    how many dead letters it wrote."""
    ensure_schema(warehouse)
    source = sink_progress.EMBEDDED_SOURCE
    positions = sink_progress.load(warehouse, source)
    for (topic_name, _), held in sorted(positions.items()):
        if held.next > log.end_offset(topic_name):
            raise ProgressPastLogError(
                f"the warehouse {warehouse.database} has projected topic {topic_name} up to offset "
                f"{held.next} but the topic ends at {log.end_offset(topic_name)} (the topics were "
                "replaced): run `agenttwin rebuild` to re-project them"
            )
    stats = SinkStats()
    batch: list[Delivered] = []
    ranges: dict[tuple[str, int], tuple[int, int]] = {}  # what the batch consumed, per topic: [first, next)

    def take(topic_name: str, record: LogRecord) -> None:
        try:
            batch.append(Delivered(topic_name, 0, record.offset, decode(record)))
        except DecodeError as exc:
            stats.dead_letters += undecodable(exc, record)
        first = ranges.get((topic_name, 0), (record.offset, 0))[0]
        ranges[(topic_name, 0)] = (first, record.offset + 1)

    def flush() -> None:
        if ranges:
            stats.rows += sink_batch(warehouse, source, batch, ranges)
        batch.clear()
        ranges.clear()

    # The batch a crash left unfinished first, exactly as it was begun (every range not done, together): the
    # same events in the same groups give the same dedup tokens.
    redo = {key: (p.first, p.next) for key, p in positions.items() if not p.done}
    for (topic_name, _), (first, nxt) in sorted(redo.items()):
        for record in log.read(topic_name, first):
            if record.offset >= nxt:
                break
            take(topic_name, record)
        ranges[(topic_name, 0)] = (first, nxt)
    flush()
    # Then everything new, in batches that may span topics (one begin, one lookup, one finish per batch, not
    # per topic); dead letters last, so letters written on the way are projected in this pass.
    for topic in ALL_TOPICS:
        if topic.name not in log.topics():
            continue
        position = positions.get((topic.name, 0))
        start = 0 if position is None else position.next
        for record in log.read(topic.name, start):
            take(topic.name, record)
            if sum(nxt - first for first, nxt in ranges.values()) >= batch_size:
                flush()
    flush()
    return stats


def rebuild(runtime: EmbeddedRuntime, warehouse: Warehouse) -> SinkStats:
    """Drop the projections and their offsets, then project every topic again from offset 0."""
    drop_projections(warehouse)
    return sync(runtime, warehouse)
