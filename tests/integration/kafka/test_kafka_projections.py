"""On Kafka the projection's progress lives in the warehouse: a new warehouse is backfilled with the whole
history, `rebuild` restores identical tables, and a sink that dies mid-batch is redone without a duplicate
(every check counts rows without FINAL as well as with it)."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from agenttwin.kafka_cli import rebuild_from_kafka, sync_warehouse_from_kafka
from consumers import sink_progress
from consumers.clickhouse import ChdbWarehouse, Warehouse, qualified
from consumers.sink import MissingProjectionError, ensure_schema
from streams.kafka.naming import Naming
from streams.kafka.runner import WorkerFailedError, WorkerGroup
from streams.kafka.sink_loop import SinkLoop
from tests.integration.kafka.kafka_pipeline_support import (
    TABLES,
    Reference,
    differences,
    new_naming,
    run_on_kafka,
    table_counts,
    warehouse_for,
)
from tests.integration.kafka_broker import REPO_ROOT, unique_name
from tests.integration.warehouse_proxy import WarehouseProxy

WAIT_S = 120.0


def stop_merges(warehouse: Warehouse) -> None:
    """Keep inserted parts apart, so a duplicate row shows in a count without FINAL (no merge hides it)."""
    ensure_schema(warehouse)
    for table in TABLES:
        warehouse.execute(f"SYSTEM STOP MERGES {qualified(warehouse, table)}")


@dataclass(frozen=True)
class History:
    """The demo's events on a cluster (one topic prefix), and the warehouse that ran with the pipeline."""

    naming: Naming
    first: ChdbWarehouse


@pytest.fixture(scope="module")
def history(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[History]:
    naming = new_naming()
    with warehouse_for(chdb_root, "proj_first") as first:
        run_on_kafka(kafka_bootstrap, naming, first, reference, tmp_path_factory.mktemp("proj"))
        assert differences(reference, first) == []
        yield History(naming, first)


@pytest.mark.kafka
def test_a_new_warehouse_is_backfilled_with_the_whole_history(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, history: History
) -> None:
    with warehouse_for(chdb_root, "proj_new") as new, warehouse_for(chdb_root, "proj_other") as other:
        stop_merges(new)
        rows = sync_warehouse_from_kafka(kafka_bootstrap, new, naming=history.naming, timeout_s=WAIT_S)
        assert rows == sum(reference.counts.values())
        assert differences(reference, new) == []  # all of it, once (with and without FINAL)
        # a second new warehouse, at the same time as a sink of the first one: neither splits the other's share
        sync_warehouse_from_kafka(kafka_bootstrap, other, naming=history.naming, timeout_s=WAIT_S)
        assert differences(reference, other) == []
        assert sync_warehouse_from_kafka(kafka_bootstrap, new, naming=history.naming, timeout_s=WAIT_S) == 0
        assert table_counts(new, final=False) == table_counts(history.first, final=True)
        ids = {sink_progress.warehouse_id(w) for w in (new, other, history.first)}
        assert len(ids) == 3  # three warehouses, three consumer groups


@pytest.mark.kafka
def test_rebuild_on_kafka_restores_identical_tables(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, history: History
) -> None:
    with warehouse_for(chdb_root, "proj_rebuild") as warehouse:
        sync_warehouse_from_kafka(kafka_bootstrap, warehouse, naming=history.naming, timeout_s=WAIT_S)
        warehouse.execute(f"DROP TABLE {qualified(warehouse, 'comparisons')}")
        with pytest.raises(MissingProjectionError, match="agenttwin rebuild"):
            sync_warehouse_from_kafka(kafka_bootstrap, warehouse, naming=history.naming, timeout_s=WAIT_S)
        rows = rebuild_from_kafka(kafka_bootstrap, warehouse, naming=history.naming, timeout_s=WAIT_S)
        assert rows == sum(reference.counts.values())
        assert differences(reference, warehouse) == []
        rebuild_from_kafka(kafka_bootstrap, warehouse, naming=history.naming, timeout_s=WAIT_S)
        assert differences(reference, warehouse) == []


class Crash(BaseException):
    """The sink dying mid-batch: not a ClickHouse error it would wait out."""


class CrashingWarehouse(WarehouseProxy):
    """The real warehouse until the `crash_at`-th insert of projection rows, which never lands: always
    after a batch's begin and before its finish (the sink's own tables do not count)."""

    def __init__(self, real: Warehouse, crash_at: int) -> None:
        super().__init__(real)
        self.crash_at = crash_at
        self.inserts = 0

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        if not table.rsplit(".", 1)[-1].startswith("sink_"):
            self.inserts += 1
            if self.inserts == self.crash_at:
                raise Crash(f"insert {self.inserts} into {table}")
        self.real.insert(table, columns, rows, dedup_token)


@pytest.mark.kafka
@pytest.mark.parametrize("crash_at", [1, 7])
def test_a_sink_that_dies_mid_batch_is_redone_exactly(
    kafka_bootstrap: str, chdb_root: Path, reference: Reference, history: History, crash_at: int
) -> None:
    with warehouse_for(chdb_root, "proj_crash") as real:
        stop_merges(real)
        crashing = CrashingWarehouse(real, crash_at)
        dying = SinkLoop(kafka_bootstrap, history.naming, crashing, batch_size=40)  # small batches

        async def until_dead() -> None:
            async with WorkerGroup([dying]) as group:
                await group.wait_for(lambda: False, timeout_s=WAIT_S, what="the sink's death")

        with pytest.raises(WorkerFailedError, match="Crash"):
            asyncio.run(until_dead())
        unfinished = [p for p in sink_progress.load(real, dying.source).values() if not p.done]
        assert unfinished, "the crash left a batch begun and not finished"
        again = SinkLoop(kafka_bootstrap, history.naming, real)  # default batch size: other boundaries

        async def until_caught_up() -> None:
            async with WorkerGroup([again]) as group:
                await group.wait_for(lambda: again.caught_up, timeout_s=WAIT_S, what="caught up")

        asyncio.run(until_caught_up())
        assert differences(reference, real) == []  # each event once, with and without FINAL
        assert again.redone == len(unfinished)


@pytest.mark.kafka
def test_sql_with_a_new_data_dir_shows_the_whole_history(kafka_bootstrap: str, tmp_path: Path) -> None:
    """The CLI as a person runs it (no topic flags): evaluate into one data directory, then `agenttwin sql
    --kafka … --data-dir NEW` sees everything the first one holds, each row once. The prefix comes from the
    environment, tagged like every test topic, so the tests' broker can tell its data from a person's."""
    env = {
        **os.environ,
        "PYTHONWARNINGS": "ignore",
        "AGENTTWIN_DATA_DIR": str(tmp_path / "home"),
        "AGENTTWIN_TOPIC_PREFIX": unique_name("agenttwin-cli") + ".",
    }
    env.pop("AGENTTWIN_CLICKHOUSE_URL", None)

    def agenttwin(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "agenttwin.cli", *args, "--kafka", kafka_bootstrap],
            cwd=REPO_ROOT, env=env, capture_output=True, text=True, timeout=600,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return done.stdout

    first, new = str(tmp_path / "first"), str(tmp_path / "new")
    agenttwin("evaluate", "--baseline", "demo:1.2.4", "--candidate", "demo:1.3.0", "--data-dir", first)
    query = "SELECT '{t}', count() FROM {t}{final}"
    union = " UNION ALL ".join(query.format(t=t, final=" FINAL") for t in TABLES)
    stored = " UNION ALL ".join(query.format(t=t, final="") for t in TABLES)
    want = agenttwin("sql", f"SELECT * FROM ({union}) ORDER BY 1", "--format", "csv", "--data-dir", first)
    got = agenttwin("sql", f"SELECT * FROM ({union}) ORDER BY 1", "--format", "csv", "--data-dir", new)
    assert got == want
    counts = dict(line.split(",") for line in got.splitlines()[1:])
    assert int(counts["comparisons"]) >= 9
    assert agenttwin("sql", f"SELECT * FROM ({stored}) ORDER BY 1", "--format", "csv", "--data-dir", new) == got
    with pytest.raises(AssertionError, match="read-only"):
        agenttwin("sql", "DROP TABLE comparisons", "--data-dir", new)
