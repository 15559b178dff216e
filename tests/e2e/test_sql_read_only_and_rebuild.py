"""`agenttwin sql` is read-only, bounded and renders every column type in every format; `agenttwin rebuild`
restores exactly the tables a fresh run has (compared with and without FINAL) — all after a real demo run.

`sql` is a reader: it projects the topics into a copy of its own (`<data dir>/readers/`), never the
writer's warehouse, so its answers are compared with the writer's tables."""

from __future__ import annotations

import csv
import io
import json
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from agenttwin.cli import main
from agenttwin.pipeline import open_embedded
from agenttwin.settings import Settings
from consumers.clickhouse import ChdbWarehouse, qualified
from consumers.projections import TABLE_BY_EVENT, snapshot, view_names

TABLES = sorted(TABLE_BY_EVENT.values())


@pytest.fixture(scope="module")
def demo_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    data_dir = tmp_path_factory.mktemp("sql-demo")
    assert main(["demo", "--data-dir", str(data_dir)]) == 0
    return data_dir


def _tables(data_dir: Path) -> tuple[dict[str, list[tuple[Any, ...]]], dict[str, list[tuple[Any, ...]]]]:
    """Every projection table, read with FINAL and without."""
    with open_embedded(Settings(), data_dir) as emb:
        return snapshot(emb.warehouse), snapshot(emb.warehouse, final=False)


def _sql(capsys: pytest.CaptureFixture[str], data_dir: Path, query: str, fmt: str = "csv") -> tuple[int, str, str]:
    code = main(["sql", query, "--format", fmt, "--data-dir", str(data_dir)])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _count(capsys: pytest.CaptureFixture[str], data_dir: Path, query: str) -> int:
    code, out, err = _sql(capsys, data_dir, query)
    assert code == 0, err
    return int(out.splitlines()[1])


@pytest.mark.parametrize("relation", [*TABLES, *view_names()])
def test_every_table_and_view_renders_in_every_format(
    demo_dir: Path, capsys: pytest.CaptureFixture[str], relation: str
) -> None:
    with open_embedded(Settings(), demo_dir) as emb:
        expected = emb.warehouse.query(f"SELECT * FROM {qualified(emb.warehouse, relation)}")
    query = f"SELECT * FROM {relation}"
    code, out, err = _sql(capsys, demo_dir, query, "json")
    assert code == 0, err
    rows = json.loads(out)
    assert len(rows) == len(expected.rows)
    assert all(list(row) == sorted(expected.columns) for row in rows)
    code, out, err = _sql(capsys, demo_dir, query, "csv")
    assert code == 0, err
    parsed = list(csv.reader(io.StringIO(out)))
    assert parsed[0] == list(expected.columns)
    assert len(parsed) == len(expected.rows) + 1
    code, out, err = _sql(capsys, demo_dir, query, "table")
    assert code == 0, err
    assert out.splitlines()[0].split()[0] == expected.columns[0]
    if relation in ("contradictions", "v_contradictions", "spans", "cases"):
        assert expected.rows, f"the demo fills {relation}"


def test_the_formats_render_every_column_type(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    query = (
        "SELECT toDateTime64('2026-01-01 10:00:00.250', 3, 'UTC') AS dt64,"
        " toDateTime('2026-01-01 10:00:00', 'UTC') AS dt,"
        " toDate('2026-01-02') AS d, CAST(NULL, 'Nullable(Int32)') AS nothing, [1, 2] AS ints,"
        " ['a', NULL] AS strs, map('k', 'v') AS m, toUInt64(18446744073709551615) AS big, true AS flag,"
        " toDecimal64(1.25, 2) AS dec, toUUID('01234567-89ab-cdef-0123-456789abcdef') AS id, (1, 'x') AS tup,"
        " nan AS not_a_number, [toDateTime64('2026-01-01 00:00:00', 3, 'UTC')] AS times, 'a,\"b\"' AS tricky"
    )
    code, out, err = _sql(capsys, demo_dir, query, "json")
    assert code == 0, err
    (row,) = json.loads(out)
    assert row["dt64"] == "2026-01-01T10:00:00.250+00:00"
    assert row["dt"] == "2026-01-01T10:00:00.000+00:00"
    assert row["d"] == "2026-01-02"
    assert row["nothing"] is None
    assert row["ints"] == [1, 2] and row["strs"] == ["a", None] and row["m"] == {"k": "v"}
    assert row["big"] == 18446744073709551615 and row["flag"] is True
    assert row["id"] == "01234567-89ab-cdef-0123-456789abcdef"
    assert row["not_a_number"] is None
    assert row["times"] == ["2026-01-01T00:00:00.000+00:00"]
    code, out, err = _sql(capsys, demo_dir, query, "csv")
    assert code == 0, err
    header, values = list(csv.reader(io.StringIO(out)))
    cells = dict(zip(header, values, strict=True))
    assert cells["dt64"] == "2026-01-01T10:00:00.250+00:00"
    assert cells["nothing"] == "" and cells["flag"] == "true" and cells["big"] == "18446744073709551615"
    assert json.loads(cells["m"]) == {"k": "v"} and json.loads(cells["strs"]) == ["a", None]
    assert cells["tricky"] == 'a,"b"'
    assert cells["not_a_number"] in ("", "nan")  # chDB's JSON answer carries nan as null; a server's as nan
    code, out, err = _sql(capsys, demo_dir, query, "table")
    assert code == 0, err
    assert "2026-01-01T10:00:00.250+00:00" in out and '{"k":"v"}' in out


WRITES = [
    "DROP TABLE cases",
    "INSERT INTO comparisons (event_id) VALUES ('forged')",
    "TRUNCATE TABLE cases",
    "ALTER TABLE cases DELETE WHERE 1",
    "CREATE TABLE forged (x Int8) ENGINE = Memory",
    "RENAME TABLE cases TO cases_old",
    "OPTIMIZE TABLE cases FINAL",
    "SET readonly = 0",
    "SELECT count() FROM cases SETTINGS readonly = 0",
    "SYSTEM STOP MERGES",
    "KILL QUERY WHERE 1",
    "USE system",
    "SELECT 1; DROP TABLE cases",
    "SELECT $$ ' $$; DROP TABLE cases; SELECT '",
    "DROP DATABASE agenttwin",
]


@pytest.mark.parametrize("statement", WRITES)
def test_a_write_is_one_line_exit_2_and_changes_nothing(
    demo_dir: Path, capsys: pytest.CaptureFixture[str], statement: str
) -> None:
    before = _tables(demo_dir)
    code, out, err = _sql(capsys, demo_dir, statement)
    assert code == 2
    assert out == ""
    assert len(err.strip().splitlines()) == 1 and "read-only" in err and "Traceback" not in err
    assert _tables(demo_dir) == before
    assert _count(capsys, demo_dir, "SELECT count() FROM cases FINAL") == 36


def test_files_and_the_network_are_out_of_reach(
    demo_dir: Path, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    written = tmp_path / "written.csv"
    attempts = [
        f"SELECT file('{secret}')",
        f"SELECT * FROM file('{secret}', 'LineAsString')",
        f"SELECT count() FROM cases WHERE case_id IN (SELECT * FROM file('{secret}', 'LineAsString'))",
        f"SELECT 1 INTO OUTFILE '{written}'",
        f"SELECT * FROM cases INTO OUTFILE '{written}' FORMAT CSV",
        f"INSERT INTO FUNCTION file('{written}', 'CSV', 'x Int8') SELECT 1",
        "SELECT * FROM url('http://127.0.0.1:9/x', 'CSV', 'x Int8')",
        "SELECT * FROM s3('http://127.0.0.1:9/bucket/x.csv', 'CSV', 'x Int8')",
        "SELECT * FROM remote('127.0.0.1:9', system.one)",
        "SELECT * FROM mysql('127.0.0.1:9', 'db', 't', 'u', 'p')",
        "SELECT * FROM postgresql('127.0.0.1:9', 'db', 't', 'u', 'p')",
        "SELECT * FROM hdfs('hdfs://127.0.0.1:9/x', 'CSV', 'x Int8')",
        "SELECT * FROM input('x Int8')",
        "SELECT * FROM executable('x.sh', 'CSV', 'x Int8')",
        "SELECT * FROM filesystem('/')",
        "SELECT * FROM python('x')",
        f"EXISTS TABLE default.`{secret}`",  # chDB's `default` database is an overlay of the file system
        f"EXISTS TABLE `default`.`{tmp_path / 'no-such-file'}`",
        f"DESCRIBE TABLE default.`{secret}`",
        f"SELECT count() FROM default.`{secret}`",
        "SHOW TABLES FROM default",
    ]
    for attempt in attempts:
        code, out, err = _sql(capsys, demo_dir, attempt)
        assert (code, out) == (2, ""), attempt
        assert "read-only" in err and len(err.strip().splitlines()) == 1, (attempt, err)
        assert "top secret" not in err
    assert not written.exists()
    # reads of the warehouse itself stay possible, tables functions that read no file or network too
    assert _count(capsys, demo_dir, "SELECT count() FROM numbers(5)") == 5
    code, out, err = _sql(capsys, demo_dir, "SHOW TABLES")
    assert code == 0 and "comparisons" in out, err
    code, out, err = _sql(capsys, demo_dir, "SELEC 1")
    assert code == 2 and "Syntax error" in err and len(err.strip().splitlines()) == 1


def _copy_topics(demo_dir: Path, data_dir: Path) -> None:
    """The demo's topics (the source of truth) in a data directory of their own, no warehouse yet."""
    shutil.copytree(demo_dir / "topics-log", data_dir / "topics-log")


def test_rebuild_after_the_chdb_directory_was_deleted_restores_identical_tables(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    final, stored = _tables(demo_dir)  # the tables of the demo's own run
    assert final == stored  # the demo stored no row twice
    rows = sum(len(rows) for rows in final.values())
    assert rows > 500
    data_dir = tmp_path / "copy"
    _copy_topics(demo_dir, data_dir)
    assert _count(capsys, data_dir, "SELECT count() FROM comparisons") == 18  # a reader's copy: backfilled
    assert not (data_dir / "clickhouse").exists()  # a reader leaves the writer's warehouse alone
    with ChdbWarehouse(data_dir / "readers" / "clickhouse-0" / "clickhouse") as copy:
        assert (snapshot(copy), snapshot(copy, final=False)) == (final, final)  # sql reads what a writer has
    assert main(["rebuild", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()
    assert _tables(data_dir) == (final, final)
    shutil.rmtree(data_dir / "clickhouse")
    assert main(["rebuild", "--data-dir", str(data_dir)]) == 0
    out = capsys.readouterr().out
    assert "Rebuilt the projections from offset 0" in out and f"{rows} rows projected" in out
    assert _tables(data_dir) == (final, final)


def test_rebuild_after_a_dropped_table_restores_identical_tables(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    before = _tables(demo_dir)
    data_dir = tmp_path / "copy"
    _copy_topics(demo_dir, data_dir)
    assert main(["rebuild", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()
    assert _tables(data_dir) == before
    with open_embedded(Settings(), data_dir) as emb:
        emb.warehouse.execute(f"DROP TABLE {qualified(emb.warehouse, 'verdicts')}")  # through the Python API
    code = main(["demo", "--data-dir", str(data_dir)])  # the writer's sink finds the table gone
    err = capsys.readouterr().err
    assert code == 2 and "agenttwin rebuild" in err and len(err.strip().splitlines()) == 1
    assert _count(capsys, data_dir, "SELECT count() FROM verdicts") > 0  # a reader answers from its own copy
    assert main(["rebuild", "--data-dir", str(data_dir)]) == 0
    capsys.readouterr()
    assert _tables(data_dir) == before
    assert main(["rebuild", "--data-dir", str(data_dir)]) == 0  # again: the same tables
    assert _tables(data_dir) == before
    assert main(["demo", "--data-dir", str(data_dir)]) == 0  # and the pipeline goes on from there
    assert _tables(data_dir) == before


ENDLESS = "SELECT count() FROM generateRandom('x UInt64, s String')"


def test_an_endless_query_stops_at_its_time_limit_in_one_line(
    demo_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    code = main(["sql", ENDLESS, "--timeout", "2", "--data-dir", str(demo_dir)])
    elapsed = time.monotonic() - started
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert "time limit of 2 s" in line and "--timeout" in line, line
    assert elapsed < 120  # bounded (the limit is 2 s; the rest is projecting and a loaded machine)


@pytest.mark.parametrize(
    ("query", "flags", "needle"),
    [
        ("SELECT * FROM numbers(1000)", ["--max-rows", "100"], "--max-rows"),
        ("SELECT repeat(toString(number), 100) FROM numbers(100000)", ["--max-bytes", "1000000"], "--max-bytes"),
        ("SELECT * FROM numbers(200000)", [], "100,000 rows"),  # the default
    ],
)
def test_a_result_past_its_size_limit_is_refused_in_one_line(
    demo_dir: Path, capsys: pytest.CaptureFixture[str], query: str, flags: list[str], needle: str
) -> None:
    code = main(["sql", query, *flags, "--data-dir", str(demo_dir)])
    captured = capsys.readouterr()
    assert code == 2 and captured.out == ""
    (line,) = captured.err.strip().splitlines()
    assert "limit" in line and needle in line, line


def test_a_query_cannot_lift_its_own_limits(demo_dir: Path, capsys: pytest.CaptureFixture[str]) -> None:
    for setting in ("max_execution_time = 0", "max_result_rows = 0", "result_overflow_mode = 'break'"):
        code, out, err = _sql(capsys, demo_dir, f"SELECT count() FROM numbers(10) SETTINGS {setting}")
        assert (code, out) == (2, "") and "read-only" in err, (setting, err)
    assert _count(capsys, demo_dir, "SELECT count() FROM numbers(1000)") == 1000  # within the limits


def test_an_endless_query_keeps_no_writer_from_starting(
    demo_dir: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data_dir = tmp_path / "copy"
    shutil.copytree(demo_dir, data_dir, symlinks=True)
    assert _count(capsys, data_dir, "SELECT count() FROM cases FINAL") == 36  # the reader's copy is up to date
    command = [sys.executable, "-m", "agenttwin.cli", "sql", ENDLESS, "--timeout", "600", "--data-dir", str(data_dir)]
    query = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        time.sleep(3)  # let it reach its query (not asserted: a writer must start at any moment of it)
        demo = subprocess.run(
            [sys.executable, "-m", "agenttwin.cli", "demo", "--data-dir", str(data_dir)],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        assert demo.returncode == 0, demo.stderr
        assert query.poll() is None  # the query was running the whole time
    finally:
        query.kill()
        query.communicate(timeout=60)
    assert not (data_dir / "topics-log" / "quarantine").exists()
