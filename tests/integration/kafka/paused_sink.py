"""`python -m tests.integration.kafka.paused_sink --kafka B --topic-prefix P --state DIR`: the ClickHouse sink
that `agenttwin worker sink` runs (the same SinkLoop on the same chDB warehouse of AGENTTWIN_DATA_DIR) that
stops dead in the middle of a batch, so that a SIGKILL lands exactly there.

On start it writes DIR/group (its logical consumer group). Once a batch is finished (in the warehouse and
committed), the next batch with two groups of rows or more is cut: its start is in the warehouse
(`sink_offsets`, not done) and its first group of rows inserted; before its second group the sink thread
writes DIR/paused and blocks for good.
"""

from __future__ import annotations

import argparse
import asyncio
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from agenttwin.settings import load_settings
from consumers import sink_progress
from consumers.clickhouse import Warehouse, open_warehouse
from consumers.embedded_sink import SINK_GROUP
from consumers.projections import TABLE_BY_EVENT
from streams.kafka.naming import Naming
from streams.kafka.runner import WorkerGroup
from streams.kafka.sink_loop import SinkLoop
from tests.integration.kafka.kafka_pipeline_support import merges_off
from tests.integration.warehouse_proxy import WarehouseProxy

PROJECTIONS = frozenset(TABLE_BY_EVENT.values())


class PausingWarehouse(WarehouseProxy):
    """The real warehouse, except that the second projection insert of a batch that follows a finished batch
    never happens (nor returns)."""

    def __init__(self, real: Warehouse, state: Path) -> None:
        super().__init__(real)
        self.state = state
        self.finished = 0  # batches whose end is in the warehouse
        self.inserts_in_batch = 0

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        name = table.rpartition(".")[2]
        if name == "sink_offsets":  # a batch begins (done = false) or ends (done = true)
            self.inserts_in_batch = 0
            self.finished += bool(rows[0][sink_progress.COLUMNS.index("done")])
        elif name in PROJECTIONS:
            self.inserts_in_batch += 1
            if self.inserts_in_batch == 2 and self.finished:
                write(self.state / "paused", "")
                threading.Event().wait()  # until SIGKILL
        self.real.insert(table, columns, rows, dedup_token)


def write(path: Path, text: str) -> None:
    """Whole or absent for whoever waits for it."""
    ready = path.with_suffix(".tmp")
    ready.write_text(text)
    ready.replace(path)


async def serve(sink: SinkLoop) -> None:
    async with WorkerGroup([sink]) as group:
        await group.run_until_stopped(asyncio.Event())


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--kafka", required=True)
    parser.add_argument("--topic-prefix", required=True)
    parser.add_argument("--state", required=True, type=Path)
    parser.add_argument("--log-level", default="INFO")
    args = parser.parse_args()
    settings = load_settings()
    with open_warehouse(settings.clickhouse_url, settings.resolved_data_dir) as real:
        merges_off(real)  # the restarted sink works on the same tables: a row it inserts twice stays visible
        write(args.state / "group", f"{SINK_GROUP}-{sink_progress.warehouse_id(real)}")  # the sink's, see _identify
        asyncio.run(serve(SinkLoop(args.kafka, Naming(args.topic_prefix), PausingWarehouse(real, args.state))))


if __name__ == "__main__":
    main()
