"""Pick the warehouse adapter from one setting: chDB by default, a server for http(s)/clickhouse URLs."""

from __future__ import annotations

from pathlib import Path

from consumers.clickhouse.chdb_warehouse import DEFAULT_DATABASE, ChdbWarehouse
from consumers.clickhouse.contract import Warehouse, WarehouseError
from consumers.clickhouse.server_warehouse import ServerWarehouse

__all__ = ["open_warehouse", "resolve_chdb_path"]

_SERVER_SCHEMES = ("http://", "https://", "clickhouse://")


def resolve_chdb_path(url_or_path: str | None, data_dir: Path) -> Path | None:
    """The chDB directory a setting names, or None if it names a server.

    None, "" and "chdb" -> <data_dir>/clickhouse; "chdb://<path>" or a bare path -> that path
    (relative paths are taken under data_dir).
    """
    setting = (url_or_path or "").strip()
    if setting.lower().startswith(_SERVER_SCHEMES):
        return None
    if setting in ("", "chdb", "chdb://"):
        return data_dir / "clickhouse"
    if setting.lower().startswith("chdb://"):
        setting = setting[len("chdb://") :]
    elif "://" in setting:
        raise WarehouseError(f"unknown warehouse URL scheme in {setting.split('@')[-1]!r}: use chdb://, http(s)://")
    path = Path(setting)
    return path if path.is_absolute() else data_dir / path


def open_warehouse(url_or_path: str | None, data_dir: Path, database: str = DEFAULT_DATABASE) -> Warehouse:
    """Open the warehouse a setting names (see `resolve_chdb_path`); servers take the URL's database."""
    path = resolve_chdb_path(url_or_path, data_dir)
    if path is None:
        assert url_or_path is not None
        return ServerWarehouse(url_or_path.strip())
    return ChdbWarehouse(path, database)
