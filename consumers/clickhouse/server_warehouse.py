"""ClickHouse server through clickhouse-connect (HTTP), with the same behaviour as the chDB adapter.

Like the chDB adapter, it relies on no default database: the main client has none, inserts name
`database`.`table`, and a person's SQL goes through a second client of its own whose requests carry
this warehouse's database and `readonly = 1`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import parse_qs, unquote, urlsplit

from consumers.clickhouse._values import check_rows, normalize_server_value, quote_identifier
from consumers.clickhouse.chdb_warehouse import DEFAULT_DATABASE
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

__all__ = ["ServerSettings", "ServerWarehouse", "parse_server_url"]

_SCHEMES = {"http": (False, 8123), "https": (True, 8443), "clickhouse": (False, 8123)}


@dataclass(frozen=True)
class ServerSettings:
    host: str
    port: int
    username: str
    password: str
    database: str
    secure: bool

    def __repr__(self) -> str:  # never print the password
        return (
            f"ServerSettings(host={self.host!r}, port={self.port}, username={self.username!r}, "
            f"password='***', database={self.database!r}, secure={self.secure})"
        )

    def display(self) -> str:
        scheme = "https" if self.secure else "http"
        return f"{scheme}://{self.username}@{self.host}:{self.port}/{self.database}"


def parse_server_url(url: str) -> ServerSettings:
    """http(s)://user:pass@host:port/db or clickhouse://… (HTTP; `?secure=true` for TLS)."""
    parts = urlsplit(url)
    if parts.scheme not in _SCHEMES:
        raise WarehouseError(f"not a ClickHouse server URL (http, https or clickhouse): {url.split('@')[-1]!r}")
    secure, default_port = _SCHEMES[parts.scheme]
    if parse_qs(parts.query).get("secure", ["false"])[0].lower() in ("1", "true", "yes"):
        secure, default_port = True, 8443
    database = unquote(parts.path.strip("/")) or DEFAULT_DATABASE
    quote_identifier(database)
    try:
        port = parts.port or default_port
    except ValueError as exc:
        raise WarehouseError(f"bad port in ClickHouse URL: {exc}") from exc
    return ServerSettings(
        host=parts.hostname or "localhost",
        port=port,
        username=unquote(parts.username) if parts.username else "default",
        password=unquote(parts.password) if parts.password else "",
        database=database,
        secure=secure,
    )


class ServerWarehouse(Closing):
    """A `Warehouse` over a ClickHouse server; creates its database if missing."""

    def __init__(self, url: str, database: str | None = None) -> None:
        settings = parse_server_url(url)
        self.settings = settings
        self._database = database or settings.database
        quote_identifier(self._database)
        self._reader: Any = None  # the read-only client for people's SQL, opened on first use
        self._reader_limits = DEFAULT_LIMITS
        try:
            self._client: Any = self._connect()
            self._client.command(
                f"CREATE DATABASE IF NOT EXISTS {quote_identifier(self._database)}", use_database=False
            )
        except _clickhouse_error() as exc:
            raise WarehouseError(f"cannot use ClickHouse at {settings.display()}: {exc}") from exc

    def _connect(self, **extra: Any) -> Any:
        import clickhouse_connect  # imported on first use, like chDB

        s = self.settings
        return clickhouse_connect.get_client(
            host=s.host, port=s.port, username=s.username, password=s.password, secure=s.secure, **extra
        )

    @property
    def database(self) -> str:
        return self._database

    def _call(self, what: str, action: Any) -> Any:
        if self._client is None:
            raise WarehouseError(f"ClickHouse warehouse {self.settings.display()} is closed")
        try:
            return action()
        except _clickhouse_error() as exc:
            raise WarehouseError(f"ClickHouse rejected {what}: {exc}") from exc

    def execute(self, sql: str) -> None:
        for statement in split_sql_statements(sql):
            self._call(repr(statement[:200]), lambda s=statement: self._client.command(s))

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        if not rows:
            return
        quote_identifier(table)
        check_rows(columns, rows)
        token = dedup_token if dedup_token is not None else f"untokened-{uuid.uuid4()}"
        settings = {"insert_deduplicate": 1, "insert_deduplication_token": token}
        data = [list(row) for row in rows]
        database, _, name = table.rpartition(".")
        self._call(
            f"insert into {table}",
            lambda: self._client.insert(
                name, data, column_names=list(columns), database=database or self._database, settings=settings
            ),
        )

    def query(self, sql: str) -> QueryResult:
        result = self._call(repr(sql[:200]), lambda: self._client.query(sql))
        rows = tuple(tuple(normalize_server_value(v) for v in row) for row in result.result_rows)
        return QueryResult(tuple(result.column_names), rows)

    def read_only_query(self, sql: str, limits: QueryLimits = DEFAULT_LIMITS) -> QueryResult:
        reader = self._read_only_client(limits)

        def call(statement: str) -> Any:
            try:
                return reader.query(statement)
            except _clickhouse_error() as exc:
                if is_readonly_refusal(str(exc)):
                    raise refusal(str(exc)) from exc
                if (limited := limit_error(str(exc), limits)) is not None:
                    raise limited from exc
                raise WarehouseError(f"ClickHouse rejected {statement[:200]!r}: {exc}") from exc

        def run(statement: str) -> list[str]:
            return [str(row[0]) for row in call(statement).result_rows]

        canonical = checked_statement(sql, run, run("SELECT name FROM system.table_functions"))
        result = call(canonical)
        rows = tuple(tuple(normalize_server_value(v) for v in row) for row in result.result_rows)
        return QueryResult(tuple(result.column_names), rows)

    def _read_only_client(self, limits: QueryLimits) -> Any:
        if self._client is None:
            raise WarehouseError(f"ClickHouse warehouse {self.settings.display()} is closed")
        if self._reader is not None and self._reader_limits != limits:
            old, self._reader = self._reader, None
            old.close()
        if self._reader is None:
            try:
                # every request of this client carries the database, the limits and, last, readonly = 1
                settings = {**limits.settings(), "readonly": 1}
                self._reader = self._connect(database=self._database, settings=settings)
                self._reader_limits = limits
            except _clickhouse_error() as exc:
                raise WarehouseError(f"cannot use ClickHouse at {self.settings.display()}: {exc}") from exc
        return self._reader

    def close(self) -> None:
        reader, self._reader = self._reader, None
        if reader is not None:
            reader.close()
        client, self._client = self._client, None
        if client is not None:
            client.close()


def _clickhouse_error() -> type[Exception]:
    from clickhouse_connect.driver.exceptions import ClickHouseError

    error: type[Exception] = ClickHouseError
    return error
