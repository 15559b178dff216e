"""The warehouse port: what the sink, replay and reports need from ClickHouse (embedded or server).

Value mapping, identical in every adapter:
  str -> String, int -> Int*/UInt*, float -> Float*, bool -> Bool, None -> NULL (Nullable columns),
  list[str] -> Array(String), UTC-aware datetime -> DateTime64(3, 'UTC') (returned UTC-aware),
  date -> Date. Naive datetimes are refused. Dicts/lists of other shapes: the caller encodes them
  (e.g. as JSON strings).

Deduplication: a table with `SETTINGS non_replicated_deduplication_window = N` drops an insert whose
`dedup_token` it has seen among the last N; without a token it would drop any insert whose *content*
equals a recent one. Adapters therefore always send a token: the caller's (sink batches use
`<topic>-<partition>-<first offset>-<last offset>-<table>`) or, for `dedup_token=None`, a fresh unique
one, so an untokened insert is never silently lost (the sink never sends None: consumers/sink.py).

Databases: nothing depends on a connection's current database. Every statement the project issues
names its database (`qualified(warehouse, "cases")`, `ddl(database)`); `insert` qualifies a bare table
name itself. Only `read_only_query` (a person's SQL) runs with the warehouse database as its default,
in a read-only session of its own.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from types import TracebackType
from typing import Any, Protocol, Self, runtime_checkable

from consumers.clickhouse._values import quote_identifier

__all__ = [
    "DEFAULT_LIMITS",
    "QueryLimits",
    "QueryResult",
    "ReadOnlyError",
    "Warehouse",
    "WarehouseError",
    "qualified",
    "split_sql_statements",
]


@dataclass(frozen=True)
class QueryLimits:
    """What one person's query may cost: wall time in the engine, rows and bytes of its result."""

    timeout_s: float = 60.0
    max_rows: int = 100_000
    max_bytes: int = 64 * 1024 * 1024

    def __post_init__(self) -> None:
        if not self.timeout_s > 0 or self.max_rows < 1 or self.max_bytes < 1:
            raise ValueError(f"query limits must be positive, got {self}")

    def settings(self) -> dict[str, int | float | str]:
        """The ClickHouse settings that enforce them (applied before `readonly = 1`)."""
        return {
            "max_execution_time": self.timeout_s,
            "timeout_overflow_mode": "throw",
            "max_result_rows": self.max_rows,
            "max_result_bytes": self.max_bytes,
            "result_overflow_mode": "throw",
        }


DEFAULT_LIMITS = QueryLimits()


class WarehouseError(Exception):
    """A warehouse could not be opened or rejected a statement; the message names the statement."""


class ReadOnlyError(WarehouseError):
    """A read-only query that would write, or read files or the network: refused, nothing ran."""


@dataclass(frozen=True)
class QueryResult:
    columns: tuple[str, ...]
    rows: tuple[tuple[Any, ...], ...]

    def as_dicts(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]


@runtime_checkable
class Warehouse(Protocol):
    """ClickHouse, embedded (chDB) or server (clickhouse-connect); every table lives in one database."""

    @property
    def database(self) -> str: ...

    def execute(self, sql: str) -> None:
        """Run DDL or any statements without results; a script is split on `;` outside quotes/comments."""

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        """Insert rows (one value per column, in order) as one block; see the module doc on tokens."""

    def query(self, sql: str) -> QueryResult:
        """Run one SELECT (or SHOW/DESCRIBE) the project wrote, naming its tables' database; all rows."""

    def read_only_query(self, sql: str, limits: QueryLimits = ...) -> QueryResult:
        """Run a person's SQL read-only (ClickHouse `readonly = 1`) in a session of its own whose default
        database is this warehouse's, under `limits` (default `DEFAULT_LIMITS`); writes and table functions
        touching files or the network raise `ReadOnlyError`, a query past a limit `QueryLimitError`
        (consumers/clickhouse/read_only.py)."""

    def close(self) -> None:
        """Release the connection; idempotent."""

    def __enter__(self) -> Self: ...

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None: ...


def qualified(warehouse: Warehouse, name: str) -> str:
    """`database`.`name` of a table or view in `warehouse`: how project SQL names what it reads."""
    return quote_identifier(f"{warehouse.database}.{name}")


def split_sql_statements(script: str) -> list[str]:
    """Split a SQL script on `;` that are outside quotes, backquotes and comments; drop empty parts."""
    statements: list[str] = []
    current: list[str] = []
    has_code = False
    i = 0
    n = len(script)
    while i < n:
        ch = script[i]
        if ch in "'\"`":
            end = _end_of_quoted(script, i)
            current.append(script[i:end])
            has_code = True
            i = end
        elif script.startswith("--", i) or ch == "#":
            end = script.find("\n", i)
            end = n if end < 0 else end
            current.append(script[i:end])
            i = end
        elif script.startswith("/*", i):
            end = script.find("*/", i + 2)
            end = n if end < 0 else end + 2
            current.append(script[i:end])
            i = end
        elif ch == ";":
            if has_code:
                statements.append("".join(current).strip())
            current, has_code = [], False
            i += 1
        else:
            current.append(ch)
            has_code = has_code or not ch.isspace()
            i += 1
    if has_code:
        statements.append("".join(current).strip())
    return statements


def _end_of_quoted(text: str, start: int) -> int:
    """Index just past the quoted token starting at `start` (backslash escapes and doubled quotes)."""
    quote = text[start]
    i = start + 1
    while i < len(text):
        ch = text[i]
        if ch == "\\":
            i += 2
        elif ch == quote:
            if i + 1 < len(text) and text[i + 1] == quote:
                i += 2
            else:
                return i + 1
        else:
            i += 1
    return len(text)
