"""The embedded sink against real chDB: progress kept in the warehouse, exact redo of a batch cut short,
no duplicate rows (counted with and without FINAL), and no dependence on a session's current database."""

from __future__ import annotations

import dataclasses
import random
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from agenttwin.pipeline import evaluation_request, judge_refiner, processors
from agenttwin.settings import Settings
from consumers import sink_progress
from consumers.clickhouse import ChdbWarehouse, QueryResult, Warehouse, qualified, sql_literal
from consumers.embedded_sink import rebuild, sync
from consumers.projections import TABLE_BY_EVENT, snapshot
from consumers.sink import Delivered, MissingProjectionError, ensure_schema, write_batch
from streams.embedded import EmbeddedRuntime
from streams.events import ComparisonMade
from streams.topics import ALL_TOPICS
from tests.integration.warehouse_proxy import WarehouseProxy

TABLES = sorted(TABLE_BY_EVENT.values())


@pytest.fixture(scope="module")
def chdb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("sink-chdb")


@pytest.fixture(scope="module")
def demo_log(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The demo's events (1.3.0 vs 1.2.4, seed 42) on the embedded log; nothing projected yet."""
    data_dir = tmp_path_factory.mktemp("sink-log")
    request = evaluation_request(
        "demo:1.2.4", "demo:1.3.0", suite=["demo"], twin=None, seed=42, evaluation_id=None, evaluator_version="1.1.0"
    )
    with EmbeddedRuntime(data_dir) as runtime:
        runtime.publish([request])
        runtime.run(processors(["1.1.0"], judge_refiner(Settings())))
    return data_dir


_counter = iter(range(1_000_000))


def _database(label: str) -> str:
    return f"{label}_{time.monotonic_ns()}_{next(_counter)}"


@pytest.fixture
def warehouse(chdb_dir: Path) -> Iterator[ChdbWarehouse]:
    with ChdbWarehouse(chdb_dir, _database("sink")) as wh:
        try:
            yield wh
        finally:
            wh.execute(f"DROP DATABASE IF EXISTS `{wh.database}`")


def stop_merges(wh: Warehouse) -> None:
    """Keep every inserted part as it is: a background merge would collapse duplicates before a count
    without FINAL could see them."""
    ensure_schema(wh)
    for table in TABLES:
        wh.execute(f"SYSTEM STOP MERGES {qualified(wh, table)}")


def _both(wh: Warehouse) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[tuple[Any, ...]]]]:
    return snapshot(wh), snapshot(wh, final=False)


def _events(runtime: EmbeddedRuntime) -> int:
    return sum(len(runtime.read_events(t.name)) for t in ALL_TOPICS if t.name in runtime.log.topics())


def test_a_new_warehouse_is_backfilled_and_two_warehouses_each_hold_the_whole_history(
    demo_log: Path, chdb_dir: Path
) -> None:
    with EmbeddedRuntime(demo_log) as runtime:
        total = _events(runtime)
        with ChdbWarehouse(chdb_dir, _database("first")) as first, ChdbWarehouse(chdb_dir, _database("second")) as two:
            assert sync(runtime, first).rows == total
            assert sync(runtime, first).rows == 0  # its own offsets: nothing is new
            assert sync(runtime, two).rows == total  # a second warehouse gets everything, not the rest
            final, stored = _both(first)
            assert sum(len(rows) for rows in final.values()) == total > 250
            assert stored == final  # no row twice
            assert _both(two) == (final, final)
            positions = sink_progress.load(first, sink_progress.EMBEDDED_SOURCE)
            assert all(p.done for p in positions.values())
            assert {t for t, _ in positions} == {t.name for t in ALL_TOPICS if t.name in runtime.log.topics()}
            for wh in (first, two):
                wh.execute(f"DROP DATABASE `{wh.database}`")


def test_a_retried_batch_adds_no_rows(demo_log: Path, warehouse: ChdbWarehouse) -> None:
    stop_merges(warehouse)
    with EmbeddedRuntime(demo_log) as runtime:
        batch = [Delivered("twin-calls", 0, r.offset, runtime.decode(r)) for r in runtime.log.read("twin-calls")]
    assert len(batch) > 20
    assert write_batch(warehouse, batch) == len(batch)
    assert write_batch(warehouse, batch) == 0  # the same batch again: redelivery after a lost acknowledgement
    # the same events at other offsets (a worker wrote its outputs twice), and twice within one batch
    copies = [Delivered(d.topic, d.partition, d.offset + 1000, d.event) for d in batch[:10]]
    assert write_batch(warehouse, copies + copies) == 0
    stored = int(warehouse.query(f"SELECT count() FROM {qualified(warehouse, 'twin_calls')}").rows[0][0])
    assert stored == len(batch)
    final = int(warehouse.query(f"SELECT count() FROM {qualified(warehouse, 'twin_calls')} FINAL").rows[0][0])
    assert final == len(batch)


def test_a_changed_event_under_the_same_id_replaces_its_row(demo_log: Path, warehouse: ChdbWarehouse) -> None:
    # a comparison redone after a review keeps its event id: it must land, and FINAL show the new one
    ensure_schema(warehouse)
    with EmbeddedRuntime(demo_log) as runtime:
        first = next(r for r in runtime.log.read("comparisons"))
        event = runtime.decode(first)
    assert isinstance(event, ComparisonMade)
    changed = dataclasses.replace(event, reason=event.reason + " (after a review)")
    assert write_batch(warehouse, [Delivered("comparisons", 0, 0, event)]) == 1
    assert write_batch(warehouse, [Delivered("comparisons", 0, 1, changed)]) == 1
    assert write_batch(warehouse, [Delivered("comparisons", 0, 2, changed)]) == 0  # its copy: nothing new
    rows = warehouse.query(
        f"SELECT reason FROM {qualified(warehouse, 'comparisons')} FINAL WHERE event_id = {sql_literal(event.event_id)}"
    ).rows
    assert [tuple(r) for r in rows] == [(changed.reason,)]


class Crash(BaseException):
    """The process dying mid-batch (not an error the sink could handle)."""


class CrashingWarehouse(WarehouseProxy):
    """The real warehouse until the `crash_at`-th insert, which never happens: the process 'dies'."""

    def __init__(self, real: ChdbWarehouse, crash_at: int) -> None:
        super().__init__(real)
        self.crash_at = crash_at
        self.inserts = 0

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        self.inserts += 1
        if self.inserts == self.crash_at:
            raise Crash(table)
        self.real.insert(table, columns, rows, dedup_token)


@pytest.mark.parametrize("crash_at", [3, 7, 10, 13, 20, 31, 45])
def test_a_batch_cut_short_is_redone_exactly_and_no_row_is_doubled(
    demo_log: Path, chdb_dir: Path, crash_at: int
) -> None:
    with EmbeddedRuntime(demo_log) as runtime, ChdbWarehouse(chdb_dir, _database("ref")) as ref:
        sync(runtime, ref)
        reference = snapshot(ref)
        ref.execute(f"DROP DATABASE `{ref.database}`")
        with ChdbWarehouse(chdb_dir, _database("crash")) as real:
            stop_merges(real)
            crashing = CrashingWarehouse(real, crash_at)
            with pytest.raises(Crash):  # small batches: begin, rows (one insert per event type), finish, …
                sync(runtime, crashing, batch_size=7)
            unfinished = [p for p in sink_progress.load(real, sink_progress.EMBEDDED_SOURCE).values() if not p.done]
            # the next run uses other batch sizes: only an exact redo gives the same dedup tokens
            sync(runtime, real, batch_size=5000)
            final, stored = _both(real)
            assert final == reference
            assert stored == reference, f"duplicates after a crash at insert {crash_at} ({unfinished})"
            assert all(p.done for p in sink_progress.load(real, sink_progress.EMBEDDED_SOURCE).values())
            real.execute(f"DROP DATABASE `{real.database}`")


def test_a_dropped_table_is_refused_until_rebuild_restores_every_table(
    demo_log: Path, warehouse: ChdbWarehouse
) -> None:
    with EmbeddedRuntime(demo_log) as runtime:
        sync(runtime, warehouse)
        before = _both(warehouse)
        warehouse.execute(f"DROP TABLE {qualified(warehouse, 'cases')}")
        with pytest.raises(MissingProjectionError, match="agenttwin rebuild"):
            sync(runtime, warehouse)  # would otherwise recreate `cases` empty, for good
        assert rebuild(runtime, warehouse).rows == _events(runtime)
        assert _both(warehouse) == before
        assert before[0] == before[1]


def test_a_table_of_a_newer_event_type_is_created_in_a_warehouse_with_progress(
    demo_log: Path, warehouse: ChdbWarehouse
) -> None:
    """An upgrade: a warehouse whose sink read every topic of an older release has no table for an event type
    added since (its topic was never read). That table is new, not lost: it is created, not refused."""
    with EmbeddedRuntime(demo_log) as runtime:
        sync(runtime, warehouse)
        before = _both(warehouse)
        for table in ("version_traces", "version_windows", "version_regressions", "version_clearances"):
            warehouse.execute(f"DROP TABLE {qualified(warehouse, table)}")
        warehouse.execute(f"TRUNCATE TABLE {qualified(warehouse, 'sink_schema')}")  # the older release's DDL
        sync(runtime, warehouse)
        assert _both(warehouse) == before


def test_every_statement_names_its_database_while_warehouses_interleave_across_threads(
    demo_log: Path, chdb_dir: Path
) -> None:
    """Several warehouses (databases) of one chDB directory, each driven by its own thread, interleaved;
    meanwhile each warehouse's own session is switched to ANOTHER warehouse's database (`USE`) at random.
    Every table, view and row must still land in, and be read from, the warehouse's own database."""
    with EmbeddedRuntime(demo_log) as runtime:
        by_topic = {
            t.name: [Delivered(t.name, 0, r.offset, runtime.decode(r)) for r in runtime.log.read(t.name)]
            for t in ALL_TOPICS
            if t.name in runtime.log.topics()
        }
    names = [_database(f"iso{n}") for n in range(4)]
    warehouses = [ChdbWarehouse(chdb_dir, name) for name in names]
    decoy = ChdbWarehouse(chdb_dir, _database("decoy"))
    ensure_schema(decoy)  # a database with every table and view, empty: a wrong database answers 0
    errors: list[BaseException] = []
    start = threading.Barrier(len(warehouses))

    def drive(n: int, wh: ChdbWarehouse) -> None:
        chaos = random.Random(n)
        others = [decoy.database, *(x for x in names if x != wh.database)]

        def switch() -> None:
            wh.execute(f"USE `{chaos.choice(others)}`")

        try:
            start.wait(timeout=60)
            switch()
            ensure_schema(wh)
            # each warehouse holds a different share of the events: n+1 of every 4
            for _topic, items in sorted(by_topic.items()):
                mine = [d for d in items if d.offset % 4 <= n]
                for i in range(0, len(mine), 5):
                    switch()
                    write_batch(wh, mine[i : i + 5])
            switch()
            got = snapshot(wh)
            want = sum(1 for items in by_topic.values() for d in items if d.offset % 4 <= n)
            assert sum(len(rows) for rows in got.values()) == want
            (views,) = wh.query(
                f"SELECT count() FROM {qualified(wh, 'v_comparisons')}"
            ).rows  # a view reads the tables of its own database
            comparisons = [d for d in by_topic.get("comparisons", []) if d.offset % 4 <= n]
            assert views[0] == len(comparisons)
        except BaseException as exc:  # reported below, with the thread's warehouse
            errors.append(AssertionError(f"{wh.database}: {exc!r}"))

    threads = [threading.Thread(target=drive, args=(n, wh)) for n, wh in enumerate(warehouses)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    try:
        assert not errors, errors
        counts = [sum(len(r) for r in snapshot(wh).values()) for wh in warehouses]
        assert counts == sorted(counts) and len(set(counts)) == 4  # 1/4, 2/4, 3/4, 4/4 of the events
        assert sum(len(r) for r in snapshot(decoy).values()) == 0  # nothing strayed into another database
        assert all(snapshot(wh) == snapshot(wh, final=False) for wh in warehouses)
    finally:
        for wh in [*warehouses, decoy]:
            wh.execute(f"DROP DATABASE IF EXISTS `{wh.database}`")
            wh.close()


def test_the_sink_never_sends_an_untokened_batch(demo_log: Path) -> None:
    sent: list[str | None] = []

    class Recorder:
        database = "recorder"

        def insert(
            self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
        ) -> None:
            sent.append(dedup_token)

        def query(self, sql: str) -> QueryResult:
            return QueryResult(("event_id", "digest"), ())  # a new warehouse: it holds no event yet

    with EmbeddedRuntime(demo_log) as runtime:
        batch: list[Delivered] = []
        for topic in ("cases", "twin-calls", "spans"):
            batch += [Delivered(topic, 0, r.offset, runtime.decode(r)) for r in runtime.log.read(topic)]
    write_batch(Recorder(), batch)  # type: ignore[arg-type]
    assert sent and all(isinstance(token, str) and token for token in sent)
    assert len(set(sent)) == len(sent) == 4  # a group per topic, then the events they hold (sink_events)


def test_the_ddl_names_the_database_of_every_table_and_view_it_creates_alters_or_reads() -> None:
    import re

    from consumers.clickhouse import split_sql_statements
    from consumers.projections import ddl

    statements = split_sql_statements(ddl("dbx"))
    named = [  # `FROM (` opens a subquery: its own FROM is checked
        name
        for statement in statements
        for name in re.findall(
            r"\b(?:FROM|JOIN|TABLE(?: IF NOT EXISTS)?|VIEW(?: IF NOT EXISTS)?)\s+(?!\()(\S+)",
            re.sub(r"--[^\n]*", "", statement),
        )
    ]
    assert len(named) > 2 * len(TABLES)
    assert [n for n in named if not n.startswith("`dbx`.`")] == []


def _ddl_runs(wh: ChdbWarehouse, monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The statements the real warehouse executes from now on (recorded, then run as usual)."""
    ran: list[str] = []
    execute = wh.execute

    def recording(sql: str) -> None:
        ran.append(sql)
        execute(sql)

    monkeypatch.setattr(wh, "execute", recording)
    return ran


def _digests(wh: Warehouse) -> list[str]:
    return [str(r[0]) for r in wh.query(f"SELECT ddl_sha256 FROM {qualified(wh, 'sink_schema')} FINAL").rows]


def test_the_ddl_runs_once_per_digest_and_again_for_anything_missing(
    warehouse: ChdbWarehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    from consumers.projections import ddl_digest

    ran = _ddl_runs(warehouse, monkeypatch)
    ensure_schema(warehouse)
    assert len(ran) == 1 and _digests(warehouse) == [ddl_digest()]
    ensure_schema(warehouse)
    ensure_schema(warehouse)
    assert len(ran) == 1  # applied already: not executed again
    for dropped in ("VIEW v_comparisons", "TABLE sink_schema", "TABLE cases", "TABLE sink_events"):
        kind, name = dropped.split()
        execute = type(warehouse).execute
        execute(warehouse, f"DROP {kind} {qualified(warehouse, name)}")
        before = len(ran)
        ensure_schema(warehouse)  # no progress yet: a missing table is simply created
        assert len(ran) == before + 1, dropped
        warehouse.query(f"SELECT * FROM {qualified(warehouse, name)}")  # there again
        assert _digests(warehouse) == [ddl_digest()]


def test_an_upgraded_ddl_is_applied_over_the_digest_of_the_previous_one(warehouse: ChdbWarehouse) -> None:
    ensure_schema(warehouse)
    table = qualified(warehouse, "sink_schema")
    warehouse.execute(f"TRUNCATE TABLE {table}")
    warehouse.insert(f"{warehouse.database}.sink_schema", ["ddl_sha256"], [["0" * 64]], None)  # the older DDL's
    warehouse.execute(  # the older DDL's view, without the columns added since
        f"CREATE OR REPLACE VIEW {qualified(warehouse, 'v_contradictions')} AS SELECT alert_id, tool, trace_id "
        f"FROM {qualified(warehouse, 'contradictions')} FINAL WHERE kind = 'contradiction'"
    )
    ensure_schema(warehouse)
    columns = [c for c, *_ in warehouse.query(f"DESCRIBE TABLE {qualified(warehouse, 'v_contradictions')}").rows]
    assert {"subject", "claim_inferred_by", "claim_rule", "claim_confidence"} <= set(columns)


def test_a_ddl_cut_short_before_its_digest_is_recorded_runs_again(
    warehouse: ChdbWarehouse, monkeypatch: pytest.MonkeyPatch
) -> None:
    insert = warehouse.insert

    def dying(table: str, *args: Any) -> None:
        if table.endswith(".sink_schema"):
            raise RuntimeError("killed after the DDL, before its digest")
        insert(table, *args)

    monkeypatch.setattr(warehouse, "insert", dying)
    with pytest.raises(RuntimeError, match="killed"):
        ensure_schema(warehouse)
    monkeypatch.setattr(warehouse, "insert", insert)
    assert _digests(warehouse) == []
    ran = _ddl_runs(warehouse, monkeypatch)
    ensure_schema(warehouse)
    assert len(ran) == 1 and len(_digests(warehouse)) == 1


def test_rebuild_recreates_the_schema_and_its_digest(demo_log: Path, warehouse: ChdbWarehouse) -> None:
    with EmbeddedRuntime(demo_log) as runtime:
        sync(runtime, warehouse)
        before = _both(warehouse)
        assert rebuild(runtime, warehouse).rows == _events(runtime)
        assert _both(warehouse) == before
        assert len(_digests(warehouse)) == 1


def test_a_new_warehouse_has_every_column_without_running_the_upgrades(warehouse: ChdbWarehouse) -> None:
    from consumers.projections import columns_of

    ensure_schema(warehouse)  # its tables are new: the ALTER ... ADD COLUMN upgrades are left out
    for event_type, table in TABLE_BY_EVENT.items():
        columns = [c for c, *_ in warehouse.query(f"DESCRIBE TABLE {qualified(warehouse, table)}").rows]
        assert sorted(columns) == sorted(columns_of(event_type)), table
