"""ClickHouse adapters behind one small `Warehouse` contract: chDB in-process (default) or a server."""

from consumers.clickhouse._values import string_literal as sql_literal
from consumers.clickhouse.chdb_warehouse import DEFAULT_DATABASE, ChdbWarehouse, bound_chdb_path
from consumers.clickhouse.contract import (
    QueryResult,
    ReadOnlyError,
    Warehouse,
    WarehouseError,
    qualified,
    split_sql_statements,
)
from consumers.clickhouse.factory import open_warehouse, resolve_chdb_path
from consumers.clickhouse.server_warehouse import ServerSettings, ServerWarehouse, parse_server_url

__all__ = [
    "DEFAULT_DATABASE",
    "ChdbWarehouse",
    "QueryResult",
    "ReadOnlyError",
    "ServerSettings",
    "ServerWarehouse",
    "Warehouse",
    "WarehouseError",
    "bound_chdb_path",
    "open_warehouse",
    "parse_server_url",
    "qualified",
    "resolve_chdb_path",
    "split_sql_statements",
    "sql_literal",
]
