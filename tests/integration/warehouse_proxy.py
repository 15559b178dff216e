"""The real warehouse behind a test's fault: a subclass overrides the one call it breaks (an insert that
crashes, pauses or fails) and passes everything else through."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Self

from consumers.clickhouse import QueryResult, Warehouse


class WarehouseProxy:
    def __init__(self, real: Warehouse) -> None:
        self.real = real

    @property
    def database(self) -> str:
        return self.real.database

    def execute(self, sql: str) -> None:
        self.real.execute(sql)

    def insert(
        self, table: str, columns: Sequence[str], rows: Sequence[Sequence[Any]], dedup_token: str | None
    ) -> None:
        self.real.insert(table, columns, rows, dedup_token)

    def query(self, sql: str) -> QueryResult:
        return self.real.query(sql)

    def read_only_query(self, sql: str) -> QueryResult:
        return self.real.read_only_query(sql)

    def close(self) -> None:
        self.real.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
