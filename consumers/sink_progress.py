"""The sink's progress, stored in the warehouse it describes (table `sink_offsets`, schemas/clickhouse/sink.sql).

The rows and the offsets that say which events the rows hold live in one place, so a new or rebuilt
warehouse starts from offset 0 and is backfilled from the topics, and two warehouses never share (and so
never split) one progress. A batch is written in three steps:

1. `begin`: its range per source partition, `[first, next)`, with done = false;
2. its rows, each insert with a dedup token derived from its offsets (consumers/sink.py);
3. `finish`: the same ranges with done = true.

A sink that finds a partition's last batch not done (it died in step 2 or 3) redoes exactly that range
first: the same events in the same groups give the same dedup tokens, so whatever part of it had landed
is not inserted again, and the tables hold each event once whether read with FINAL or without.

`source` tells sources apart: "embedded" for the embedded log, "kafka:<cluster id>" for a Kafka cluster
(topic names are the physical ones there); offsets of a wiped and re-formatted cluster are not reused.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass

from consumers.clickhouse import Warehouse, qualified, sql_literal

__all__ = ["EMBEDDED_SOURCE", "Position", "Ranges", "begin", "finish", "kafka_source", "load", "warehouse_id"]

EMBEDDED_SOURCE = "embedded"
COLUMNS = ["source", "topic", "partition", "first_offset", "next_offset", "done", "version"]
Ranges = Mapping[tuple[str, int], tuple[int, int]]  # (topic, partition) -> [first, next)


def kafka_source(cluster_id: str) -> str:
    return f"kafka:{cluster_id}"


@dataclass(frozen=True)
class Position:
    """A partition's last batch: `[first, next)`, and whether its rows are all in."""

    first: int
    next: int
    done: bool


def load(warehouse: Warehouse, source: str) -> dict[tuple[str, int], Position]:
    """Every partition's position for `source` (a partition never written is absent: start at 0)."""
    rows = warehouse.query(
        "SELECT topic, partition, argMax(first_offset, version), argMax(next_offset, version), "
        f"argMax(done, version) FROM {qualified(warehouse, 'sink_offsets')} "
        f"WHERE source = {sql_literal(source)} GROUP BY topic, partition"
    ).rows
    return {(str(t), int(p)): Position(int(f), int(n), bool(d)) for t, p, f, n, d in rows}


def begin(warehouse: Warehouse, source: str, ranges: Ranges) -> None:
    _write(warehouse, source, ranges, done=False)


def finish(warehouse: Warehouse, source: str, ranges: Ranges) -> None:
    _write(warehouse, source, ranges, done=True)


def _write(warehouse: Warehouse, source: str, ranges: Ranges, *, done: bool) -> None:
    if not ranges:
        return
    # version = 2 * next + done: a batch's finish outranks its begin, a later batch outranks both
    rows = [
        [source, topic, partition, first, nxt, done, 2 * nxt + int(done)]
        for (topic, partition), (first, nxt) in sorted(ranges.items())
    ]
    # a fresh token: sink_offsets keeps no dedup window, and every write must land
    warehouse.insert(qualified_name(warehouse, "sink_offsets"), COLUMNS, rows, dedup_token=None)


def warehouse_id(warehouse: Warehouse) -> str:
    """The warehouse's identity (created on first use; the smallest wins if two sinks raced to create one)."""
    table = qualified(warehouse, "sink_identity")
    rows = warehouse.query(f"SELECT min(warehouse_id) FROM {table} HAVING count() > 0").rows
    if rows:
        return str(rows[0][0])
    warehouse.insert(qualified_name(warehouse, "sink_identity"), ["warehouse_id"], [[uuid.uuid4().hex]], None)
    return str(warehouse.query(f"SELECT min(warehouse_id) FROM {table}").rows[0][0])


def qualified_name(warehouse: Warehouse, table: str) -> str:
    """`database.table` unquoted, as `Warehouse.insert` takes it."""
    return f"{warehouse.database}.{table}"
