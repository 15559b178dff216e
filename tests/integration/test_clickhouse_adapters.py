"""The Warehouse contract against real engines: chDB in-process always; a ClickHouse server too when
CLICKHOUSE_URL is set (then an unreachable server fails these tests, it never skips them).

chDB binds one embedded server per process to one directory, so every chDB test here shares one
session-scoped directory and isolates itself with its own database.
"""

from __future__ import annotations

import datetime as dt
import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from consumers.clickhouse import (
    ChdbWarehouse,
    ReadOnlyError,
    ServerWarehouse,
    Warehouse,
    WarehouseError,
    bound_chdb_path,
    open_warehouse,
    parse_server_url,
    qualified,
    resolve_chdb_path,
    split_sql_statements,
)

SERVER_URL = os.environ.get("CLICKHOUSE_URL", "")
BACKENDS = ["chdb", "server"] if SERVER_URL else ["chdb"]
UTC = dt.UTC

EVENTS_DDL = """
CREATE TABLE {db}.events (
    event_id String,
    case_id String,
    score Float64,
    passed Bool,
    note Nullable(String),
    tags Array(String),
    attempt Int64,
    occurred_at DateTime64(3, 'UTC')
) ENGINE = ReplacingMergeTree(attempt)
ORDER BY (case_id, event_id)
SETTINGS non_replicated_deduplication_window = 1000;
-- a comment; with a semicolon
CREATE VIEW {db}.latest AS SELECT case_id, count() AS n FROM {db}.events FINAL GROUP BY case_id;
"""
COLUMNS = ["event_id", "case_id", "score", "passed", "note", "tags", "attempt", "occurred_at"]


def _row(event_id: str, case_id: str = "c1", attempt: int = 1, note: str | None = None) -> tuple[object, ...]:
    at = dt.datetime(2025, 5, 1, 10, 0, 0, 123000, tzinfo=UTC)
    return (event_id, case_id, 0.75, True, note, ["a", 'it\'s \\ "q"'], attempt, at)


@pytest.fixture(scope="session")
def chdb_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("chdb")


@pytest.fixture(params=BACKENDS)
def warehouse(request: pytest.FixtureRequest, chdb_dir: Path) -> Iterator[Warehouse]:
    database = f"t_{request.node.name.split('[')[0][-40:]}_{time.monotonic_ns()}"
    if request.param == "chdb":
        opened: Warehouse = ChdbWarehouse(chdb_dir, database)
    else:
        opened = ServerWarehouse(SERVER_URL, database)  # raises WarehouseError if unreachable: a failure
    try:
        yield opened
    finally:
        opened.execute(f"DROP DATABASE IF EXISTS `{database}`")
        opened.close()


def _count(warehouse: Warehouse, table: str = "events") -> int:
    (row,) = warehouse.query(f"SELECT count() FROM {qualified(warehouse, table)}").rows
    return int(row[0])


def test_values_round_trip(warehouse: Warehouse) -> None:
    warehouse.execute(EVENTS_DDL.format(db=warehouse.database))
    rows = [_row("e1", note="ünïcode ✓"), _row("e2", case_id="c2", note=None)]
    warehouse.insert("events", COLUMNS, rows, dedup_token="events-0-0-1")
    result = warehouse.query(f"SELECT {', '.join(COLUMNS)} FROM {qualified(warehouse, 'events')} ORDER BY event_id")
    assert result.columns == tuple(COLUMNS)
    assert [list(r) for r in result.rows] == [list(r) for r in rows]
    assert isinstance(result.rows[0][6], int)
    assert result.rows[0][7].tzinfo is not None
    assert result.as_dicts()[1]["note"] is None


def test_dedup_token_makes_a_retried_batch_a_no_op(warehouse: Warehouse) -> None:
    warehouse.execute(EVENTS_DDL.format(db=warehouse.database))
    batch = [_row("e1"), _row("e2")]
    warehouse.insert("events", COLUMNS, batch, dedup_token="events-0-0-1")
    warehouse.insert("events", COLUMNS, batch, dedup_token="events-0-0-1")  # redelivery
    assert _count(warehouse) == 2
    warehouse.insert("events", COLUMNS, [_row("e3")], dedup_token="events-0-0-1")  # the token decides
    assert _count(warehouse) == 2
    warehouse.insert("events", COLUMNS, batch, dedup_token="events-0-2-3")
    assert _count(warehouse) == 4  # a new token inserts again (ReplacingMergeTree collapses later)


def test_identical_content_without_token_is_not_dropped(warehouse: Warehouse) -> None:
    # with a dedup window, ClickHouse would drop an untokened block equal to a recent one
    warehouse.execute(EVENTS_DDL.format(db=warehouse.database))
    warehouse.insert("events", COLUMNS, [_row("e1")], dedup_token=None)
    warehouse.insert("events", COLUMNS, [_row("e1")], dedup_token=None)
    assert _count(warehouse) == 2


def test_final_over_replacing_merge_tree_keeps_the_latest_version(warehouse: Warehouse) -> None:
    warehouse.execute(EVENTS_DDL.format(db=warehouse.database))
    warehouse.insert("events", COLUMNS, [_row("e1", attempt=1, note="first")], dedup_token="a")
    warehouse.insert("events", COLUMNS, [_row("e1", attempt=3, note="third")], dedup_token="b")
    warehouse.insert("events", COLUMNS, [_row("e1", attempt=2, note="second")], dedup_token="c")
    warehouse.insert("events", COLUMNS, [_row("e9", case_id="c2")], dedup_token="d")
    assert _count(warehouse) == 4
    final = warehouse.query(
        f"SELECT event_id, attempt, note FROM {qualified(warehouse, 'events')} FINAL ORDER BY event_id"
    )
    assert final.rows == (("e1", 3, "third"), ("e9", 1, None))
    assert warehouse.query(f"SELECT case_id, n FROM {qualified(warehouse, 'latest')} ORDER BY case_id").rows == (
        ("c1", 1),
        ("c2", 1),
    )


def test_errors_are_warehouse_errors(warehouse: Warehouse) -> None:
    with pytest.raises(WarehouseError, match="rejected"):
        warehouse.query("SELECT * FROM no_such_table")
    with pytest.raises(WarehouseError):
        warehouse.execute("CREATE TABLE broken (")
    warehouse.execute(EVENTS_DDL.format(db=warehouse.database))
    with pytest.raises(ValueError, match="naive datetime"):
        warehouse.insert("events", COLUMNS, [(*_row("e1")[:7], dt.datetime(2025, 1, 1))], dedup_token="x")
    with pytest.raises(ValueError, match="values for 8 columns"):
        warehouse.insert("events", COLUMNS, [("too", "short")], dedup_token="x")
    with pytest.raises(ValueError, match="identifier"):
        warehouse.insert("events; DROP TABLE events", COLUMNS, [_row("e1")], dedup_token="x")
    warehouse.insert("events", COLUMNS, [], dedup_token="empty")  # nothing to do
    assert _count(warehouse) == 0


def test_insert_10k_rows(warehouse: Warehouse) -> None:
    warehouse.execute(EVENTS_DDL.format(db=warehouse.database))
    rows = [_row(f"e{i:05d}", case_id=f"c{i % 100}", attempt=i) for i in range(10_000)]
    warehouse.insert("events", COLUMNS, rows, dedup_token="bulk-0-9999")
    (row,) = warehouse.query(
        f"SELECT count(), uniqExact(case_id), max(attempt) FROM {qualified(warehouse, 'events')}"
    ).rows
    assert row == (10_000, 100, 9_999)


def test_databases_isolate_chdb_users_of_one_directory(chdb_dir: Path) -> None:
    with ChdbWarehouse(chdb_dir, "iso_a") as a, ChdbWarehouse(chdb_dir, "iso_b") as b:
        a.execute("CREATE TABLE IF NOT EXISTS iso_a.t (x Int64) ENGINE = MergeTree ORDER BY x")
        b.execute("CREATE TABLE IF NOT EXISTS iso_b.t (x Int64) ENGINE = MergeTree ORDER BY x")
        a.insert("t", ["x"], [[1], [2]], dedup_token=None)
        assert a.query("SELECT sum(x) FROM iso_a.t").rows == ((3,),)
        assert b.query("SELECT count() FROM iso_b.t").rows == ((0,),)
        assert bound_chdb_path() == chdb_dir.resolve()
        with pytest.raises(WarehouseError, match="one embedded ClickHouse per process"):
            ChdbWarehouse(chdb_dir / "elsewhere")
        a.execute("DROP DATABASE iso_a")
        b.execute("DROP DATABASE iso_b")
    assert bound_chdb_path() is None
    closed = ChdbWarehouse(chdb_dir, "iso_c")
    closed.execute("DROP DATABASE iso_c")
    closed.close()
    closed.close()  # idempotent
    with pytest.raises(WarehouseError, match="closed"):
        closed.query("SELECT 1")


def test_chdb_data_survives_reopening(chdb_dir: Path) -> None:
    with ChdbWarehouse(chdb_dir, "durable") as first:
        first.execute("CREATE TABLE durable.t (x String) ENGINE = MergeTree ORDER BY x")
        first.insert("t", ["x"], [["kept"]], dedup_token="once")
    with ChdbWarehouse(chdb_dir, "durable") as again:
        assert again.query("SELECT x FROM durable.t").rows == (("kept",),)
        again.execute("DROP DATABASE durable")


def test_open_warehouse_picks_the_adapter(chdb_dir: Path, tmp_path: Path) -> None:
    assert resolve_chdb_path(None, tmp_path) == tmp_path / "clickhouse"
    assert resolve_chdb_path("chdb", tmp_path) == tmp_path / "clickhouse"
    assert resolve_chdb_path("chdb:///abs/ch", tmp_path) == Path("/abs/ch")
    assert resolve_chdb_path("chdb://rel/ch", tmp_path) == tmp_path / "rel/ch"
    assert resolve_chdb_path("/x/y", tmp_path) == Path("/x/y")
    assert resolve_chdb_path("https://h:8443/db", tmp_path) is None
    with pytest.raises(WarehouseError, match="unknown warehouse URL scheme"):
        resolve_chdb_path("postgres://h/db", tmp_path)
    with open_warehouse(f"chdb://{chdb_dir}", tmp_path, database="opened") as opened:
        assert isinstance(opened, ChdbWarehouse)
        assert opened.database == "opened"
        assert opened.read_only_query("SELECT currentDatabase() AS db").rows == (("opened",),)
        opened.execute("DROP DATABASE opened")


def test_server_urls_are_parsed_without_a_server() -> None:
    settings = parse_server_url("http://alice:p%40ss@ch.example:9000/evals")
    assert (settings.host, settings.port, settings.username, settings.password) == (
        "ch.example",
        9000,
        "alice",
        "p@ss",
    )
    assert (settings.database, settings.secure) == ("evals", False)
    assert "p@ss" not in repr(settings)
    assert parse_server_url("https://h").port == 8443
    assert parse_server_url("clickhouse://h?secure=true").secure is True
    assert parse_server_url("clickhouse://h").database == "agenttwin"
    with pytest.raises(WarehouseError):
        parse_server_url("ftp://h")
    with pytest.raises(WarehouseError, match="cannot use ClickHouse"):
        ServerWarehouse("http://127.0.0.1:9/db")  # nothing listens on the discard port


def test_split_sql_statements() -> None:
    script = "CREATE TABLE a (s String DEFAULT ';') ENGINE = Memory; -- x; y\n/* ; */ SELECT 'it''s;', \"a;b\", `c;d`;;"
    assert split_sql_statements(script) == [
        "CREATE TABLE a (s String DEFAULT ';') ENGINE = Memory",
        "-- x; y\n/* ; */ SELECT 'it''s;', \"a;b\", `c;d`",
    ]
    assert split_sql_statements("SELECT 'a\\';b'; SELECT 2") == ["SELECT 'a\\';b'", "SELECT 2"]
    assert split_sql_statements(" ; -- only a comment\n") == []


@pytest.mark.parametrize(
    "statement",
    [
        "DROP TABLE events",
        "INSERT INTO events (event_id) VALUES ('forged')",
        "TRUNCATE TABLE events",
        "ALTER TABLE events DELETE WHERE 1",
        "SET readonly = 0",
        "SELECT count() FROM events SETTINGS readonly = 0",
        "SYSTEM STOP MERGES",
        "SELECT 1; DROP TABLE events",
        "SELECT file('/etc/hostname')",
        "SELECT * FROM url('http://127.0.0.1:9/x', 'CSV', 'x Int8')",
        "INSERT INTO FUNCTION file('forged.csv', 'CSV', 'x Int8') SELECT 1",
        "SELECT 1 INTO OUTFILE 'forged.csv'",
    ],
)
def test_read_only_query_refuses_writes_files_and_the_network(warehouse: Warehouse, statement: str) -> None:
    warehouse.execute(EVENTS_DDL.format(db=warehouse.database))
    warehouse.insert("events", COLUMNS, [_row("e1")], dedup_token="one")
    with pytest.raises(ReadOnlyError, match="read-only"):
        warehouse.read_only_query(statement)
    assert _count(warehouse) == 1
    # the person's SQL runs in the warehouse's database, without naming it
    assert warehouse.read_only_query("SELECT event_id FROM events").rows == (("e1",),)
    assert warehouse.read_only_query("SELECT currentDatabase()").rows == ((warehouse.database,),)
