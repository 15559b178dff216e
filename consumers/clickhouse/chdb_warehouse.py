"""ClickHouse in-process (chDB): MergeTree tables on disk, no server.

chDB runs one embedded server per process, bound to one directory; a second directory in the same
process fails (and a second process on the same directory fails to lock it). So this adapter keeps
a process-wide binding: any number of `ChdbWarehouse`s may be open on the bound directory, each
with its own chDB session (connection); asking for a different directory while one is open raises
`WarehouseError`. Isolate tests by database name, not by directory: one directory per test run, one
database per test.

No statement depends on a session's current database: the adapter never issues USE on its session,
inserts name `database`.`table`, and the project's DDL and queries name their database too. A
person's SQL (`read_only_query`) runs in a second session of its own, `readonly = 1`, whose default
database is this warehouse's.
"""

from __future__ import annotations

import json
import threading
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from consumers.clickhouse._values import converter_for, json_compact_columns, quote_identifier, string_literal
from consumers.clickhouse.contract import QueryResult, WarehouseError, split_sql_statements
from consumers.clickhouse.read_only import (
    DEFAULT_LIMITS,
    QueryLimits,
    checked_statement,
    is_readonly_refusal,
    limit_error,
    refusal,
)
from streams.closing import Closing

__all__ = ["DEFAULT_DATABASE", "ChdbWarehouse", "bound_chdb_path"]

DEFAULT_DATABASE = "agenttwin"

_binding_lock = threading.Lock()
_bound_path: Path | None = None
_open_count = 0

# Session settings: 64-bit integers as JSON numbers so ints round-trip as ints.
_SESSION_SETTINGS = ("SET output_format_json_quote_64bit_integers = 0",)


def bound_chdb_path() -> Path | None:
    """The directory chDB is bound to in this process while any ChdbWarehouse is open."""
    with _binding_lock:
        return _bound_path if _open_count else None


def _bind(path: Path) -> None:
    global _bound_path, _open_count
    with _binding_lock:
        if _open_count and _bound_path != path:
            raise WarehouseError(
                f"chDB is bound to {_bound_path} in this process; cannot open {path} as well "
                "(one embedded ClickHouse per process and directory: use another database, not another path)"
            )
        _bound_path = path
        _open_count += 1


def _unbind() -> None:
    global _open_count
    with _binding_lock:
        _open_count -= 1


class ChdbWarehouse(Closing):
    """A `Warehouse` over chDB at `path`, using (and creating) the Atomic database `database`."""

    def __init__(self, path: Path, database: str = DEFAULT_DATABASE) -> None:
        self.path = Path(path).resolve()
        quote_identifier(database)
        self._database = database
        self.path.mkdir(parents=True, exist_ok=True)
        self._session: Any = None  # chdb.session.Session; chdb is only partly typed
        self._reader: Any = None  # the read-only session for people's SQL, opened on first use
        self._reader_limits = DEFAULT_LIMITS  # the limits that session was opened with (fixed by readonly = 1)
        self._reader_lock = threading.Lock()
        _bind(self.path)
        self._bound = True
        try:
            self._session = _new_session(str(self.path))
            self._run(f"CREATE DATABASE IF NOT EXISTS {quote_identifier(database)} ENGINE = Atomic")
            for statement in _SESSION_SETTINGS:
                self._run(statement)
        except BaseException:
            self.close()
            raise

    @property
    def database(self) -> str:
        return self._database

    def _run(self, sql: str, fmt: str = "CSV", session: Any = None) -> Any:
        session = session if session is not None else self._session
        if session is None:
            raise WarehouseError(f"chDB warehouse {self.path} ({self._database}) is closed")
        try:
            return session.query(sql, fmt)
        except RuntimeError as exc:  # chdb's ChdbError derives from RuntimeError
            if session is self._reader and is_readonly_refusal(str(exc)):
                raise refusal(str(exc)) from exc
            if session is self._reader and (limited := limit_error(str(exc), self._reader_limits)) is not None:
                raise limited from exc
            raise WarehouseError(f"chDB rejected {_excerpt(sql)}: {exc}") from exc

    def execute(self, sql: str) -> None:
        for statement in split_sql_statements(sql):
            self._run(statement)

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        if not rows:
            return
        token = dedup_token if dedup_token is not None else f"untokened-{uuid.uuid4()}"
        column_list = ", ".join(quote_identifier(c) for c in columns)
        body = json_compact_columns(columns, rows)
        target = table if "." in table else f"{self._database}.{table}"
        self._run(
            f"INSERT INTO {quote_identifier(target)} ({column_list}) "
            f"SETTINGS insert_deduplicate = 1, insert_deduplication_token = {string_literal(token)} "
            f"FORMAT JSONCompactColumns {body}"
        )

    def query(self, sql: str) -> QueryResult:
        return _result(self._run(sql, "JSONCompact").bytes(), sql)

    def read_only_query(self, sql: str, limits: QueryLimits = DEFAULT_LIMITS) -> QueryResult:
        reader = self._read_only_session(limits)

        def run(statement: str) -> list[str]:
            rows = _result(self._run(statement, "JSONCompact", reader).bytes(), statement).rows
            return [str(row[0]) for row in rows]

        functions = run("SELECT name FROM system.table_functions")
        canonical = checked_statement(sql, run, functions)
        return _result(self._run(canonical, "JSONCompact", reader).bytes(), canonical)

    def _read_only_session(self, limits: QueryLimits) -> Any:
        with self._reader_lock:
            if self._session is None:
                raise WarehouseError(f"chDB warehouse {self.path} ({self._database}) is closed")
            if self._reader is not None and self._reader_limits != limits:
                old, self._reader = self._reader, None  # its limits cannot change any more: open another
                old.close()
            if self._reader is None:
                reader = _new_session(str(self.path))
                try:
                    # settings first: once readonly = 1, no setting can change in this session
                    limit_settings = [f"SET {k} = {_setting(v)}" for k, v in limits.settings().items()]
                    for statement in (f"USE {quote_identifier(self._database)}", *_SESSION_SETTINGS, *limit_settings):
                        self._run(statement, session=reader)
                    self._run("SET readonly = 1", session=reader)
                except BaseException:
                    reader.close()
                    raise
                self._reader, self._reader_limits = reader, limits
            return self._reader

    def close(self) -> None:
        with self._reader_lock:
            reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
        session, self._session = self._session, None
        if session is not None:
            session.close()
        if self._bound:
            self._bound = False
            _unbind()


def _result(raw: bytes, sql: str) -> QueryResult:
    """A JSONCompact answer as rows of Python values (datetimes UTC-aware, like the server adapter's)."""
    if not raw.strip():
        return QueryResult((), ())
    try:
        document = json.loads(raw)
    except ValueError as exc:  # e.g. the statement's own FORMAT clause replaced JSONCompact
        raise WarehouseError(f"could not read the answer to {_excerpt(sql)} as JSON: {exc}") from exc
    meta = document.get("meta", [])
    columns = tuple(str(column["name"]) for column in meta)
    converters = [converter_for(str(column["type"])) for column in meta]
    if not any(converters):
        return QueryResult(columns, tuple(tuple(row) for row in document["data"]))
    rows = tuple(
        tuple(value if convert is None else convert(value) for convert, value in zip(converters, row, strict=True))
        for row in document["data"]
    )
    return QueryResult(columns, rows)


def _setting(value: int | float | str) -> str:
    return string_literal(value) if isinstance(value, str) else repr(value)


def _new_session(path: str) -> Any:
    import chdb.session  # imported on first use: loading chDB (and pyarrow) costs a CLI that never queries

    return chdb.session.Session(path)  # type: ignore[no-untyped-call]


def _excerpt(sql: str, limit: int = 200) -> str:
    flat = " ".join(sql.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")
